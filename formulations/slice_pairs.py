"""One pair per op class, chosen on a slice and judged on the whole decoder: a descent.

At batch 64 the plans can lose in their pair choice (Gemma2-27B b64 KV2048: 17.5 us a steady
layer; BENCHMARKS.md, "Pairs forced per op class"): Elk-Full picks each op's pair as it goes,
and `polish` changes pairs only inside its windows, a layer or two at a time, where a pair
that pays in every layer need not pay in one. A decoder's layers repeat, so each *class* of
ops (one offset in the repeating period) can run one pair in every layer. The descent, on a
slice of a few layers (formulations.lns_tiling):
- for each class in turn, for each of its pairs (undominated in the numbers the bounds use:
  times, demands, spaces; `elk_opt.bounds.fluid_sram.spaced_costs`): narrow every op of the
  class on the slice to that pair, plan the slice with Elk-Dyn (a fifteenth of Elk-Full's
  time on a 91-op Llama2-13B b64 slice, and tiling as well: 16,511,603 ns against
  16,510,874), tile the plan onto the whole instance (`best_tiling`) and time it exactly;
- keep the pair when the tiled makespan falls (first improvement), and sweep the classes
  again until a sweep keeps nothing or the deadline passes;
- last, Elk-Full at the kept pairs; the faster of the two tilings is returned.
Given a whole plan (`start_pairs`: the pair each class runs in its middle period, or the
undominated pair no worse in any number), the descent starts from those pairs instead of none,
and Elk-Full plans the slice at them first: the start at Elk-Full is often the best plan of
the run. Four-layer slices, starting from
`elk-full-lp`'s whole plan (one run each; BENCHMARKS.md, "The descent from the best plan's
pairs"): Llama2-13B b64 KV2048 10,491,413 ns (that start; the descent from no pairs ended at
10,635,108), OPT-30B b64 KV2048 18,190,759 (the descent from it; from no pairs 18,529,804,
and `elk-full-lp` itself 18,253,533), OPT-30B b32 KV4096 15,509,567 (the start; the whole
`elk-full-lp` plan 15,524,424), Llama2-13B b64 KV4096 16,002,474 (16,017,308), Gemma2-27B b64
KV2048 13,206,098 (the same).
Measured (BENCHMARKS.md, "One pair per op class"): inside `certify` (600 s) on Llama2-13B
b64 KV4096 the descent took the best start from 16,510,874 to 16,137,935 ns in 40 s, and
`certify` ended at 15,994,320 ns (3.28% above its bound) where without it it ended at
16,193,323 (4.56%). On three other batch-64 rows the certificates ended within `polish`'s
run-to-run spread, and at batch 32 the descent kept nothing. Elk-Dyn's verdicts are not
Elk-Full's: on Llama2-13B b64 KV2048's four-layer slice the descent ends 0.25% above Elk-Full's
own tiling (the caller keeps the faster plan).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass

from elk_opt.bounds.cuts import pair_uses, with_pairs_costing
from elk_opt.bounds.fluid_sram import SpacedCost, cost_numbers, spaced_cost, spaced_costs
from elk_opt.evaluate import Schedule, evaluate_plan
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions
from formulations.lns_region import move_key
from formulations.lns_tiling import Layers, best_tiling, slice_count

Classes = dict[tuple[int, int], list[int]]  # (layer in the period, offset): slice ops
Solver = Callable[[Instance, str, SolveOptions], Plan]
TRIAL = "elk-dyn"  # the heuristic that plans each narrowed slice
FINAL = "elk-full"  # the one that plans the slice at the pairs kept


@dataclass(frozen=True)
class Descent:
    """The fastest tiling found: the slice's plan, the whole plan and its schedule (None if
    no tiling obeyed R5); the pair per class that plan was planned at, and what the descent
    did."""

    best: tuple[Plan, Plan, Schedule] | None
    forced: dict[tuple[int, int], SpacedCost]
    trials: int
    sweeps: int
    complete: bool  # False: the deadline ended it before a sweep kept nothing


def op_classes(layers: Layers, count: int) -> Classes:
    """The slice's decoder ops by class: same place in the repeating period, every layer."""
    classes: Classes = {}
    for layer in range(count):
        first, stop = layers.runs[layer]
        for offset in range(stop - first):
            classes.setdefault((layer % layers.period, offset), []).append(first + offset)
    return classes


def start_pairs(plan: Plan, layers: Layers, costs: list[list[SpacedCost]],
             classes: Classes) -> dict[tuple[int, int], SpacedCost]:
    """Per class, the pair `plan` (of the whole instance `layers` come from) runs in its
    middle period, as one of the slice's undominated costs (`costs`, `spaced_costs` of the
    slice): that pair's, or else the first no worse in every number (narrowing to it can only
    help the plan)."""
    middle = len(layers.runs) // 2
    middle -= middle % layers.period
    start: dict[tuple[int, int], SpacedCost] = {}
    for (phase, offset), members in classes.items():
        j = layers.runs[middle + phase][0] + offset
        op, choice = plan.instance.ops[j], plan.choice[j]
        own = next(spaced_cost(*u) for u in pair_uses(op, plan.instance.chip)
                   if (u[0].id, u[1].id) == (choice.preload, choice.exec))
        kept = [c for c in costs[members[0]] if all(
            a <= b for a, b in zip(cost_numbers(c), cost_numbers(own), strict=True))]
        if kept:
            start[phase, offset] = own if own in kept else kept[0]
    return start


def narrowed(sliced: Instance, classes: Classes,
             forced: dict[tuple[int, int], SpacedCost]) -> Instance:
    """`sliced` with every op of a forced class cut to the pairs of its forced cost."""
    ops = list(sliced.ops)
    for key, cost in forced.items():
        for i in classes[key]:
            ops[i] = with_pairs_costing(ops[i], sliced.chip, cost, spaced_cost)
    return dataclasses.replace(sliced, ops=tuple(ops))


def descend(instance: Instance, layers: Layers, sliced: Instance, options: SolveOptions,
            solve: Solver, deadline: float | None = None, start: Plan | None = None) -> Descent:
    """The descent of the module docstring on `sliced` (a slice of `instance`), stopped at
    `deadline` (a time.perf_counter() reading; None: none) between trials; from the pairs
    of `start`, a plan of `instance`, if given."""
    classes = op_classes(layers, slice_count(instance, layers, sliced))
    costs = spaced_costs(sliced)
    trials = 0

    def left() -> float | None:
        return None if deadline is None else max(0.0, deadline - time.perf_counter())

    def tiled(forced: dict[tuple[int, int], SpacedCost],
              method: str) -> tuple[Plan, Plan, Schedule] | None:
        nonlocal trials
        trials += 1
        # every pair kept obeys R5 on its own, so the narrowed slice has plans
        plan = solve(narrowed(sliced, classes, forced), method,
                     dataclasses.replace(options, time_limit_s=left()))
        # the same plan on the slice with every pair open: what it claims of the narrowed
        # slice's optimum (a bound, or meeting it) does not hold there
        assert plan.claims is not None
        plan = dataclasses.replace(plan, instance=sliced, claims=dataclasses.replace(
            plan.claims, status="heuristic", lower_bound_ns=None))
        got = best_tiling(instance, layers, plan, evaluate_plan(plan))
        return None if got is None else (plan, *got)

    def faster(a: tuple[Plan, Plan, Schedule] | None,
               b: tuple[Plan, Plan, Schedule] | None) -> bool:
        return a is not None and (b is None or move_key(a[2]) < move_key(b[2]))

    # `current`, Elk-Dyn's tiling at the pairs kept, is what a trial must beat (one judge
    # throughout); `best`, the fastest tiling of any, is what the descent returns, with the
    # pairs it was planned at
    forced = {} if start is None else start_pairs(start, layers, costs, classes)
    current = best = tiled(forced, TRIAL)
    best_pairs = first = dict(forced)

    def offer(got: tuple[Plan, Plan, Schedule] | None,
              pairs: dict[tuple[int, int], SpacedCost]) -> None:
        nonlocal best, best_pairs
        if faster(got, best):
            best, best_pairs = got, pairs

    if forced and left() != 0.0:
        offer(tiled(forced, FINAL), forced)
    sweeps, complete = 0, False
    while left() != 0.0:
        sweeps += 1
        kept = False
        for key, members in sorted(classes.items()):
            for cost in costs[members[0]]:
                if left() == 0.0:
                    break
                if forced.get(key) == cost or len(costs[members[0]]) == 1:
                    continue
                trial = {**forced, key: cost}
                got = tiled(trial, TRIAL)
                if faster(got, current):
                    current, forced, kept = got, trial, True
                    offer(got, trial)
        if not kept:
            complete = left() != 0.0
            break
    if left() != 0.0 and (start is None or forced != first):
        offer(tiled(forced, FINAL), forced)
    return Descent(best, best_pairs, trials, sweeps, complete)
