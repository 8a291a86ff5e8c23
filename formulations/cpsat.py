"""The `cpsat` method: the CP-SAT model of `cpsat_model` solved under the plan's timing.

Under section 5 the model is solved once. Under 5b the section-5 model is solved first (a
share of the time limit): its bound holds under 5b, since sharing only slows, and its plan is
a 5b start; so is the warm start. The 5b model is bounded above by the better start's own 5b
makespan, and makespan caps are probed up from the lower bound (`cpsat_probe`). Only when the
probes find no plan are the starts re-timed by the 5b model with their pairs, issue slots and
load order kept (`cpsat_starts`: a small problem, but seconds on a layer; the calibration
layer's proof took 1.3 s longer when it came first), and the open search is hinted with the
better one. The
plan carries the model's start times as release times, only those that bind; its replay is
checked against the model. On a decoder layer or less, half the time left after the floor
is kept back: when the search proves nothing, the fluid MIP with loads run whole
(`loads_run_whole`) may still raise the bound to the plan (`fluid_contiguous_ns`), and the
plan its timeline replays to (`fluid_replay`), re-timed with its pairs and load order held
(`fluid_retime`, in half the time the MIP leaves), replaces the search's when it is
faster. The rest goes to the search again (`cpsat_after`). There the floor before the
probes is the fluid LP alone: the plain fluid MIP cost the probes more than it gave
(`cpsat_prepare._fluid`). What is built before the search, the section-5 solve and the floor
included, is `cpsat_prepare`'s.
"""

from __future__ import annotations

import time
from dataclasses import replace

from ortools.sat.python import cp_model

from elk_opt.errors import UsageError
from elk_opt.evaluate import evaluate
from elk_opt.interrupts import stop_requested
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions, make_plan
from formulations.common import (
    Restrictions,
    ceil_integer,
    claimed_bound,
    decode,
    fallback,
    remaining,
)
from formulations.cpsat_after import after_mip, faster, retimed_replay
from formulations.cpsat_model import CpsatModel, build, read_times, solver_for
from formulations.cpsat_prepare import (
    CutShort,
    Prepared,
    ends_with_loads_run_whole,
    infeasible,
    prepare,
    restriction_claims,
    retime_starts,
)
from formulations.cpsat_probe import probe
from formulations.cpsat_run import solve as run_cpsat
from formulations.deadline import Deadline, OutOfTime
from formulations.fluid_floor import loads_run_whole
from formulations.model_map import VariableMap, pick_map
from formulations.replay import replay_shared


def variable_map(cm: CpsatModel) -> VariableMap:
    """Where a solution's pairs and times are, by proto variable index."""
    def index(v: cp_model.IntVar | int | None) -> int | None:
        return None if v is None or isinstance(v, int) else v.index

    n = len(cm.pairs)
    return VariableMap(
        pick=pick_map(cm.pairs, [[b.index for b in row] for row in cm.pick]),
        load_start=tuple(index(v) for v in cm.load_start),
        load_len=(None,) * n,
        load_end=tuple(index(cm.aux["end"].get(j)) for j in range(n)),
        exec_start=tuple(v.index for v in cm.exec_start),
        exec_end=tuple(v.index for v in cm.exec_end))


def solve(instance: Instance, options: SolveOptions) -> Plan:
    started = time.perf_counter()
    restrict = Restrictions.from_params(options.params)
    deadline = Deadline.after(options.time_limit_s, started)
    try:
        ready = prepare(instance, options, started, deadline, retime=False)
    except CutShort as cut:
        return _cut_short(instance, options, restrict, started, cut)
    except OutOfTime:
        return _not_built(instance, options, restrict, started)
    if options.timing == "shared-noc":
        return _solve_shared(instance, options, restrict, started, ready)
    cm = ready.cm
    solver = solver_for(options, remaining(options.time_limit_s, started))
    status = run_cpsat(solver, cm.model)
    params = {**ready.params, "solver_status": solver.status_name(status)}
    if status == cp_model.INFEASIBLE:
        raise infeasible(instance, restrict)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        bound = solver.best_objective_bound if status == cp_model.UNKNOWN else None
        plan = fallback(instance, options.warm_plan, "cpsat", started, bound, params,
                        options.timing, free=options.free_order)
        if plan is not None:
            return plan
        raise _nothing_found(options)
    times = read_times(cm, solver)
    program = decode(instance, times)
    objective = round(solver.objective_value)
    plan = make_plan(instance, times.choice, program, method="cpsat", started=started,
                     timing=options.timing, params={**params, "model_timing": "separate-noc"})
    return finish(plan, objective, solver.best_objective_bound, started, "cpsat")


def _stop_reason() -> str:
    return "interrupted" if stop_requested() else "time limit reached"


def _not_built(instance: Instance, options: SolveOptions, restrict: Restrictions,
               started: float) -> Plan:
    """The warm start when the time limit (or a SIGINT) came before a model was built; else
    say so."""
    plan = fallback(instance, options.warm_plan, "cpsat", started, None,
                    {**restriction_claims(restrict, options), "solver": "cp-sat",
                     "solver_status": f"{_stop_reason()} before the model was built"},
                    options.timing,
                    free=options.free_order)
    if plan is not None:
        return plan
    if stop_requested():
        raise KeyboardInterrupt
    raise UsageError(f"cpsat could not build its model of {len(instance.ops)} ops within "
                     f"{options.time_limit_s:g} s (give --warm-start METHOD to get that "
                     "plan back instead, or a longer --time-limit)")


def _nothing_found(options: SolveOptions) -> UsageError:
    return UsageError(f"cpsat found no plan within {options.time_limit_s} s "
                      "(try a longer --time-limit or --warm-start)")


def _cut_short(instance: Instance, options: SolveOptions, restrict: Restrictions,
               started: float, cut: CutShort) -> Plan:
    """The best plan found before the 5b model was built, with the section-5 bound."""
    found = [(p.claims.makespan_ns, k, p, source) for k, (p, source) in enumerate(
        [(cut.five.plan, "the section-5 model's plan"), (options.warm_plan, "warm start")])
        if p is not None and p.claims is not None]
    params = {**restriction_claims(restrict, options), "solver": "cp-sat",
              "model_timing": "shared-noc", "section5_bound_ns": cut.five.bound,
              "solver_status": f"{_stop_reason()} before the 5b model was solved"}
    _m, _k, best, source = min(found, key=lambda x: x[:2]) if found else (0, 0, None, "")
    plan = fallback(instance, best, "cpsat", started, cut.five.bound, params, "shared-noc",
                    source, free=options.free_order)
    if plan is not None:
        return plan
    return _not_built(instance, options, restrict, started)


def _solve_shared(instance: Instance, options: SolveOptions, restrict: Restrictions,
                  started: float, ready: Prepared) -> Plan:
    """Solve the prepared 5b model: probes, then (re-timed starts, open search) if needed."""
    if (met := _start_meets_floor(instance, ready, started)) is not None:
        return met
    whole = ends_with_loads_run_whole(instance, options)
    if whole and options.time_limit_s is not None:  # kept back for that bound
        left = remaining(options.time_limit_s, started) or 0.0
        ready = replace(ready, options=replace(
            ready.options, time_limit_s=options.time_limit_s - WHOLE_LOADS_SHARE * left))
    status, solver, probed, ready = _probe_then_search(instance, restrict, started, ready)
    cm, five, best, warm, upper = ready.cm, ready.five, ready.best, ready.warm, ready.upper
    assert five is not None
    params = {**ready.params, "solver_status": solver.status_name(status)}
    if status == cp_model.INFEASIBLE:
        if upper is not None or five.bound is not None:
            raise AssertionError("the 5b model is infeasible within a plan's makespan")
        raise infeasible(instance, restrict)
    bounds = [b for b in (ready.floor, probed) if b is not None]
    replayed = found = None
    if whole and status != cp_model.OPTIMAL:
        found = loads_run_whole(instance, "shared-noc", remaining(options.time_limit_s, started),
                                "cpsat", started)
        params["fluid_contiguous_ns"] = found.bound_ns if found is not None else None
        if found is not None:
            params["fluid_contiguous_complete"] = found.complete
            params["fluid_contiguous_s"] = round(found.wall_s, 3)
            bounds += [found.bound_ns] if found.bound_ns is not None else []
            # the replay keeps to no restriction (window, fifo, max_pending): under one, the
            # search's plan and bounds answer the restricted question, and the replay does not
            replayed = found.plan if restrict == Restrictions() else None
            if replayed is not None and not stop_requested():
                replayed = retimed_replay(instance, options, replayed, found.bound_ns, started)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        if status == cp_model.UNKNOWN:
            bounds.append(ceil_integer(solver.best_objective_bound))
        source = "warm start" if best is warm else "the section-5 model's plan"
        plan = fallback(instance, best, "cpsat", started, max(bounds, default=None), params,
                        "shared-noc", f"{source}, re-timed" if ready.retimed else source,
                        free=options.free_order)
        plan = faster(instance, plan, replayed, max(bounds, default=None), params, started)
        if plan is None:
            raise _nothing_found(options)
        return after_mip(instance, options, plan, found, started, solve) if whole else plan
    times = read_times(cm, solver)
    program = decode(instance, times)
    release, schedule = replay_shared(instance, program, times)
    objective = round(solver.objective_value)
    if schedule.makespan_ns > objective:
        raise AssertionError(f"cpsat: 5b replay {schedule.makespan_ns} above objective "
                             f"{objective}")
    bounds.append(ceil_integer(solver.best_objective_bound))
    lower = claimed_bound(instance, max(bounds), schedule.makespan_ns)
    plan = make_plan(instance, times.choice, program, method="cpsat", started=started,
                     timing="shared-noc", release_ns=release,
                     status="optimal" if lower == schedule.makespan_ns else "feasible",
                     lower_bound_ns=lower, params=params)
    plan = faster(instance, plan, replayed, max(bounds), params, started) or plan
    return after_mip(instance, options, plan, found, started, solve) if whole else plan


WHOLE_LOADS_SHARE = 0.5  # of the time left after the floor, kept for the bound after search


def _start_meets_floor(instance: Instance, ready: Prepared, started: float) -> Plan | None:
    """The start plan, proven optimal, when it meets the floor (a valid lower bound)."""
    best, floor = ready.best, ready.floor
    if best is None or floor is None or floor < best.claims.makespan_ns:
        return None
    return make_plan(instance, best.choice, best.program, method="cpsat", started=started,
                     timing="shared-noc", release_ns=best.release_ns, status="optimal",
                     lower_bound_ns=claimed_bound(instance, floor, best.claims.makespan_ns),
                     params={**ready.params, "solver_status": "start meets the bound"})


def _probe_then_search(instance: Instance, restrict: Restrictions, started: float,
                       ready: Prepared
                       ) -> tuple[int, cp_model.CpSolver, int | None, Prepared]:
    """Probe caps up from the floor (`cpsat_probe`), then search the model, bounded by what
    the probes proved and hinted with what they found, or with the re-timed starts if they
    found nothing; the status, the solver holding the solution and bound, the probes' lower
    bound (None without a floor) and the model as searched."""
    options = ready.options
    deadline = Deadline.after(options.time_limit_s, started)
    if ready.floor is None:
        ready = retime_starts(instance, restrict, ready, started, deadline)
        return (*_search(ready.cm, options, started), None, ready)

    def capped(cap: int, lower: int) -> CpsatModel:
        return build(instance, restrict, timing="shared-noc", upper=cap, lower=lower,
                     deadline=deadline, free=options.free_order)

    probed = probe(capped, options, started, ready.floor, ready.upper, len(instance.ops))
    if probed.cm is not None:  # it holds the optimum: search on there
        ready = replace(ready, cm=probed.cm)
    if probed.status == cp_model.OPTIMAL and probed.solver is not None:
        return probed.status, probed.solver, probed.lower, ready
    if probed.solver is not None:
        _restart_from(ready.cm, probed.solver)
    else:
        ready = retime_starts(instance, restrict, ready, started, deadline)
    cm = ready.cm
    cm.model.add(cm.makespan >= probed.lower)
    if options.work_limit is not None:
        options = replace(options, work_limit=max(0.0, options.work_limit - probed.work))
    status, solver = _search(cm, options, started)
    if probed.solver is not None and status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        # no time to take up the hint
        return cp_model.FEASIBLE, probed.solver, probed.lower, ready
    return status, solver, probed.lower, ready


def _restart_from(cm: CpsatModel, solver: cp_model.CpSolver) -> None:
    """Hint the model with the solver's solution and keep its search below that solution's
    makespan and above its bound (both exact: the solution stays feasible)."""
    cm.model.clear_hints()
    for k in range(len(cm.model.proto.variables)):
        v = cm.model.get_int_var_from_proto_index(k)
        cm.model.add_hint(v, solver.value(v))
    cm.model.add(cm.makespan <= round(solver.objective_value))
    cm.model.add(cm.makespan >= ceil_integer(solver.best_objective_bound))


LNS_SHARE = 0.3  # one thread under 5b: of the time (or work) left, for the LNS-rich phase


def _search(cm: CpsatModel, options: SolveOptions, started: float
            ) -> tuple[int, cp_model.CpSolver]:
    """Solve the 5b model; the status and the solver holding the solution and bound.

    One CP-SAT worker alone runs no LNS: from a start plan its incumbents then creep down a
    few ns per solution while the bound already sits at the optimum (zoo slices), yet with
    the LNS interleaved on its thread the full search proves less where the bound is the
    hard part (synthetic instances). So one thread first searches interleaved for a share of
    the budget, then alone, hinted with and bounded by what the first phase found (its
    solution stays feasible, so nothing found before is lost). Several threads run the
    full-search workers with the LNS beside them, in one phase.
    """
    left = remaining(options.time_limit_s, started)
    if (options.threads or 2) > 1:
        solver = solver_for(options, left, "shared-noc")
        return run_cpsat(solver, cm.model), solver

    def share(fraction: float, value: float | None) -> float | None:
        return None if value is None else fraction * value

    first = solver_for(replace(options, work_limit=share(LNS_SHARE, options.work_limit)),
                       share(LNS_SHARE, left), "shared-noc", interleave=True)
    status = run_cpsat(first, cm.model)
    if status in (cp_model.OPTIMAL, cp_model.INFEASIBLE) or stop_requested():
        return status, first
    if status == cp_model.FEASIBLE:
        _restart_from(cm, first)
    second = solver_for(replace(options, work_limit=share(1 - LNS_SHARE, options.work_limit)),
                        remaining(options.time_limit_s, started), "shared-noc")
    found = status == cp_model.FEASIBLE
    status = run_cpsat(second, cm.model)
    if found and status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return cp_model.FEASIBLE, first  # no time to take up the hint: the first phase's
    return status, second


def finish(plan: Plan, objective: int, bound: float, started: float, method: str) -> Plan:
    """Claim the solver's bound; `optimal` exactly when the bound meets the makespan.

    The model is section 5's; its bound also holds for section 5b (sharing only slows).
    """
    assert plan.claims is not None
    modelled = evaluate(plan.instance, plan.choice, plan.program, plan.release_ns,
                        timing="separate-noc").makespan_ns
    if modelled > objective:
        raise AssertionError(f"{method}: replayed makespan {modelled} above objective {objective}")
    makespan = plan.claims.makespan_ns
    lower = claimed_bound(plan.instance, bound, makespan)
    return make_plan(plan.instance, plan.choice, plan.program, method=method, started=started,
                     timing=plan.timing, status="optimal" if lower == makespan else "feasible",
                     lower_bound_ns=lower, params=plan.claims.params)
