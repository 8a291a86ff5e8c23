"""Start plans of the 5b model re-timed with their decisions held (`cpsat` under 5b).

A start plan made for section 5 (or by a heuristic) often lets loads run beside port-heavy
executes. With its pairs, issue slots and HBM order fixed, the 5b model only chooses times,
a small problem, and finds the releases that avoid that; the better start then hints the
open search and bounds the model (formulations.cpsat).
"""

from __future__ import annotations

from dataclasses import replace

from ortools.sat.python import cp_model

from elk_opt.problem import Instance, Plan
from elk_opt.reorder import reorder, restore
from elk_opt.solution import SolveOptions, make_plan
from formulations.common import (
    Restrictions,
    Warm,
    feasible_pairs,
    hint_index,
    remaining,
    warm_decisions,
)
from formulations.cpsat_model import add_hint, build, shared_plan, solver_for
from formulations.cpsat_run import solve as run_cpsat
from formulations.deadline import Deadline

RETIME_SHARE = 0.1  # of what is left, to re-time each start plan under 5b


def retimed_start(instance: Instance, restrict: Restrictions, plan: Plan | None,
                  options: SolveOptions, started: float, deadline: Deadline) -> Plan | None:
    """The plan's best 5b timing with its pairs, issue slots and HBM order kept.

    A start plan made for section 5 (or by a heuristic) often lets loads run beside
    port-heavy executes; the 5b model with its discrete decisions fixed finds the releases
    that avoid that, quickly (only times are free); when nothing better is found in time, the
    plan's own 5b timing. None if the plan does not execute in the instance's order (in free
    order: in one the dependencies allow), or breaks R5 or the restrictions.
    """
    warm = usable_start(instance, restrict, plan, options)
    if warm is None:
        return None
    assert plan is not None
    if list(warm.order) != list(range(len(instance.ops))):
        return _retimed_in_order(instance, plan, warm.order, options, started, deadline)
    pairs = feasible_pairs(instance, "shared-noc")
    fixed = {j: (hint_index(instance, j, c, pairs[j], "shared-noc"), warm.slot[j])
             for j, c in enumerate(warm.choice)}
    chain = sorted((j for j in fixed if pairs[j][fixed[j][0]].load_ns),
                   key=lambda j: (warm.schedule.load_start[j], j))
    cm = build(instance, restrict, fixed=fixed, pairs=pairs, chain=chain, timing="shared-noc",
               upper=warm.schedule.makespan_ns, deadline=deadline)
    add_hint(cm, instance, plan)
    left = remaining(options.time_limit_s, started)
    solver = solver_for(replace(options, verbose=False, gap=None),
                        None if left is None else RETIME_SHARE * left, "shared-noc")
    status = run_cpsat(solver, cm.model)
    if status == cp_model.INFEASIBLE:
        return None  # its own schedule is a solution unless its decisions break a restriction
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        # no better timing in time: the plan as it is still starts (and bounds) the search
        return as_is(instance, plan, started)
    return shared_plan(instance, cm, solver, "cpsat", started)


def usable_start(instance: Instance, restrict: Restrictions, plan: Plan | None,
                 options: SolveOptions) -> Warm | None:
    """The plan's decisions if it can start the 5b model: it executes in the instance's
    order (in free order: in one the dependencies allow) and obeys R5 and the window (the
    other restrictions only the restricted model checks)."""
    warm = warm_decisions(instance, plan, "shared-noc", free=options.free_order)
    if warm is None or warm.schedule.peak_sram_bytes > instance.chip.sram_bytes:
        return None
    if any(warm.slot[j] < restrict.slot_low(j) for j in range(len(instance.ops))):
        return None
    return warm


def as_is(instance: Instance, plan: Plan, started: float) -> Plan:
    """The plan with its own 5b timing, as a start of the 5b model."""
    return make_plan(instance, plan.choice, plan.program, method="cpsat", started=started,
                     timing="shared-noc", release_ns=plan.release_ns)


def _retimed_in_order(instance: Instance, plan: Plan, order: tuple[int, ...],
                      options: SolveOptions, started: float, deadline: Deadline) -> Plan | None:
    """`retimed_start` for a plan in another execution order: re-timed as an instance-order plan
    of the instance renumbered into that order (`formulations.reorder`), then mapped back."""
    inverse = [0] * len(order)
    for k, op in enumerate(order):
        inverse[op] = k
    permuted = reorder(instance, order)
    choice, program, release = restore(inverse, plan.choice, plan.program, plan.release_ns)
    local = make_plan(permuted, choice, program, method="cpsat", started=started,
                      timing="shared-noc", release_ns=release)
    done = retimed_start(permuted, Restrictions(), local, replace(options, exec_order="instance"),
                         started, deadline)
    if done is None:
        return None
    choice, program, release = restore(order, done.choice, done.program, done.release_ns)
    return make_plan(instance, choice, program, method="cpsat", started=started,
                     timing="shared-noc", release_ns=release)
