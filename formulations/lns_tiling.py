"""A plan for a whole decoder from a plan for a few of its layers: cut, solve, tile.

On a whole decoder the heuristics can lose in the first layers what a slice of a few layers
does not (Elk-Full on Llama2-13B b16 KV4096 stretches layers 1-3 by 50 us, queueing preloads
deeper than its four-layer slice does), and `polish`, whose windows keep the rest of the plan
fixed, does not recover it. A slice is small enough for the heuristics to do well and for
CP-SAT to search, and its middle layers reach the steady state every middle layer of the
whole model can repeat. So: cut the instance to its first K layers and its tail (the ops
after the last layer, their inputs moved onto the slice's last layer: `slice_instance`
builds exactly the instance `elk-opt instance MODEL --layers K` builds), solve the slice,
and repeat one of the slice's middle periods as often as the whole model needs (`tile`):
- the slice's layers before the repeated period, its head (ops before the first layer) and
  their decisions stay as they are;
- the repeated period's pairs and load anchors (lns_periodic: the execute each load is
  issued before, as an offset from its own layer, so a load issued a layer ahead keeps its
  lead) go onto every copy;
- the slice's layers after it and its tail move to the whole model's end, with loads anchored
  in a layer keeping their offset from the end;
- releases move by the repeated period's length in the slice's schedule (the plan is also
  tried without releases);
then `lns_periodic.fit_sram` issues loads later where R5 breaks. Layers repeat with a
period of one or more layers (`structure`: Gemma2's local and global attention alternate
when their costs differ). Every repeat choice and release choice is timed exactly on the
whole instance; the fastest that obeys R5 is returned, and the caller keeps it only if it
beats what it has. A slice's fastest plan need not tile best: it is also fastest at the
slice's own end, which the whole model does not have.

Measured (BENCHMARKS.md, "Slices tiled"): Elk-Full's plan of a three-layer slice of
Gemma2-27B b64 KV4096, tiled, is 2.5% faster than Elk-Full's plan of the whole model, and
`certify` from it ended 5.5% below its last run without; on Llama2-13B b16 KV4096 the tiled
plan of a four-layer slice is 0.0035% above the fluid bound, where 600 s of `certify` on the
whole model had ended 0.59% above it.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from elk_opt.evaluate import Schedule, evaluate, evaluate_plan
from elk_opt.problem import Choice, Instance, Instr, Plan
from elk_opt.solution import make_plan
from formulations.lns_periodic import Anchor, anchors, fit_sram, program_of
from formulations.lns_region import move_key
from formulations.lns_windows import layer_runs

MAX_PERIOD = 4  # layers in a repeating period, at most


@dataclass(frozen=True)
class Layers:
    """Where an instance's decoder layers are: consecutive runs [first, stop) of equal
    `layer`, the ops before them (head), after them (tail), and the period of their repeat."""

    runs: tuple[tuple[int, int], ...]
    period: int

    @property
    def head(self) -> int:
        return self.runs[0][0]

    @property
    def tail(self) -> int:  # the first op after the last layer
        return self.runs[-1][1]


def structure(instance: Instance) -> Layers | None:
    """The instance's layers if they are consecutive and repeat with a period of at most
    MAX_PERIOD layers (plans and warm-ups op by op), at least three periods of them."""
    runs = [r for r in layer_runs(instance) if instance.ops[r[0]].layer is not None]
    if not runs or any(a[1] != b[0] for a, b in zip(runs, runs[1:], strict=False)):
        return None
    keys = [instance.twin_key(a, b) for a, b in runs]
    for period in range(1, MAX_PERIOD + 1):
        if len(runs) >= 3 * period and all(keys[k] == keys[k + period]
                                           for k in range(len(runs) - period)):
            return Layers(tuple(runs), period)
    return None


def slice_layers(layers: Layers, wanted: int) -> int:
    """Layers in the slice: at least `wanted`, two periods and one layer more (a first
    period, a repeated one and what follows it), and a whole number of periods short of the
    model (so that repeats fill it)."""
    count = max(wanted, 2 * layers.period + 1)
    while (len(layers.runs) - count) % layers.period:
        count += 1
    return count


def slice_instance(instance: Instance, layers: Layers, count: int) -> Instance:
    """The head, the first `count` layers and the tail, as an instance of its own; the tail's
    inputs from the whole model's last layers come from the slice's last layers instead."""
    stop = layers.runs[count - 1][1]
    moved = layers.tail - stop  # how far the tail moves down
    keep = [*range(stop), *range(layers.tail, len(instance.ops))]
    index = {old: k for k, old in enumerate(keep)}
    ops = []
    for old in keep:
        op = instance.ops[old]
        inputs = [index[i] if i in index else index[i - moved] for i in op.inputs
                  if i in index or (old >= layers.tail and i - moved in index)]
        ops.append(dataclasses.replace(op, inputs=tuple(inputs)))
    return dataclasses.replace(instance, name=f"{instance.name}[{count} layers]", ops=tuple(ops))


def slice_count(instance: Instance, layers: Layers, sliced: Instance) -> int:
    """How many layers `sliced`, a slice of `instance` (slice_instance), kept."""
    stop = len(sliced.ops) - (len(instance.ops) - layers.tail)
    ends = [b for _a, b in layers.runs]
    if stop not in ends:
        raise ValueError(f"{sliced.name!r} is not a slice of {instance.name!r}")
    return ends.index(stop) + 1


def tile(instance: Instance, layers: Layers, plan: Plan, schedule: Schedule,
         repeated: int) -> list[Plan]:
    """Whole-instance plans from `plan`, a plan of a slice of this instance (timed as
    `schedule`), with the slice's layers [repeated, repeated + period) repeated: with the
    releases moved and without them."""
    p, runs = layers.period, layers.runs
    count = slice_count(instance, layers, plan.instance)
    extra = len(runs) - count
    if not 1 <= repeated <= count - p - 1 or extra % p:
        raise ValueError(f"cannot repeat layers {repeated}-{repeated + p - 1} of a "
                         f"{count}-layer slice {extra} layers on")
    n, m = len(instance.ops), len(plan.instance.ops)
    slice_tail = runs[count - 1][1]
    to_end = layers.tail - slice_tail
    length = schedule.exec_start[runs[repeated + p][0]] - schedule.exec_start[runs[repeated][0]]
    source = anchors(plan.program, m)
    choice: dict[int, Choice] = {}
    anchor: dict[int, Anchor] = {}
    release: dict[Instr, int] = {}

    def place(whole: int, op: int, moved_by: int, later: int) -> None:
        """Whole op `whole` takes slice op `op`'s pair, its anchor `moved_by` ops on (an
        anchor in the tail: onto the whole tail) and its releases `later` ns on."""
        choice[whole] = plan.choice[op]
        x, k = source[op]
        x = x + to_end if x >= slice_tail else x + moved_by
        anchor[whole] = (min(n, max(0, x)), k)
        for kind in ("P", "E"):
            if (kind, op) in plan.release_ns:
                release[kind, whole] = max(0, plan.release_ns[kind, op] + later)

    copies = extra // p
    for big in range(len(runs)):
        if big < repeated:
            small, turn = big, 0
        elif big < repeated + p * (copies + 1):
            small, turn = repeated + (big - repeated) % p, (big - repeated) // p
        else:
            small, turn = big - extra, copies
        first, small_first = runs[big][0], runs[small][0]
        for o in range(runs[big][1] - first):
            place(first + o, small_first + o, first - small_first, turn * length)
    for op in range(layers.head):
        place(op, op, 0, 0)
    for op in range(slice_tail, m):
        place(op + to_end, op, to_end, copies * length)
    choices = tuple(choice[j] for j in range(n))  # every op placed once: a miss is a KeyError
    program = program_of(fit_sram(instance, choices, anchor), n)
    return [Plan(instance=instance, choice=choices, program=program, release_ns=rel,
                 timing=plan.timing) for rel in (release, {})]


def best_tiling(instance: Instance, layers: Layers, plan: Plan,
                schedule: Schedule) -> tuple[Plan, Schedule] | None:
    """The fastest tiling of `plan` (a slice plan timed as `schedule`) that obeys R5, over
    every period of the slice that can be repeated and both release choices."""
    count = slice_count(instance, layers, plan.instance)
    best: tuple[Plan, Schedule] | None = None
    for repeated in range(1, count - layers.period):
        for cand in tile(instance, layers, plan, schedule, repeated):
            got = evaluate(instance, cand.choice, cand.program, cand.release_ns,
                           timing=cand.timing)
            if got.peak_sram_bytes <= instance.chip.sram_bytes and (
                    best is None or move_key(got) < move_key(best[1])):
                best = (cand, got)
    return best


class NotASlice(ValueError):
    """A plan that cannot be tiled onto an instance; the message says why, in one line."""


def tiled_plan(instance: Instance, tiled: Plan, sliced: Plan, count: int,
               started: float, **params: object) -> Plan:
    """`tiled` (from `best_tiling`) with claims: method `tiled`, and in its params the
    slice plan it came from (`sliced`, of `count` layers) and `params`."""
    params.update(slice_layers=count, slice_ops=len(sliced.instance.ops))
    if sliced.claims is not None:
        params.update(slice_method=sliced.claims.method,
                      slice_makespan_ns=sliced.claims.makespan_ns,
                      slice_status=sliced.claims.status)
    return make_plan(instance, tiled.choice, tiled.program, release_ns=tiled.release_ns,
                     method="tiled", started=started, timing=sliced.timing, params=params)


def tile_onto(instance: Instance, plan: Plan) -> Plan:
    """`best_tiling` for a slice plan made elsewhere (`elk-opt instance --layers K`, then any
    method), as a plan whose claims name it `tiled`: checks first that the plan's instance is
    exactly the slice `slice_instance` cuts from `instance`, op by op, and that it has a
    middle period to repeat."""
    started = time.perf_counter()
    layers = structure(instance)
    if layers is None:
        raise NotASlice("its decoder layers do not repeat (tiling needs at least three "
                        f"periods of at most {MAX_PERIOD} twin layers in a row)")
    try:
        count = slice_count(instance, layers, plan.instance)
    except ValueError:
        raise NotASlice(f"the plan's instance ({len(plan.instance.ops)} ops) does not end "
                        "where a layer of the whole model ends, followed by its tail") from None
    expected = slice_instance(instance, layers, count).ops
    for k, (got, want) in enumerate(zip(plan.instance.ops, expected, strict=True)):
        if got != want:
            raise NotASlice(f"op {k} ({got.name!r}) is not op {k} of the model's first "
                            f"{count} layers ({want.name!r})")
    if plan.instance.chip != instance.chip:
        raise NotASlice("the plan's chip is not the instance's")
    if count < layers.period + 2:
        raise NotASlice(f"a slice of {count} layers has no middle layer to repeat: slice at "
                        f"least {layers.period + 2} (`elk-opt instance --layers`)")
    best = best_tiling(instance, layers, plan, evaluate_plan(plan))
    if best is None:
        raise NotASlice("no tiling of the plan obeys R5")
    return tiled_plan(instance, best[0], plan, count, started)
