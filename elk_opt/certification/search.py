"""The budgeted search behind `elk-opt certify`: the best plan and the best lower bound that
one wall-clock budget buys.

The phases, in order, with their shares of the time: docs/search.md, "certify". The choices
behind them, each measured (BENCHMARKS.md):
- a certificate exists from the first second: the linear-time bounds and Basic run first, in
  this process; every other phase runs in a worker process (elk_opt.certification.worker)
  and is stopped at its deadline, a phase that overruns its own limit ended one second past
  the budget;
- on instances CP-SAT solves whole, the layer windows and the fluid MIP with loads run whole
  wait for the second bound round: CP-SAT's own search bounds the same model tighter (the
  calibration layer: 26 s of windows to 192,562 ns where CP-SAT proves 193,466 in 8), and on
  up to CPSAT_CONTIGUOUS_MAX_OPS ops CP-SAT runs that MIP itself after a search that proved
  nothing ("certify leaves the MIP to CP-SAT");
- a later bound round runs only for what an earlier one deferred, or with more time than any
  before it had: with less it raised nothing on the grid's certificates ("Later bound
  rounds");
- once the best plan lies within a ns per interval of a finished fluid-contiguous, a round
  solves fluid-whole-ns, and polish waits for it (`_whole_ns_due`; "Intervals of whole ns in
  certify");
- each solver starts only from a plan it has not started from before: from the same start
  with less time it would find nothing new;
- a given plan that executes in another order than the instance's gets only bounds that hold
  for every order: CP-SAT then solves over every order, and polish (instance order only) sits
  out.
The state is kept in a `Found` that the caller holds (elk_opt.certification.found), so an
interrupt leaves the best plan and bounds so far; the phases that work on slices of whole
models are elk_opt.certification.slices.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from elk_opt.bounds.rows import whole_ns_cap
from elk_opt.bounds.run_all import BUDGET_SPENT, lower_bounds
from elk_opt.bounds.whole_ns import within_reach
from elk_opt.certification.certificate import (
    bound_entry,
    cpsat_contiguous_entry,
    cpsat_whole_ns_entry,
    exec_order,
    solver_bound_entry,
)
from elk_opt.certification.found import (
    BOUNDS_REVISION,
    FULL,
    MARGIN_S,
    MIN_PHASE_S,
    Found,
    call,
    cpsat_takes_whole,
    graced,
    offer_bound,
    offer_plan,
    record,
    say_found,
    starting,
)
from elk_opt.certification.slices import elk_full_at_best_pairs, pairs_from_best, slice_phase
from elk_opt.certification.worker import Task, TimedOut, Worker
from elk_opt.errors import UsageError
from elk_opt.io import plan_from_dict
from elk_opt.methods import solve
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions, make_plan

HEURISTICS = ("static", "lhs", "elk-dyn", "elk-full", "elk-full-lp")  # after Basic, cheapest
HEURISTIC_SHARE = 0.5  # of the budget, at most, for the heuristics
ELK_FULL_SHARE = 0.3  # of the budget, kept for the FULL heuristics within the heuristics' share
BOUND_SHARE = 0.4  # of what is left, for a round's solver-backed bounds
# the first round's: the fluid LP it starts with is the bound that matters on whole models
# (gaps of a few % against 15% for the linear-time ones), and under load it needs about
# 12 s on Llama2-70B; polish, which the round leaves less, gains hundredths of a % there
FIRST_BOUND_SHARE = 0.6
CPSAT_SHARE = 0.5  # of what is left after the bounds, for CP-SAT's own limit
POLISH_SHARE = 0.8  # of what is left then, for polish's own limit (it may overrun: see below)
# the bounds a finished solve gives again unchanged, and the limit of run_all.lower_bounds
# that leaves each out of a later round (not the fluid LP's: fluid-layers runs under it)
SOLVED_ONCE = {"fluid-sram": "fluid_sram_max_ops", "fluid-milp": "fluid_milp_max_ops",
               "fluid-contiguous": "fluid_contiguous_max_ops", "lp": "lp_max_ops",
               "fluid-split": "fluid_split_max_ops"}
SOLVED_SINCE = 6  # the revision since which the SOLVED_ONCE bounds come out the same
# up to here CP-SAT runs the MIP with loads run whole itself (module docstring, phase 3): the
# zoo's decoder layers (19-27 ops), whose MIP takes 2-23 s; not the calibration layer (48 ops),
# where CP-SAT's phase took 10.2-10.6 s instead of 5.7-6.0 with half its time kept back for it
CPSAT_CONTIGUOUS_MAX_OPS = 32


def search(instance: Instance, found: Found, *, progress: bool = False,
           worker: Worker | None = None) -> Found:
    """Fill `found` within its time limit (see the module docstring); returns it. `worker`: a
    running worker to use (default: one of its own, ended on return)."""
    if worker is None:
        with Worker() as own:
            return search(instance, found, progress=progress, worker=own)
    options = SolveOptions(timing=found.timing, threads=found.threads)
    worker.start()  # its imports overlap the cheap phase
    if found.given is not None:  # a start for CP-SAT and polish, if in the instance's order
        given = found.given
        offer_plan(found, make_plan(
            instance, given.choice, given.program, release_ns=given.release_ns,
            method=given.claims.method if given.claims else "given", started=found.started,
            timing=found.timing))
    _cheap(instance, found, options)
    say_found(found, "linear-time bounds and Basic", progress)
    if not found.closed():
        _heuristics(instance, found, options, worker, progress)
    rounds = found.bound_rounds
    while not found.closed() and found.left() >= MIN_PHASE_S:
        rounds += 1
        ran = len(found.phases)
        gained = _bound_round(instance, found, worker, rounds, progress)
        gained = _plan_round(instance, found, options, worker, progress) or gained
        if len(found.phases) == ran or not (gained or _bounds_could_grow(found)
                                            or found.deferred):
            found.stopped = "time limit" if found.cut else "nothing left to try"
            break
    if found.stopped == "running":
        found.stopped = "gap closed" if found.closed() else "time limit"
    return found


def _cheap(instance: Instance, found: Found, options: SolveOptions) -> None:
    started = time.perf_counter()
    plan = solve(instance, "basic", options)
    offer_plan(found, plan)
    report = lower_bounds(instance, timing=found.timing, threads=found.threads, time_budget_s=0,
                          exec_order="free" if found.free_order else "instance")
    for row in report["bounds"]:
        if row["status"] != "skipped":
            offer_bound(found, bound_entry(row))
    record(found, "linear-time bounds, basic", started,
           f"basic {plan.claims.makespan_ns:,} ns, bound {found.lower():,} ns")


def _heuristic_limits(found: Found, method: str) -> tuple[float, float, float]:
    """`method`'s own time limit, when it ends, and the deadline past which its process is
    ended (time.perf_counter() readings). The heuristics before Elk-Full end by
    HEURISTIC_SHARE - ELK_FULL_SHARE of the budget, so that the two Elk-Fulls (FULL), the
    best of them, keep ELK_FULL_SHARE of it (less a grace the others overran by). Each runs
    under its limit, so one cut short hands back its best plan so far, and is ended only
    HEURISTIC_GRACE of the budget past it (a pass between two checks of its deadline may
    overrun it)."""
    share = HEURISTIC_SHARE if method in FULL else HEURISTIC_SHARE - ELK_FULL_SHARE
    ends = found.started + share * found.time_limit_s - MARGIN_S
    return ends - time.perf_counter(), ends, graced(found, ends)


def _heuristics(instance: Instance, found: Found, options: SolveOptions, worker: Worker,
                progress: bool) -> None:
    for method in HEURISTICS:
        if method in found.heuristics_done:
            continue
        started = time.perf_counter()
        limit, ends, deadline = _heuristic_limits(found, method)
        if limit < MIN_PHASE_S:
            record(found, method, started, "not started: the heuristics' share was spent")
            found.cut = True
            continue
        try:
            task = Task("solve", instance, {"method": method, "ends": ends,
                                            "options": replace(options, time_limit_s=limit)})
            starting(found, f"{method}, up to {limit:.0f} s", progress)
            plan = call(found, worker, task, deadline)
        except TimedOut:
            record(found, method, started, "ended: it overran its limit")
            found.cut = True
            continue
        kept = offer_plan(found, plan)
        found.heuristics_done.add(method)
        stopped = plan.claims.params.get("stopped")
        found.cut = found.cut or stopped is not None
        record(found, method, started, f"{plan.claims.makespan_ns:,} ns"
                                        + (f" (stopped: {stopped})" if stopped else "")
                                        + (" (best so far)" if kept else ""))
        say_found(found, method, progress)
        if found.closed():
            return


def _bounds_could_grow(found: Found) -> bool:
    """Whether a solver-backed bound ran out of time or budget (more time could raise it)."""
    return any(b["status"] == "time-limit" or b["note"] == BUDGET_SPENT
               for b in found.bounds.values())


def _whole_ns_in_reach(instance: Instance, found: Found) -> bool:
    """Whether the fastest plan lies within a ns per interval of a finished fluid-contiguous
    that fluid-whole-ns has not followed to its end or its cap (`run_all` solves it after
    that MIP, its time capped by the MIP's). On a Llama2-7B b64 KV4096 slice CP-SAT's plan,
    365,203 ns, came within reach after the MIP had run, and only fluid-whole-ns proves it
    (BENCHMARKS.md, "Intervals of whole ns in certify")."""
    contiguous: dict[str, Any] = found.bounds.get("fluid-contiguous", {})
    if (contiguous.get("status") != "complete" or contiguous.get("ns") is None
            or not found.has_plan()
            or not within_reach(len(instance.ops), found.lowest_makespan(), contiguous["ns"])):
        return False
    whole = found.bounds.get("fluid-whole-ns")
    return whole is None or (whole["status"] != "complete"
                             and whole["wall_s"] < whole_ns_cap(contiguous["wall_s"]))


def _whole_ns_due(instance: Instance, found: Found) -> bool:
    """Within reach (`_whole_ns_in_reach`) and not tried yet: worth a bound round of its own,
    which `polish` waits for."""
    return _whole_ns_in_reach(instance, found) and "fluid-whole-ns" not in found.bounds


def defers(instance: Instance, round_: int) -> bool:
    """Whether bound round `round_` leaves the layer windows and the contiguous MIP to the
    next (module docstring, phase 3)."""
    return round_ == 1 and cpsat_takes_whole(instance)


def _bound_round(instance: Instance, found: Found, worker: Worker, round_: int,
                 progress: bool) -> bool:
    """A round of the solver-backed bounds. After the first, only for what an earlier round
    deferred, or for a bound that ran out of time when this round has more time than any
    round before it. On the grid's 48 certificates the 70 rounds after the first (twice the
    time per window, less in all) took 917 s and raised nothing: time `polish` can use, or
    the user gets back (BENCHMARKS.md, "Later bound rounds")."""
    # fluid-whole-ns due gets a round of its own if need be, with the first round's share: on
    # a Llama2-7B b64 KV4096 slice it takes 10 s of the 11 that 40% of what was left gave,
    # and beside another run it did not finish in them
    due = _whole_ns_due(instance, found)
    budget = (FIRST_BOUND_SHARE if round_ == 1 or due else BOUND_SHARE) * found.left()
    if (round_ > 1 and not found.deferred and found.bounds_revision == BOUNDS_REVISION
            and (not _bounds_could_grow(found) or budget <= found.bound_budget) and not due):
        return False
    target = found.given if found.given is not None else found.best
    if target is not None and exec_order(target) != "instance":
        return False  # the solver-backed bounds hold for the instance's order only
    if budget < MIN_PHASE_S:
        found.cut = True
        return False
    found.bound_budget = max(found.bound_budget, budget)
    started = time.perf_counter()
    plan_ns = found.lowest_makespan() if found.has_plan() else None
    args = {"timing": found.timing, "threads": found.threads, "time_budget_s": budget,
            "window_time_s": 2.0 * 2 ** (round_ - 1), "progress": progress, "replay": True,
            # the layer windows' fluid MIPs share what the round has left (rows._layers)
            "layers_mip_time_s": budget,
            # fluid-whole-ns where the fastest plan is within its reach of fluid-contiguous
            "whole_ns": plan_ns is not None, "plan_ns": plan_ns}
    for name, limit in SOLVED_ONCE.items():  # a later round: what finished gives the same,
        if (found.bounds_revision >= SOLVED_SINCE  # unless its code has changed since
                and found.bounds.get(name, {}).get("status") == "complete"):
            args[limit] = 0
    if args.get("fluid_contiguous_max_ops") == 0 and _whole_ns_in_reach(instance, found):
        contiguous = found.bounds["fluid-contiguous"]  # fluid-whole-ns follows it
        args["contiguous_done"] = (contiguous["ns"], contiguous["wall_s"])
    found.deferred = defers(instance, round_)
    if found.deferred:
        args["layers"] = 0
        args["fluid_contiguous_max_ops"] = 0
    try:
        starting(found, f"the solver-backed bounds, up to {budget:.0f} s", progress)
        report = call(found, worker, Task("bounds", instance, args), found.hard_deadline())
    except TimedOut:
        record(found, f"bounds (round {round_})", started, "stopped at the round's deadline")
        found.cut = True
        return False
    except UsageError as e:
        record(found, f"bounds (round {round_})", started, f"failed: {e}")
        return False
    found.bound_rounds = round_
    revised = found.bounds_revision != BOUNDS_REVISION
    found.bounds_revision = BOUNDS_REVISION
    gained = False
    for row in report["bounds"]:
        gained = offer_bound(found, bound_entry(row), revised) or gained
    for document in report.get("replayed", []):  # read from the fluid-contiguous MIP
        offer_plan(found, plan_from_dict(document))
    record(found, f"bounds (round {round_})", started,
           f"best {found.lower():,} ns" + (" (raised)" if gained else ""))
    say_found(found, f"bounds, round {round_}", progress)
    return gained


def _plan_round(instance: Instance, found: Found, options: SolveOptions, worker: Worker,
                progress: bool) -> bool:
    gained = slice_phase(instance, found, options, worker, progress)
    gained = pairs_from_best(instance, found, options, worker, progress) or gained
    gained = elk_full_at_best_pairs(instance, found, options, worker, progress) or gained
    methods = (["cpsat"] if cpsat_takes_whole(instance) else []) + ["polish"]
    for method in methods:
        left = found.left()
        share = CPSAT_SHARE if method == "cpsat" else POLISH_SHARE
        limit = share * left - MARGIN_S
        if found.closed() or found.best is None:
            break
        if found.started_from.get(method) is found.best:
            continue  # the same start with less time: nothing new to find
        if method == "polish" and exec_order(found.best) != "instance":
            continue  # polish re-solves windows of the instance's order only
        if method == "polish" and _whole_ns_due(instance, found):
            break  # the bound round first: fluid-whole-ns may prove the plan optimal
        if limit < MIN_PHASE_S:
            found.cut = True
            continue
        started = time.perf_counter()
        warm = found.best
        assert warm.claims is not None
        found.started_from[method] = warm
        # the best bound so far covers the certified plan's orders: the floor the solvers
        # would otherwise compute again (the fluid LP and MIP, up to a fifth of their time)
        floor = found.lower() if found.bounds else None
        task_options = replace(options, time_limit_s=limit, warm_start=warm.claims.method,
                               warm_plan=warm, floor_ns=floor)
        if method == "cpsat" and _leaves_contiguous_to_cpsat(instance, found):
            task_options = replace(task_options, loads_run_whole=True)
        if method == "cpsat" and found.free_order:  # its bound then holds for every order
            task_options = replace(task_options, exec_order="free")
        if method == "polish" and "cpsat" in found.started_from:  # CP-SAT had it whole
            task_options = replace(task_options, params={**task_options.params, "whole": False})
        try:
            task = Task("solve", instance, {"method": method, "options": task_options})
            starting(found, f"{method} from {warm.claims.method}'s plan, up to {limit:.0f} s",
                     progress)
            plan = call(found, worker, task, found.hard_deadline())
        except TimedOut:
            record(found, method, started, "ended at the deadline: it overran its limit")
            found.cut = True
            continue
        except UsageError as e:
            record(found, method, started, f"failed: {e}")
            continue
        kept = offer_plan(found, plan)
        raised = False
        if method == "cpsat" and plan.claims.lower_bound_ns is not None:
            raised = offer_bound(found, solver_bound_entry(
                plan, time.perf_counter() - started,
                {"method": "cpsat", "time_limit_s": round(limit, 3), "threads": found.threads,
                 "warm_start": warm.claims.method, "floor_ns": floor}))
        if method == "cpsat":  # the MIPs it solved after its search: no bound round again
            for entry in (cpsat_contiguous_entry(plan), cpsat_whole_ns_entry(plan)):
                if entry is not None:
                    raised = offer_bound(found, entry) or raised
        gained = gained or kept or raised
        record(found, method, started,
               f"{plan.claims.makespan_ns:,} ns ({plan.claims.status})"
               + (" (best so far)" if kept else "") + (", bound raised" if raised else "")
               + _moves(plan))
        say_found(found, method, progress)
    return gained


def _leaves_contiguous_to_cpsat(instance: Instance, found: Found) -> bool:
    """Whether CP-SAT runs the MIP with loads run whole itself (module docstring, phase 3):
    on small instances in the instance's order, until that MIP has run in a bound round."""
    ran = found.bounds.get("fluid-contiguous", {}).get("status", "skipped") != "skipped"
    return len(instance.ops) <= CPSAT_CONTIGUOUS_MAX_OPS and not found.free_order and not ran


POLISH_MOVES = (("windows_improved", "windows improved"), ("twins_applied", "twins applied"),
                ("layers_copied", "layer classes copied"),
                ("refused_copied", "refused windows copied"), ("executes_held", "executes held"),
                ("loads_advanced", "loads issued sooner"), ("whole_solved", "solved whole"),
                ("fluid_mip_plan", "plan read from the fluid MIP"))


def _moves(plan: Plan) -> str:
    """What a polish phase's moves did, for its phase record: the certificate's plan carries
    the counts of the last polish phase only, and a search runs several."""
    assert plan.claims is not None
    if plan.claims.method != "polish":
        return ""
    params = plan.claims.params
    done = [label if params[key] is True else f"{params[key]} {label}"
            for key, label in POLISH_MOVES if params.get(key)]
    return f"; {', '.join(done)}" if done else "; no move gained"
