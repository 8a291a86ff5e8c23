"""The inductive scheduler tried every way this project knows, then its loads moved in time.

`heuristics.inductive` schedules one preload order under one set of ladders. Here that runs
under every load weight (LOAD_WEIGHTS: decode steps may be HBM- or compute-bound) and, under
shared-noc, every way of pricing the rungs and capping the preloads' lead; the best schedule
has its loads held back where contention costs more than waiting (heuristics.delays), and
`issued_sooner` moves the chosen schedule's loads the other way where SRAM allows and that
pays (heuristics.advances).

Under shared-noc two more kinds of candidate are tried, each of which fixed cells where Static beat
Elk-Dyn on execution-bound decode models (elk-paper costs, bsp occupancy; BENCHMARKS.md).
The ladders are also tried unpriced: the climate prices a rung's port use against the
model's average partner, which can buy slower, port-light execute plans for the big matmuls
where contention would barely have stretched the fast ones (Llama2-70B b32 KV4096: +1.9 ms
of run time to cut 0.09 ms of stretch to 0.04). And each ladder set is also scheduled with a
cap on the preloads' lead, the preload region of Static's best execute budget
(heuristics.budgets): uncapped, the backward pass deepens the preload queue wherever its
cut's score allows, so more loads run beside NoC-heavy executes than Static's fixed region
lets run (Gemma2-27B b32 KV4096, the same plans: 1.07 ms of execute stretch uncapped, 0.39 ms
capped, 0.50 ms Static).
The cap bounds only the lead: plans are still chosen by the cost-aware allocation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from elk_opt.deadline import NO_DEADLINE, Deadline, OutOfTime
from elk_opt.problem import Choice, Instance, Instr, Timing
from heuristics.advances import advance_loads
from heuristics.budgets import best_budget
from heuristics.climate import Climate
from heuristics.delays import SWEEPS, Delayed, delay_loads, held_back
from heuristics.inductive import Decisions, schedule_refined
from heuristics.ladders import OpLadders, op_classes

LOAD_WEIGHTS = (1.0, 0.5)

Ladders = tuple[list[int], list[OpLadders]]


@dataclass(frozen=True)
class PortAware:
    """The port-aware parts used under shared-noc: all by default (off: for ablations)."""

    prices: bool = True  # ladders priced by the port climate are tried too
    score: bool = True  # the execute at the cut shares the port with its loads when scored
    hold: bool = True  # loads held back where contention costs more than waiting
    advance: bool = True  # loads issued sooner where SRAM allows and that pays
    region: bool = True  # Static's preload region is tried as a cap on the loads' lead


@dataclass(frozen=True)
class LadderSet:
    """The ladders of one way of pricing plans."""

    load_weight: float
    port_priced: bool  # rungs' costs include the climate's port prices
    ladders: Ladders


def ladder_sets(instance: Instance, timing: Timing, aware: PortAware = PortAware(),
                deadline: Deadline = NO_DEADLINE) -> list[LadderSet]:
    """Ladders under every load weight (rungs carry port demands under shared-noc); under
    shared-noc, with `aware.prices`, also priced by the port climate. Once `deadline` passes,
    the sets made so far (at least the first)."""
    shared = timing == "shared-noc"
    sets = [LadderSet(w, False, op_classes(instance, w, None, shared)) for w in LOAD_WEIGHTS
            if w == LOAD_WEIGHTS[0] or not deadline.passed()]
    if shared and aware.prices and not deadline.passed():
        climate = Climate.of(instance)
        sets += [LadderSet(w, True, op_classes(instance, w, climate, shared))
                 for w in LOAD_WEIGHTS if not deadline.passed()]
    return sets


def preload_regions(instance: Instance, timing: Timing, aware: PortAware = PortAware(),
                    deadline: Deadline = NO_DEADLINE) -> tuple[int | None, ...]:
    """Caps on the preloads' lead to try: none, and under shared-noc (with `aware.region`) the
    preload region of Static's best execute budget (of those tried by `deadline`)."""
    if timing != "shared-noc" or not aware.region or deadline.passed():
        return (None,)
    budget = best_budget(instance, timing, deadline)[1]
    return (None, instance.chip.sram_bytes - budget)


@dataclass(frozen=True)
class Scheduled:
    """A finished schedule: decisions, their makespan under the timing, and how they were made."""

    choice: tuple[Choice, ...]
    program: tuple[Instr, ...]
    makespan_ns: int
    load_weight: float
    port_priced: bool
    region: int | None  # the cap on pending preload bytes it was scheduled under, if any
    held_back: int  # loads the port-aware pass issued later than the inductive schedule did
    stopped: bool = False  # the deadline (or a SIGINT) ended the search: the best so far
    advanced: int = 0  # load moves `issued_sooner` kept (heuristics.advances)
    kept_order: Scheduled | None = None  # see schedule_best


def schedule_best(instance: Instance, order: Sequence[int], sets: Sequence[LadderSet],
                  timing: Timing, reorder: bool, sweeps: int = SWEEPS,
                  aware: PortAware = PortAware(),
                  regions: Sequence[int | None] = (None,),
                  deadline: Deadline = NO_DEADLINE) -> Scheduled | None:
    """The refined schedule under every ladder set and region, its loads held back where
    contention costs more than waiting (heuristics.delays, at most `sweeps` sweeps: the preload
    order kept, then, with `reorder`, loads also let others pass); the best makespan (first on
    ties). With `reorder`, the best schedule in the preload order given is kept beside it
    (`kept_order`: what the same call without `reorder` returns). Once `deadline` passes, the
    best so far, marked `stopped` (None if none was finished)."""
    best = None
    in_order: tuple[Decisions, Delayed, LadderSet, int | None] | None = None
    tries = [(region, lad) for region in regions for lad in sets]
    for k, (region, lad) in enumerate(tries):
        try:
            got = schedule_refined(instance, order, lad.ladders, timing, port_score=aware.score,
                                   region=region, deadline=deadline)
        except OutOfTime:
            break
        if got is None:
            continue
        decisions = got[0]
        delayed = delay_loads(instance, decisions.choice, decisions.program, timing, False,
                              sweeps if aware.hold else 0, deadline)
        if reorder:
            if in_order is None or delayed.makespan_ns < in_order[1].makespan_ns:
                in_order = (decisions, delayed, lad, region)
            delayed = delay_loads(instance, decisions.choice, delayed.program, timing, True,
                                  sweeps if aware.hold else 0, deadline)
        if best is None or delayed.makespan_ns < best.makespan_ns:
            best = _scheduled(decisions, delayed, lad, region)
        if k + 1 < len(tries) and deadline.passed():
            break
    if best is not None:
        best = dataclasses.replace(best, stopped=deadline.passed(),
                                   kept_order=None if in_order is None else _scheduled(*in_order))
    return best


def _scheduled(decisions: Decisions, delayed: Delayed, lad: LadderSet,
               region: int | None) -> Scheduled:
    return Scheduled(decisions.choice, delayed.program, delayed.makespan_ns, lad.load_weight,
                     lad.port_priced, region, held_back(decisions.program, delayed.program))


def issued_sooner(instance: Instance, found: Scheduled, timing: Timing, reorder: bool,
                  aware: PortAware = PortAware(), deadline: Deadline = NO_DEADLINE
                  ) -> Scheduled:
    """The chosen schedule with its loads issued sooner where SRAM allows and that pays
    (heuristics.advances; with `reorder` a load may pass the loads issued with it). Run once,
    on the schedule the search chose, so the result is never slower than that schedule."""
    if not aware.advance:
        return found
    sooner = advance_loads(instance, found.choice, found.program, timing, reorder, SWEEPS,
                           deadline)
    return dataclasses.replace(found, program=sooner.program, makespan_ns=sooner.makespan_ns,
                               advanced=sooner.advanced)


def preload_counts(program: Sequence[Instr]) -> list[int]:
    """Per execute in program order: the preloads issued before it whose execute follows."""
    pending = 0
    counts = []
    for kind, _j in program:
        if kind == "P":
            pending += 1
        else:
            pending -= 1
            counts.append(pending)
    return counts
