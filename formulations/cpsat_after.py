"""What `cpsat` does under 5b after a search that proved nothing, on a decoder layer or less.

The fluid MIP with loads run whole has run by then (`cpsat`). Its plan, replayed from its
timeline, is re-timed with its pairs and load order held (`retimed_replay`) and taken when
faster (`faster`); where the plan lies within a ns per interval of its bound, the MIP with
intervals of whole ns may raise the bound to the plan (`_whole_ns`); then the search runs again
in the time left, from the best plan annealed (`annealed_start`), with the best bound as its
floor (`continued`). `search` is `cpsat`'s own solve, passed in: `cpsat` calls this module,
never the other way round.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from elk_opt.interrupts import stop_requested
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions, make_plan
from formulations.anneal import annealed_plan
from formulations.common import Restrictions, claimed_bound, remaining
from formulations.fluid_floor import LoadsRunWhole, whole_ns_after
from formulations.fluid_retime import retimed

Search = Callable[[Instance, SolveOptions], Plan]

REPLAY_RETIME_SHARE = 0.5  # of the time that MIP left, to re-time its plan (BENCHMARKS.md,
# "The fluid MIP's plan re-timed")
REPLAY_RETIME_UNLIMITED_S = 10.0  # for that without a time limit
REPLAY_RETIME_MIN_S = 0.5  # less than this, and the plan is kept as replayed
CONTINUE_MIN_S = 1.0  # left after that MIP, the least for which the search runs again
ANNEAL_SHARE = 0.6  # of the time the fluid MIP left, to anneal the best plan before the
# search runs again


def annealed_start(best: Plan, floor: int, options: SolveOptions,
                   started: float) -> Plan | None:
    """The best plan annealed (`formulations.anneal`) in ANNEAL_SHARE of the time left, if
    that is faster. Only with a time limit and no work limit (annealing counts seconds), in
    the instance's order without restrictions (and so on a decoder layer or less,
    `fits_loads_run_whole`, where a try takes well under a ms). It runs here, after
    the search and the fluid MIP, and not before the search: there it delayed proofs the
    search makes in seconds (four hbm3e slices of the small suite 1.4-2.7 s later, two lost
    in 20 s); here the 20 s cells end faster on 9 of the suite's 24 slices and no proof moves
    (BENCHMARKS.md, "Annealing before the search continues")."""
    left = remaining(options.time_limit_s, started)
    if (left is None or options.work_limit is not None
            or Restrictions.from_params(options.params) != Restrictions()
            or options.free_order or stop_requested()):
        return None
    return annealed_plan(best, "shared-noc", floor, ANNEAL_SHARE * left, options.seed, "cpsat",
                         started)


def after_mip(instance: Instance, options: SolveOptions, plan: Plan,
              found: LoadsRunWhole | None, started: float, search: Search) -> Plan:
    """What follows the fluid MIP with loads run whole: its twin in whole ns, then the
    search continued in the time left."""
    return continued(instance, options, _whole_ns(instance, options, plan, found, started),
                     started, search)


def _whole_ns(instance: Instance, options: SolveOptions, plan: Plan,
              found: LoadsRunWhole | None, started: float) -> Plan:
    """The plan claimed with the MIP with intervals of whole ns if that is higher
    (`whole_ns_after`, in the time left): on a Llama2-7B b64 KV4096 slice it proves 365,203 ns
    where the MIP with loads run whole stops at 365,201 (BENCHMARKS.md, "Intervals of whole
    ns")."""
    claims = plan.claims
    assert claims is not None
    if found is None or claims.status == "optimal":
        return plan
    whole = whole_ns_after(instance, "shared-noc", claims.makespan_ns, found,
                           remaining(options.time_limit_s, started))
    if whole is None or whole.bound_ns is None:
        return plan
    params = {**claims.params, "fluid_whole_ns_ns": whole.bound_ns,
              "fluid_whole_ns_complete": whole.complete,
              "fluid_whole_ns_s": round(whole.wall_s, 3)}
    lower = claimed_bound(instance, max(claims.lower_bound_ns or 0, whole.bound_ns),
                          claims.makespan_ns)
    return make_plan(instance, plan.choice, plan.program, method="cpsat", started=started,
                     timing="shared-noc", release_ns=plan.release_ns,
                     status="optimal" if lower == claims.makespan_ns else "feasible",
                     lower_bound_ns=lower, params=params)


def retimed_replay(instance: Instance, options: SolveOptions, replayed: Plan,
                   bound: int | None, started: float) -> Plan:
    """The plan replayed from the fluid MIP's timeline, re-timed with its pairs and load
    order held (`fluid_retime`) in REPLAY_RETIME_SHARE of the time left (without a time limit,
    in REPLAY_RETIME_UNLIMITED_S), if that is faster; the search continued gets the rest."""
    left = remaining(options.time_limit_s, started)
    limit = REPLAY_RETIME_UNLIMITED_S if left is None else REPLAY_RETIME_SHARE * left
    if limit < REPLAY_RETIME_MIN_S:  # building the model alone takes a few tenths on a layer
        return replayed
    return retimed(instance, replayed, bound, limit, options, "cpsat", started) or replayed


def continued(instance: Instance, options: SolveOptions, plan: Plan, started: float,
              search: Search) -> Plan:
    """The search run again in the time the fluid MIP with loads run whole left (it runs after
    the search, in WHOLE_LOADS_SHARE of the time, and often ends early), from the best plan so
    far and with the best bound as its floor (so without that MIP again); the faster plan
    kept, claimed with the higher bound (BENCHMARKS.md, "The search continued after the
    MIP")."""
    claims = plan.claims
    assert claims is not None
    left = remaining(options.time_limit_s, started)
    if (left is None or left < CONTINUE_MIN_S or claims.status == "optimal"
            or claims.lower_bound_ns is None or stop_requested()):
        return plan
    annealed = annealed_start(plan, claims.lower_bound_ns, options, started)
    again = search(instance, replace(options, time_limit_s=remaining(options.time_limit_s, started),
                                    warm_start="cpsat", warm_plan=annealed or plan,
                                    floor_ns=claims.lower_bound_ns, loads_run_whole=False))
    assert again.claims is not None
    best = again if again.claims.makespan_ns < claims.makespan_ns else plan
    makespan = min(claims.makespan_ns, again.claims.makespan_ns)
    lower = claimed_bound(instance, max(claims.lower_bound_ns, again.claims.lower_bound_ns or 0),
                          makespan)
    params = {**claims.params,
              **({"annealed_ns": annealed.claims.makespan_ns} if annealed is not None else {}),
              "continued_ns": again.claims.makespan_ns,
              "continued_bound_ns": again.claims.lower_bound_ns,
              "continued_s": round(again.claims.wall_s, 3),
              **({"plan_source": "search continued" if annealed is None
                  else "annealed, then the search continued"} if best is again else {})}
    return make_plan(instance, best.choice, best.program, method="cpsat", started=started,
                     timing="shared-noc", release_ns=best.release_ns,
                     status="optimal" if lower == makespan else "feasible",
                     lower_bound_ns=lower, params=params)


def faster(instance: Instance, plan: Plan | None, replayed: Plan | None, bound: int | None,
           params: dict, started: float) -> Plan | None:
    """The plan, or the one read from the fluid MIP's timeline (`loads_run_whole`) when it is
    faster, claimed with the same bound (without restrictions every bound here holds for any
    plan in the instance's order, the replayed one included)."""
    if replayed is None or replayed.claims is None or (
            plan is not None and plan.claims is not None
            and plan.claims.makespan_ns <= replayed.claims.makespan_ns):
        return plan
    makespan = replayed.claims.makespan_ns
    lower = claimed_bound(instance, bound, makespan)
    source = replayed.claims.params.get("plan_source", "fluid MIP timeline")  # or re-timed
    return make_plan(instance, replayed.choice, replayed.program, method="cpsat",
                     started=started, timing="shared-noc", release_ns=replayed.release_ns,
                     status="optimal" if lower == makespan else "feasible",
                     lower_bound_ns=lower, params={**params, "plan_source": source})
