"""`polish`: large-neighbourhood search that re-solves windows of a full-scale plan exactly.

Start from a plan (by default Elk-Full's), in the instance's execution order. Repeatedly take
a window of `width` consecutive ops, keep every other op's pair and issue slot and the HBM
order of their loads, and let CP-SAT choose the window's pairs, slots and load order (the
whole instance's timing and SRAM rows stay in the model, so the effect on everything
downstream is exact). Accept a window's solution when its replayed makespan is lower; slide
the window by `stride`; stop after a pass with no improvement or when time runs out. Under
5b the windows are solved with the 5b model (times and releases of every op stay free; the
decoded plan carries the releases that bind). The
result is a local optimum of this neighbourhood, not a proven optimum: its status is
`feasible` unless the Ideal bound (or, with `certify`, the LP relaxation bound, which holds
for the instance's execution order) meets it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ortools.sat.python import cp_model

from elk_opt.errors import UsageError
from elk_opt.evaluate import evaluate
from elk_opt.interrupts import stop_requested
from elk_opt.problem import Choice, Instance, Instr, Plan, Timing
from elk_opt.progress import say, track
from elk_opt.solution import SolveOptions, make_plan
from formulations.common import (
    Pair,
    Restrictions,
    claimed_bound,
    decode,
    feasible_pairs,
    hint_index,
    warm_decisions,
)
from formulations.cpsat_model import add_hint, build, read_times, solver_for
from formulations.cpsat_run import Interrupt
from formulations.deadline import NO_DEADLINE, Deadline, OutOfTime
from formulations.ilp import TooLarge, lp_bound
from formulations.replay import hinted_schedule, replay_shared

KNOBS = {"width": 24, "stride": 12, "window_time": 10.0, "certify": False}


@dataclass
class Incumbent:
    pick: list[int]  # pair index per op
    slot: list[int]
    load_start: list[int]
    plan: Plan


def _incumbent(instance: Instance, pairs: list[list[Pair]], plan: Plan,
               timing: Timing) -> Incumbent:
    warm = warm_decisions(instance, plan, timing)
    if warm is None:
        raise UsageError("polish needs a warm-start plan that executes in the instance's order")
    choice, slot, starts = warm.choice, warm.slot, list(warm.schedule.load_start)
    pick = [hint_index(instance, j, c, ps, timing) for j, (c, ps) in
            enumerate(zip(choice, pairs, strict=True))]
    return Incumbent(pick, slot, starts, plan)


def _knobs(params: dict) -> dict:
    unknown = set(params) - set(KNOBS)
    if unknown:
        raise UsageError(f"unknown polish parameter(s): {', '.join(sorted(unknown))}; "
                         f"known: {', '.join(KNOBS)}")
    out = {**KNOBS, **params}
    ok = (isinstance(out["width"], int) and isinstance(out["stride"], int)
          and isinstance(out["window_time"], int | float) and isinstance(out["certify"], bool))
    if not ok or out["width"] < 1 or out["stride"] < 1 or out["window_time"] <= 0:
        raise UsageError("polish needs integers width, stride >= 1, a number window_time > 0 "
                         f"and a boolean certify; got {out}")
    return out


def _window_model(instance: Instance, pairs: list[list[Pair]], inc: Incumbent, first: int,
                  stop: int, reach: int, timing: Timing, deadline: Deadline = NO_DEADLINE):
    """The model with every op outside [first, stop) pinned to the incumbent (its pair, its
    issue slot and its place in the HBM order; under 5b its times stay free); OutOfTime once
    `deadline` passes while it is built."""
    n = len(pairs)
    outside = [j for j in range(n) if not first <= j < stop]
    sub_pairs = [ps if first <= j < stop else [ps[inc.pick[j]]] for j, ps in enumerate(pairs)]
    fixed = {j: (0, inc.slot[j]) for j in outside}
    chain = sorted((j for j in outside if sub_pairs[j][0].load_ns > 0),
                   key=lambda j: (inc.load_start[j], j))
    cm = build(instance, Restrictions(window=reach), fixed=fixed, pairs=sub_pairs, chain=chain,
               timing=timing, deadline=deadline)
    add_hint(cm, instance, inc.plan)
    # Nothing the window decides can move what ends before its earliest possible issue slot:
    # freeze those executes, and the loads issued before it, at the incumbent's times (the
    # times the hint gives: a restriction the incumbent satisfies).
    freeze = first - reach
    if freeze > 0:
        if timing == "shared-noc":
            warm = warm_decisions(instance, inc.plan, timing)
            assert warm is not None
            times = hinted_schedule(instance, sub_pairs, inc.plan, warm)[1]
        else:
            choice = [Choice(exec=ps[0].exec, preload=ps[0].preload) if len(ps) == 1 else c
                      for ps, c in zip(sub_pairs, inc.plan.choice, strict=True)]
            times = evaluate(instance, choice, inc.plan.program, timing="separate-noc")
        for i in range(freeze):
            cm.model.add(cm.exec_end[i] == times.exec_end[i])
        for j in outside:
            if inc.slot[j] < freeze and not isinstance(cm.load_start[j], int):
                cm.model.add(cm.load_start[j] == times.load_start[j])
    return cm


def solve(instance: Instance, options: SolveOptions) -> Plan:
    started = time.perf_counter()
    knobs = _knobs(dict(options.params))
    if options.warm_plan is None:
        raise UsageError("polish needs a plan to start from: give --warm-start METHOD")
    if options.time_limit_s is not None and time.perf_counter() - started >= options.time_limit_s:
        return _unpolished(instance, options, knobs, started)  # its warm start used the limit
    timing = options.timing
    pairs = feasible_pairs(instance, timing)
    n = len(pairs)
    inc = _incumbent(instance, pairs, options.warm_plan, timing)
    best = evaluate(instance, inc.plan.choice, inc.plan.program, inc.plan.release_ns,
                    timing=options.timing)
    if best.peak_sram_bytes > instance.chip.sram_bytes:
        raise UsageError("polish: the warm-start plan breaks rule R5 (SRAM)")
    width, stride = min(knobs["width"], n), knobs["stride"]
    deadline = None if options.time_limit_s is None else started + options.time_limit_s
    start_makespan = best.makespan_ns
    passes = improved = windows = 0
    say(f"polish: start {start_makespan:,} ns, windows of {width} ops every {stride}",
        enabled=options.progress)
    with Interrupt() as interrupt:
        while True:
            passes += 1
            gained = False
            firsts = range(0, max(1, n - width + stride), stride)
            for first in track(firsts, f"polish pass {passes}", unit="window",
                               enabled=options.progress):
                if interrupt.seen:  # a SIGINT: keep what was accepted so far
                    break
                stop = min(n, first + width)
                left = None if deadline is None else deadline - time.perf_counter()
                if left is not None and left <= 0.05:
                    break
                reach = width + max(j - s for j, s in enumerate(inc.slot))
                try:
                    cm = _window_model(instance, pairs, inc, first, stop, reach, timing,
                                       Deadline(deadline))
                except OutOfTime:
                    break
                left = None if deadline is None else deadline - time.perf_counter()
                if left is not None and left <= 0.05:
                    break
                # with a work limit (per window), no wall limit of its own: repeatable
                own = None if options.work_limit is not None else knobs["window_time"]
                limit = own if left is None else left if own is None else min(own, left)
                solver = solver_for(options, limit, timing)
                status = interrupt.solve(solver, cm.model)
                windows += 1
                if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                    continue
                if round(solver.objective_value) >= best.makespan_ns:
                    continue
                times = read_times(cm, solver)
                program = decode(instance, times)
                release: dict[Instr, int] = {}
                if timing == "shared-noc":
                    release, schedule = replay_shared(instance, program, times)
                else:
                    schedule = evaluate(instance, times.choice, program, timing=timing)
                if schedule.makespan_ns >= best.makespan_ns:
                    continue
                inc = _accept(instance, pairs, times.choice, program, release, timing)
                best = schedule
                improved += 1
                gained = True
                say(f"  pass {passes} ops {first}-{stop - 1}: {best.makespan_ns:,} ns",
                    enabled=options.progress)
            if interrupt.seen or not gained or (deadline is not None
                                                and time.perf_counter() >= deadline - 0.05):
                break
    makespan = best.makespan_ns
    lp = None
    if knobs["certify"] and not interrupt.seen:
        say("polish: LP relaxation bound...", enabled=options.progress)
        try:
            lp = lp_bound(instance, None if deadline is None
                          else max(0.05, deadline - time.perf_counter()))
        except TooLarge:  # the Ideal bound stands alone
            lp = None
    lower = claimed_bound(instance, lp, makespan)
    params = {"exec_order": "instance", **knobs, "passes": passes, "windows_solved": windows,
              "windows_improved": improved, "start_makespan_ns": start_makespan,
              "warm_start": options.warm_start, "model_timing": timing,
              **({"interrupted": True} if interrupt.seen else {})}
    return make_plan(instance, inc.plan.choice, inc.plan.program, method="polish",
                     started=started, timing=options.timing,
                     status="optimal" if lower == makespan else "feasible",
                     lower_bound_ns=lower, params=params, release_ns=inc.plan.release_ns)


def _unpolished(instance: Instance, options: SolveOptions, knobs: dict, started: float) -> Plan:
    """The warm start as it is, when no time is left to polish it (nor to build the window
    models' pair tables, which take seconds at 20,000 ops)."""
    warm = options.warm_plan
    assert warm is not None
    timed = evaluate(instance, warm.choice, warm.program, warm.release_ns, timing=options.timing)
    if timed.peak_sram_bytes > instance.chip.sram_bytes:
        raise UsageError("polish: the warm-start plan breaks rule R5 (SRAM)")
    lower = claimed_bound(instance, None, timed.makespan_ns)
    params = {"exec_order": "instance", **knobs, "passes": 0, "windows_solved": 0,
              "windows_improved": 0, "start_makespan_ns": timed.makespan_ns,
              "warm_start": options.warm_start, "model_timing": options.timing,
              "stopped": "interrupted" if stop_requested() else "time limit"}
    return make_plan(instance, warm.choice, warm.program, method="polish", started=started,
                     timing=options.timing,
                     status="optimal" if lower == timed.makespan_ns else "feasible",
                     lower_bound_ns=lower, params=params, release_ns=warm.release_ns)


def _accept(instance: Instance, pairs: list[list[Pair]], choice: list[Choice],
            program: tuple[Instr, ...], release: dict[Instr, int], timing: Timing) -> Incumbent:
    plan = Plan(instance=instance, choice=tuple(choice), program=program, release_ns=release,
                timing=timing)
    return _incumbent(instance, pairs, plan, timing)
