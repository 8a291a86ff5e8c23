"""What `cpsat` builds before it searches: the model, hinted, and under 5b what it knows already.

Under 5b that is the section-5 model solved first (`Section5`: its bound holds under 5b, since
sharing only slows, and its plan is a 5b start), the floor (the section-5 bound, the fluid
floor, or one given), and the 5b model bounded above by the better start's makespan; the
starts re-timed with their decisions held (`retime_starts`) when the probes find no plan. A
deadline that passes after the section-5 solve raises `CutShort` with what it found.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from ortools.sat.python import cp_model

from elk_opt.errors import UsageError
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions, make_plan
from formulations.common import Restrictions, ceil_integer, decode, remaining
from formulations.cpsat_model import CpsatModel, add_hint, build, read_times, solver_for
from formulations.cpsat_run import solve as run_cpsat
from formulations.cpsat_starts import as_is, retimed_start, usable_start
from formulations.deadline import NO_DEADLINE, Deadline, OutOfTime
from formulations.fluid_floor import (
    fits_loads_run_whole,
    fluid_floor,
    wants_loads_run_whole,
)


@dataclass(frozen=True)
class Prepared:
    """The model the method hands CP-SAT, built as it builds it, and what it knows already."""

    cm: CpsatModel
    params: dict
    options: SolveOptions
    five: Section5 | None = None  # under 5b: the section-5 model's bound and plan
    floor: int | None = None  # under 5b: the best known lower bound (section 5's, fluid's)
    best: Plan | None = None  # under 5b: the better start (the hint, once `retime_starts` ran)
    warm: Plan | None = None  # under 5b: the warm start (re-timed by `retime_starts`)
    upper: int | None = None  # under 5b: the start plan's makespan, bounding the model
    retimed: bool = False  # under 5b: whether `best` is a start re-timed (`retimed_start`)

    @property
    def solver_parameters(self) -> str:
        """The SatParameters the method solves with (time limit aside), as text."""
        solver = solver_for(replace(self.options, verbose=False), None, self.cm.timing)
        return str(solver.parameters)


def prepare(instance: Instance, options: SolveOptions, started: float | None = None,
            deadline: Deadline = NO_DEADLINE, retime: bool = True) -> Prepared:
    """Build and hint the model the method solves (under 5b, after its section-5 solve and,
    with `retime`, the re-timing of the start plans the open search is hinted with);
    OutOfTime when `deadline` passes first."""
    started = time.perf_counter() if started is None else started
    restrict = Restrictions.from_params(options.params)
    if options.free_order and restrict != Restrictions():
        raise UsageError("window, fifo and max_pending restrict the instance's order: "
                         "use them with --exec-order instance")
    if options.timing == "shared-noc":
        ready = _prepare_shared(instance, options, restrict, started, deadline)
        return retime_starts(instance, restrict, ready, started, deadline) if retime else ready
    cm = build(instance, restrict, deadline=deadline, free=options.free_order,
               lower=options.floor_ns)
    add_hint(cm, instance, options.warm_plan)
    params = {**restriction_claims(restrict, options), "solver": "cp-sat",
              **({"given_floor_ns": options.floor_ns} if options.floor_ns is not None else {})}
    if options.warm_start and cm.hinted:
        params["warm_start"] = options.warm_start
    return Prepared(cm, params, options)


def restriction_claims(restrict: Restrictions, options: SolveOptions) -> dict:
    return restrict.claims("free" if options.free_order else "instance")


def infeasible(instance: Instance, restrict: Restrictions) -> UsageError:
    return UsageError(f"instance {instance.name!r} is infeasible"
                      + (f" under {restrict.claims()}" if restrict != Restrictions() else ""))


SECTION5_SHARE = 0.25  # of the time limit, for the section-5 bound and plan under 5b


@dataclass(frozen=True)
class Section5:
    """The section-5 model's result: a lower bound for 5b, and its plan as a 5b candidate."""

    bound: int | None
    plan: Plan | None


def _section5(instance: Instance, options: SolveOptions, restrict: Restrictions,
              started: float, deadline: Deadline) -> Section5:
    """Solve the section-5 model first: it is small and fast, its bound holds under 5b
    (sharing only slows) and its plan is a good 5b start."""
    cm = build(instance, restrict, deadline=deadline, free=options.free_order)
    add_hint(cm, instance, options.warm_plan)
    left = remaining(options.time_limit_s, started)
    solver = solver_for(replace(options, verbose=False),
                        None if left is None else SECTION5_SHARE * left)
    status = run_cpsat(solver, cm.model)
    if status == cp_model.INFEASIBLE:
        raise infeasible(instance, restrict)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        bound = solver.best_objective_bound if status == cp_model.UNKNOWN else None
        return Section5(None if bound is None else ceil_integer(bound), None)
    times = read_times(cm, solver)
    plan = make_plan(instance, times.choice, decode(instance, times), method="cpsat",
                     started=started, timing="shared-noc")
    return Section5(ceil_integer(solver.best_objective_bound), plan)


class CutShort(Exception):
    """Under 5b the deadline (or a SIGINT) came after the section-5 solve: what it found, or
    the warm start, is the answer."""

    def __init__(self, five: Section5):
        super().__init__()
        self.five = five


def _prepare_shared(instance: Instance, options: SolveOptions, restrict: Restrictions,
                    started: float, deadline: Deadline) -> Prepared:
    """The 5b model, bounded by the better of the warm start and the section-5 plan as they
    are, without restrictions (not yet hinted: `retime_starts`)."""
    five = _section5(instance, options, restrict, started, deadline)
    # under restrictions only the restricted re-timing tells whether a start obeys them all
    own, warm = (as_is(instance, p, started)
                 if restrict == Restrictions() and usable_start(instance, restrict, p, options)
                 else None for p in (five.plan, options.warm_plan))
    starts = [p for p in (own, warm) if p is not None]
    best = min(starts, key=lambda p: p.claims.makespan_ns) if starts else None
    # each start obeys the restrictions: it bounds the restricted optimum from above
    upper = best.claims.makespan_ns if best is not None else None
    try:
        # the fluid LP holds for the instance's order only; a given floor for the orders solved
        fluid = None if options.free_order or options.floor_ns is not None \
            else _fluid(instance, options, started)
        floor = max((b for b in (five.bound, fluid, options.floor_ns) if b is not None),
                    default=None)
        if floor is not None and upper is not None and floor > upper:
            if floor == options.floor_ns:
                raise UsageError(f"floor_ns {floor:,} is above the makespan of a plan cpsat "
                                 f"found, {upper:,} ns: it is not a lower bound")
            raise AssertionError(f"cpsat: lower bound {floor} above a plan's makespan {upper}")
        cm = build(instance, restrict, timing="shared-noc", upper=upper, lower=floor,
                   deadline=deadline, free=options.free_order)
    except OutOfTime:
        raise CutShort(five) from None
    params = {**restriction_claims(restrict, options), "solver": "cp-sat",
              "model_timing": "shared-noc", "section5_bound_ns": five.bound,
              "fluid_bound_ns": fluid,
              **({"given_floor_ns": options.floor_ns} if options.floor_ns is not None else {})}
    return Prepared(cm, params, options, five, floor, best, warm, upper)


def retime_starts(instance: Instance, restrict: Restrictions, ready: Prepared,
                   started: float, deadline: Deadline) -> Prepared:
    """The prepared 5b model hinted with the better start re-timed (`retimed_start`) and bounded
    by it; when the deadline passes first, hinted with the better start as it is."""
    five, options = ready.five, ready.options
    assert five is not None
    own = warm = None
    try:
        own = retimed_start(instance, restrict, five.plan, options, started, deadline)
        warm = retimed_start(instance, restrict, options.warm_plan, options, started, deadline)
    except OutOfTime:
        pass
    # a re-timing is never worse than its plan as it is; the first of equals is kept
    starts = [p for p in (own, warm, ready.best) if p is not None]
    best = min(starts, key=lambda p: p.claims.makespan_ns) if starts else None
    warm = warm if warm is not None else ready.warm
    cm, upper = ready.cm, ready.upper
    if best is not None and (upper is None or best.claims.makespan_ns < upper):
        # rebuilt, not just capped: the horizon bounds the model's times and port work, and
        # the search goes better with the tighter one (`cpsat_probe`)
        upper = best.claims.makespan_ns
        try:
            cm = build(instance, restrict, timing="shared-noc", upper=upper, lower=ready.floor,
                       deadline=deadline, free=options.free_order)
        except OutOfTime:
            cm.model.add(cm.makespan <= upper)
    add_hint(cm, instance, best)
    params = dict(ready.params)
    if options.warm_start and best is not None and best is warm:
        params["warm_start"] = options.warm_start
    return replace(ready, cm=cm, params=params, best=best, warm=warm, upper=upper,
                   retimed=best is not None and best is not ready.best)


def _fluid(instance: Instance, options: SolveOptions, started: float) -> int | None:
    """The fluid floor (`fluid_floor`) under 5b. As a floor on the makespan it lets the LP
    fix what cannot beat the incumbent, and the probes start there; on the calibration layer
    it is 193,181 ns against the section-5 bound's 191,398 (optimum 193,466).

    The fluid MIP joins the LP only where the MIP with loads run whole does not follow an
    unproven search (`ends_with_loads_run_whole`). Where it does, that MIP (the plain one with
    more rows) claims at least as much once it finishes, and the plain one before the probes
    only costs them its time and hands them a floor so close under the optimum that the probe
    there is hard to refute: the calibration layer is proven in 6.0-6.5 s instead of 7.3-7.6,
    10 of the small suite's exact cells end better and none worse, and a one-layer OPT-30B
    b64 KV4096 `bsp` slice, cold, seed 0, is proven in 33 s of 60 where it was not
    (BENCHMARKS.md, "The fluid MIP left to the end")."""
    return fluid_floor(instance, "shared-noc", lambda: remaining(options.time_limit_s, started),
                       milp=options.work_limit is None
                       and not ends_with_loads_run_whole(instance, options))


def ends_with_loads_run_whole(instance: Instance, options: SolveOptions) -> bool:
    """Whether the search ends, when it proves nothing, with the fluid MIP with loads run
    whole (`loads_run_whole`): on a decoder layer or less (`fits_loads_run_whole`), in the
    instance's order, and as `wants_loads_run_whole` says (BENCHMARKS.md, "Loads run
    whole")."""
    return (fits_loads_run_whole(instance) and not options.free_order
            and wants_loads_run_whole(options))
