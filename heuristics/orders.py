"""Candidate preload orders for Elk-Full: permutations of a layer's load groups.

A model repeats one layer; ops of identical layers (same plans, same place in the layer) are
interchangeable, so one permutation of the layer template is applied to every layer that
matches it. The template is cut into groups, each a run of ops ending at an HBM-heavy op (one
whose least load is at least a tenth of the layer's largest: weights and KV cache, not norm
scales), so a group's light ops travel with the load they precede; consecutive identical ops
(the chunks of one split op, or same-shaped projections) stay in one group. A candidate
moves every group at most `max_shift` places from its own position. While an order is built,
a prefix is dropped if it forces some execute to hold preloads that cannot fit SRAM even at
their smallest plans (those ops are issued before an op that executes earlier than them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from elk_opt.problem import Instance
from heuristics.ladders import OpLadders

HEAVY = 0.1  # an op is HBM-heavy if its least load is at least this share of the layer's largest


@dataclass(frozen=True)
class Template:
    width: int  # ops per layer
    starts: tuple[int, ...]  # first op index of each layer that matches the template
    groups: tuple[tuple[int, ...], ...]  # offsets in the layer, in execution order


def find_template(instance: Instance, of_op: list[int]) -> Template | None:
    """The most common layer (by op classes) among layers whose ops are contiguous."""
    spans: dict[int, list[int]] = {}
    for i, op in enumerate(instance.ops):
        if op.layer is not None:
            spans.setdefault(op.layer, []).append(i)
    layers = {lay: idx for lay, idx in spans.items() if idx[-1] - idx[0] + 1 == len(idx)}
    if not layers:
        return None
    shapes = Counter(tuple(of_op[i] for i in idx) for idx in layers.values())
    shape, _count = max(shapes.items(), key=lambda kv: (kv[1], len(kv[0])))
    starts = tuple(sorted(idx[0] for idx in layers.values()
                          if tuple(of_op[i] for i in idx) == shape))
    loads = [min(q.load_ns for q in instance.ops[starts[0] + k].preload_plans)
             for k in range(len(shape))]
    heavy = [load > 0 and load >= HEAVY * max(loads) for load in loads]
    groups: list[tuple[int, ...]] = []
    run: list[int] = []
    for k, is_heavy in enumerate(heavy):
        run.append(k)
        same_next = k + 1 < len(shape) and shape[k + 1] == shape[k]
        if is_heavy and not same_next:
            groups.append(tuple(run))
            run = []
    if run:
        groups.append(tuple(run))
    return Template(width=len(shape), starts=starts, groups=tuple(groups))


def layer_orders(template: Template, ladder_of: list[OpLadders], sram: int,
                 max_shift: int) -> Iterator[tuple[int, ...]]:
    """Preload orders of one layer (offsets), identity first, each group within `max_shift`.

    `ladder_of[k]` is the ladders of the op at offset k.
    """
    least_exec = [lad.execute.space[-1] for lad in ladder_of]
    least_pre = [c.least_preload for c in ladder_of]
    groups = template.groups
    g = len(groups)

    def fits(prefix: list[int]) -> bool:
        placed = set(prefix)
        missing = [k for k in range(template.width) if k not in placed]
        if not missing:
            return True
        for i in range(template.width):
            if i < missing[-1] and any(k <= i for k in missing):
                held = sum(least_pre[j] for j in placed if j > i)
                if least_exec[i] + held > sram:
                    return False
        return True

    def extend(used: tuple[int, ...], prefix: list[int]) -> Iterator[tuple[int, ...]]:
        slot = len(used)
        if slot == g:
            yield tuple(prefix)
            return
        for k in range(max(0, slot - max_shift), min(g, slot + max_shift + 1)):
            if k in used:
                continue
            if any(u not in used and u < slot - max_shift for u in range(g)):
                break  # a group left too far behind can never be placed
            nxt = prefix + list(groups[k])
            if fits(nxt):
                yield from extend((*used, k), nxt)

    yield from extend((), [])


def full_order(n: int, template: Template, layer: tuple[int, ...]) -> list[int]:
    """The preload order of the whole model: `layer` applied to every matching layer."""
    order = list(range(n))
    for start in template.starts:
        order[start:start + template.width] = [start + k for k in layer]
    return order
