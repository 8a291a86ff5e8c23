"""Per-op Pareto ladders: the plans a memory allocator steps down, largest and fastest first.

A preload ladder lists the preload plans compatible with one execute plan by decreasing space
and increasing cost, the cost being `load_weight` x load time + warm-up. The weight prices HBM
time against execute time: where the HBM is the bottleneck a plan that doubles a load to save a
warm-up is a bad trade, where compute is the bottleneck a good one; callers try several.
An execute ladder lists execute plans by decreasing space and increasing cost, the
cost being the execute time plus the cost of the best preload plan for it; its `run` is the
execute time plus that preload plan's warm-up. Dominated plans are dropped, so every step down
frees bytes and costs time. Identical ops (same plans) share one ladder.
"""

from __future__ import annotations

from dataclasses import dataclass

from elk_opt.problem import Instance, Op


@dataclass(frozen=True)
class Ladder:
    space: tuple[int, ...]  # strictly decreasing
    cost: tuple[float, ...]  # strictly increasing
    ids: tuple[int, ...]  # plan id of each rung
    load: tuple[int, ...]  # load_ns of the (best) preload plan of each rung
    warm: tuple[int, ...]  # warm-up of the (best) preload plan of each rung
    run: tuple[int, ...]  # execute ladders: time_ns + warm-up of each rung


def _pareto(items: list[tuple[int, float, int, int, int, int]]) -> Ladder:
    """Items (space, cost, id, load, warm, run) -> the ladder of non-dominated ones."""
    kept: list[tuple[int, float, int, int, int, int]] = []
    for item in sorted(items, key=lambda it: (it[1], it[0], it[2])):
        if not kept or item[0] < kept[-1][0]:
            kept.append(item)
    return Ladder(*(tuple(k[f] for k in kept) for f in (0, 1, 2, 3, 4, 5)))


@dataclass(frozen=True)
class OpLadders:
    """One op class: its execute ladder and, per execute plan id, its preload ladder."""

    execute: Ladder
    preload: dict[int, Ladder]


def _op_ladders(op: Op, load_weight: float) -> OpLadders:
    preload: dict[int, Ladder] = {}
    for p in op.exec_plans:
        items = [(q.space_bytes, load_weight * q.load_ns + t, q.id, q.load_ns, t, 0)
                 for q, pp, t in op.pairs() if pp.id == p.id]
        if items:
            preload[p.id] = _pareto(items)
    execute = _pareto([(p.space_bytes, p.time_ns + lad.cost[0], p.id, lad.load[0], lad.warm[0],
                        p.time_ns + lad.warm[0])
                       for p in op.exec_plans if (lad := preload.get(p.id)) is not None])
    return OpLadders(execute=execute, preload=preload)


def op_classes(instance: Instance, load_weight: float = 1.0
               ) -> tuple[list[int], list[OpLadders]]:
    """Class index of every op (ops with equal plans share one) and each class's ladders."""
    index: dict[tuple, int] = {}
    classes: list[OpLadders] = []
    of_op: list[int] = []
    for op in instance.ops:
        key = (op.exec_plans, op.preload_plans, op.warmup)
        if key not in index:
            index[key] = len(classes)
            classes.append(_op_ladders(op, load_weight))
        of_op.append(index[key])
    return of_op, classes
