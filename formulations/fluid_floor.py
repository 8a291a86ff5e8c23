"""The fluid floor: the best fluid bound an exact method or an LNS can afford before it starts.

The fluid LP (`elk_opt.bounds.fluid`) and, up to FLUID_MILP_MAX_OPS ops, the fluid MIP
(`elk_opt.bounds.fluid_milp`), the larger. Both hold for every plan in the instance's
execution order, with or without restrictions, so a method in that order may claim the floor,
start its search there (`cpsat`'s probes) or stop once a plan meets it (`polish`). On the
small gap suite's eight proven one-layer zoo slices (all hbm3e) the floor is the optimum
on six. HiGHS stops a MIP on the wall clock only, so a run that must repeat (under a work
limit) leaves the MIP out; the LP on these sizes finishes. The solvers are imported when
the floor is computed.

`loads_run_whole` gives the strongest bound on a decoder layer, the fluid MIP with loads
that run without a break (`elk_opt.bounds.contiguous`), and too slow to sit before a 20 s
search (2-23 s on the small gap suite's one-layer zoo slices, against 0.4-4 s for the plain
MIP): `cpsat` keeps part of its time back for it and runs it after its search, when the search
proved nothing (BENCHMARKS.md, "Loads run whole"). It also gives the plan the MIP's timeline
replays to (`formulations.fluid_replay`), which `cpsat` keeps when it beats the search's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from elk_opt.bounds.limits import FLUID_CONTIGUOUS_MAX_OPS, FLUID_MILP_MAX_OPS
from elk_opt.bounds.whole_ns import within_reach
from elk_opt.interrupts import stop_requested
from elk_opt.problem import Instance, Plan, Timing
from elk_opt.solution import SolveOptions

if TYPE_CHECKING:
    from elk_opt.bounds.fluid import FluidBound

T = TypeVar("T")

LP_SHARE = 0.1  # of the time left, for the fluid LP
MILP_SHARE = 0.2  # of the time left then, for the fluid MIP on small instances


def fluid_floor(instance: Instance, timing: Timing, left: Callable[[], float | None],
                milp: bool = True) -> int | None:
    """The floor; `left()` is the caller's time left (None: no limit); without `milp` the LP
    alone. None if neither bound was solved in its share, or a SIGINT asked the caller to
    stop with its best plan."""
    from elk_opt.bounds.fluid import fluid_bound
    from elk_opt.bounds.fluid_milp import fluid_milp_bound

    def share(fraction: float) -> float | None:
        rest = left()
        return None if rest is None else fraction * rest

    found: list[int | None] = []
    try:
        found.append(fluid_bound(instance, timing, share(LP_SHARE)).bound_ns)
        if milp and len(instance.ops) <= FLUID_MILP_MAX_OPS and not stop_requested():
            found.append(fluid_milp_bound(instance, timing, share(MILP_SHARE)).bound_ns)
    except KeyboardInterrupt:  # the bounds' way of saying a SIGINT stopped HiGHS
        if not stop_requested():
            raise
    return max((b for b in found if b is not None), default=None)


def wants_loads_run_whole(options: SolveOptions) -> bool:
    """Whether a search (`cpsat`, `polish`) runs `loads_run_whole` when it proves nothing:
    never under a work limit (HiGHS stops on the wall clock only, so the run would not
    repeat); else as `SolveOptions.loads_run_whole` asks, and when it does not ask, only
    without a floor given (a caller that gives one has bounds of its own)."""
    if options.work_limit is not None:
        return False
    if options.loads_run_whole is not None:
        return options.loads_run_whole
    return options.floor_ns is None


@dataclass(frozen=True)
class LoadsRunWhole:
    """The fluid MIP with loads run whole: its bound (None if not even its relaxation was
    solved), the plan its best solution's timeline gives (formulations.fluid_replay), whether
    HiGHS finished (not stopped by its limit: the bound is then the same whenever it is
    solved again) and its wall time."""

    bound_ns: int | None
    plan: Plan | None
    complete: bool
    wall_s: float


def fits_loads_run_whole(instance: Instance) -> bool:
    """Whether the instance is a decoder layer or less (at most FLUID_CONTIGUOUS_MAX_OPS ops,
    in at most one layer), where `loads_run_whole` pays for its time. On one layer the MIP
    takes 2-90 s and raises the plain MIP's bound by up to 0.31% (Gemma2-27B, elk-paper); on
    two layers it took 29 s to over 120 s for at most 15 ns, and stopped by its limit it fell
    below the plain MIP (BENCHMARKS.md, "Two layers leave the MIP with loads run whole out")."""
    layers = {op.layer for op in instance.ops if op.layer is not None}
    return len(instance.ops) <= FLUID_CONTIGUOUS_MAX_OPS and len(layers) <= 1


def loads_run_whole(instance: Instance, timing: Timing, time_limit_s: float | None,
                    method: str, started: float) -> LoadsRunWhole | None:
    """The fluid MIP with loads run whole (module docstring) where the instance
    `fits_loads_run_whole`, and the plan read from its solution; None elsewhere, or if a
    SIGINT asked the caller to stop with its best plan. Stopped by its time limit, its bound
    can be below the plain MIP's: the caller keeps the larger."""
    from elk_opt.bounds.fluid_milp import solve_fluid_milp
    from formulations.fluid_replay import replayed_plan

    if not fits_loads_run_whole(instance):
        return None
    solved = _unless_stopped(lambda: solve_fluid_milp(instance, timing, time_limit_s,
                                                      contiguous=True))
    if solved is None:
        return None
    plan = None
    if solved.model is not None and solved.solution is not None:
        plan = replayed_plan(instance, solved.model, solved.solution, timing, method, started)
    return LoadsRunWhole(solved.bound.bound_ns, plan, solved.bound.complete, solved.bound.wall_s)


WHOLE_NS_SHARE = 0.8  # of the time left, for the MIP with intervals of whole ns: the plan is
# within a ns per interval of its bound, where a search continued gains little
# with less than this times the time the MIP with loads run whole took, it does not start: it
# took 1.7-3.1 times as long on three of four one-layer slices, and started short it stops at
# its root (BENCHMARKS.md, "Intervals of whole ns")
WHOLE_NS_COST = 2.0


def whole_ns_after(instance: Instance, timing: Timing, makespan: int, found: LoadsRunWhole,
                   left: float | None) -> FluidBound | None:
    """After `loads_run_whole` (`cpsat`, `polish`): where HiGHS finished it and the plan
    (`makespan`) lies within a ns per interval of its bound, all that rounding each interval's
    end up can add, the MIP with intervals of whole ns (elk_opt.bounds.whole_ns) in
    WHOLE_NS_SHARE of `left` (None: no limit), if that is at least WHOLE_NS_COST times the
    first MIP's time; None where it does not run, or if a SIGINT asked the caller to stop."""
    if (not found.complete or found.bound_ns is None
            or not within_reach(len(instance.ops), makespan, found.bound_ns)):
        return None
    from elk_opt.bounds.fluid_milp import fluid_milp_bound

    limit = None if left is None else WHOLE_NS_SHARE * left
    if limit is not None and limit < WHOLE_NS_COST * found.wall_s:
        return None
    return _unless_stopped(lambda: fluid_milp_bound(instance, timing, limit, contiguous=True,
                                                    whole_ns=True))


def _unless_stopped(solve: Callable[[], T]) -> T | None:
    """`solve()`, or None if a SIGINT asked the caller to stop with its best plan, before it
    or while HiGHS ran (the bounds raise KeyboardInterrupt then, as in `fluid_floor`)."""
    if stop_requested():
        return None
    try:
        return solve()
    except KeyboardInterrupt:
        if not stop_requested():
            raise
        return None
