"""`polish` on an instance small enough to solve whole (at most WHOLE_MAX_OPS ops): `cpsat` in
a share of the time, and when that proves nothing, what `cpsat` does after its search (the
fluid MIP with loads run whole, its intervals of whole ns, annealing); and the fluid floor the
search stops at."""

from __future__ import annotations

import time
from dataclasses import replace

from elk_opt.interrupts import stop_requested
from elk_opt.problem import Instance, Timing
from elk_opt.progress import say
from elk_opt.solution import SolveOptions
from formulations.anneal import annealed_plan
from formulations.cpsat import solve as solve_cpsat
from formulations.cpsat_after import ANNEAL_SHARE
from formulations.fluid_floor import (
    LoadsRunWhole,
    fits_loads_run_whole,
    fluid_floor,
    loads_run_whole,
    wants_loads_run_whole,
    whole_ns_after,
)
from formulations.polish_search import Search

FLUID_MAX_OPS = 200  # the fluid floor as a stopping bound up to this size
WHOLE_MAX_OPS = 64  # up to this size the instance is first solved whole (`solve_whole`)
WHOLE_SHARE = 0.5  # of the time left, for that solve (a work limit is per window: all of it)
LOADS_SHARE = 0.6  # of the time left after it, for the fluid MIP with loads run whole
UNLIMITED_FLOOR_S = 10.0  # without a time limit, the floor's shares are of this


def polish_floor(instance: Instance, timing: Timing, deadline: float | None,
           milp: bool) -> int | None:
    """The fluid floor (`fluid_floor`) on instances up to FLUID_MAX_OPS ops; None above."""
    if len(instance.ops) > FLUID_MAX_OPS:
        return None
    return fluid_floor(instance, timing, lambda: UNLIMITED_FLOOR_S if deadline is None
                       else deadline - time.perf_counter(), milp=milp)


def whole_then_loads(instance: Instance, options: SolveOptions, whole: bool) -> bool:
    """Whether, under 5b, the instance is solved whole and the fluid MIP with loads run whole
    follows an unproven solve: then the floor is the fluid LP alone, as in `cpsat`, for the
    same reason (`cpsat_prepare._fluid`): that MIP claims what the plain one would, and the plain
    one before the solve costs its probes time and a floor hard to refute."""
    return (options.timing == "shared-noc" and whole
            and len(instance.ops) <= WHOLE_MAX_OPS and fits_loads_run_whole(instance)
            and wants_loads_run_whole(options))


def solve_whole(search: Search, options: SolveOptions, floor: int | None,
                 deadline: float | None, window_time: float) -> None:
    """A small instance is one window: solved whole by `cpsat` (its probes up from the floor,
    hinted with the incumbent) in WHOLE_SHARE of the time left (without a time limit, a
    window's own: `window_time`, or the work limit), its plan taken if faster and its bound
    kept (the model is exact for the instance's order). On one-layer slices it
    proves in seconds what the windows do not reach in the whole limit (BENCHMARKS.md,
    "Small instances solved whole")."""
    if deadline is not None:
        limit: float | None = WHOLE_SHARE * (deadline - time.perf_counter())
    else:
        limit = None if options.work_limit is not None else window_time
    whole = solve_cpsat(search.instance, replace(  # a work limit is per window: all of it
        options, time_limit_s=limit, exec_order="instance",
        warm_plan=search.inc.plan, floor_ns=floor, params={},
        loads_run_whole=False, progress=False))  # polish runs that MIP itself, after
    assert whole.claims is not None
    if search.adopt(whole):
        search.whole_solved = True
    if whole.claims.lower_bound_ns is not None:
        search.bound = max(search.bound or 0, whole.claims.lower_bound_ns)
    say(f"  solved whole: {whole.claims.makespan_ns:,} ns ({whole.claims.status}, bound "
        f"{search.bound or 0:,} ns)", enabled=options.progress)
    if whole.claims.status != "optimal":
        take_loads_run_whole(search, options, deadline, window_time)
        _anneal(search, options, deadline)


def _anneal(search: Search, options: SolveOptions, deadline: float | None) -> None:
    """After an unproven whole solve and that MIP, as `cpsat` does before its search runs
    again: the incumbent annealed (`formulations.anneal`) in `cpsat`'s ANNEAL_SHARE of the
    time left, taken if faster, the windows then starting from it. Only with a time limit and
    no work limit (annealing counts seconds)."""
    if deadline is None or options.work_limit is not None or stop_requested():
        return
    plan = annealed_plan(search.inc.plan, search.timing, search.bound or 0,
                         ANNEAL_SHARE * (deadline - time.perf_counter()), options.seed,
                         "polish", time.perf_counter())
    if plan is not None and search.adopt(plan):
        search.annealed = search.inc.schedule.makespan_ns
        say(f"  annealed: {search.annealed:,} ns", enabled=options.progress)


def take_loads_run_whole(search: Search, options: SolveOptions, deadline: float | None,
                     window_time: float) -> None:
    """After an unproven whole solve, as `cpsat` does: the fluid MIP with loads run whole
    (`fluid_floor.loads_run_whole`, on a decoder layer or less) in LOADS_SHARE of the time
    left (without a time limit, in a window's `window_time`), its bound kept and the plan read
    from its solution taken if faster; as `wants_loads_run_whole` says (BENCHMARKS.md, "Polish reads
    the fluid MIP too")."""
    if not wants_loads_run_whole(options):
        return
    limit = window_time if deadline is None else LOADS_SHARE * (deadline - time.perf_counter())
    found = loads_run_whole(search.instance, search.timing, limit, "polish",
                            time.perf_counter())
    if found is None:
        return
    search.contiguous = found.bound_ns
    if found.bound_ns is not None:
        search.bound = max(search.bound or 0, found.bound_ns)
    if found.plan is not None and search.adopt(found.plan):
        search.replayed = True
    say(f"  loads run whole: bound {found.bound_ns or 0:,} ns, plan "
        f"{search.inc.schedule.makespan_ns:,} ns", enabled=options.progress)
    _whole_ns(search, options, deadline, window_time, found)


def _whole_ns(search: Search, options: SolveOptions, deadline: float | None,
              window_time: float, found: LoadsRunWhole) -> None:
    """As `cpsat` does after that MIP: the MIP with intervals of whole ns where the plan lies
    close enough (`whole_ns_after`, in the time left; without a time limit, of `window_time`),
    its bound kept."""
    left = window_time if deadline is None else deadline - time.perf_counter()
    whole = whole_ns_after(search.instance, search.timing, search.inc.schedule.makespan_ns,
                           found, left)
    if whole is None or whole.bound_ns is None:
        return
    search.whole_ns = whole.bound_ns
    search.bound = max(search.bound or 0, whole.bound_ns)
    say(f"  intervals of whole ns: bound {whole.bound_ns:,} ns", enabled=options.progress)
