"""Probing caps up from a lower bound (formulations/cpsat_probe.py) is exact for the model:
whatever valid floor it starts from, the bound it proves never passes the exhaustive 5b
optimum, and a solution it reports optimal is that optimum."""

from __future__ import annotations

import itertools
import json
import math
import time
from dataclasses import replace
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from elk_opt.bounds.recompute import recompute
from elk_opt.certification.certificate import cpsat_contiguous_entry, cpsat_whole_ns_entry
from elk_opt.errors import UsageError
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.io import plan_to_dict
from elk_opt.methods import solve
from elk_opt.solution import SolveOptions
from formulations import cpsat, cpsat_after, cpsat_prepare, cpsat_probe
from formulations.common import Restrictions
from formulations.cpsat_model import build
from formulations.cpsat_probe import (
    COLD_PROBE_SHARE,
    LAST_STEP,
    PROBE_SHARE,
    first_cap,
    next_cap,
    probe,
)
from formulations.enumerate import enumerate_shared_optimum
from formulations.fluid_floor import fits_loads_run_whole, loads_run_whole, wants_loads_run_whole
from tests.test_exact_shared import contended_instances
from tests.tiny import port_instance, tiny_instance
from verify import check

SHARED = SolveOptions(threads=1, timing="shared-noc")


@settings(max_examples=20, deadline=None)
@given(contended_instances(max_ops=4), st.floats(0, 1))
def test_probes_from_any_valid_floor_never_pass_the_exhaustive_optimum(instance, share):
    optimum = enumerate_shared_optimum(instance).makespan_ns
    ready = cpsat_prepare.prepare(instance, SHARED)
    floor = int(share * optimum)  # any value up to the optimum is a valid lower bound
    probed = probe(lambda cap, lower: build(instance, Restrictions(), timing="shared-noc",
                                            upper=cap, lower=lower),
                   SHARED, time.perf_counter(), floor, ready.upper, len(instance.ops))
    assert floor <= probed.lower <= optimum
    if probed.solver is not None:
        assert round(probed.solver.objective_value) >= optimum
        assert probed.lower <= round(probed.solver.objective_value)
    if probed.status == cp_model.OPTIMAL:
        assert round(probed.solver.objective_value) == optimum == probed.lower


def test_caps_stop_below_the_start_and_past_the_last_step():
    assert next_cap(1000, None, 0.0) == 1000
    assert next_cap(1000, None, 1 / 2000) == 1001
    assert next_cap(1000, 1001, 1 / 500) == 1000  # at most the start's makespan - 1
    assert next_cap(1001, 1001, 0.0) is None  # nothing beats the start
    assert next_cap(1000, None, 2 * LAST_STEP) is None


def test_the_first_probe_holds_the_floor_and_the_step_above_it():
    assert first_cap(1000, None) == next_cap(1001, None, 1 / 2000) == 1002
    assert first_cap(1000, 1002) == 1001  # at most the start's makespan - 1
    assert first_cap(1000, 1001) == 1000  # the floor alone: the start is a ns above it
    assert first_cap(1001, 1001) is None  # nothing beats the start


def test_a_work_limited_5b_solve_with_its_probes_repeats():
    instance = synthetic_instance(ops=8, plans=3, seed=1, tightness=0.6)
    options = SolveOptions(threads=1, work_limit=0.1, timing="shared-noc")
    first, second = (solve(instance, "cpsat", options) for _ in range(2))
    assert first.claims.params.get("fluid_bound_ns") is not None  # so the probes ran
    assert _bytes(first) == _bytes(second)


def _bytes(plan) -> str:
    data = plan_to_dict(plan)
    data["claims"].pop("wall_s")
    return json.dumps(data, sort_keys=True)


def test_the_floor_counts_pending_loads_whole_when_no_mip_follows_the_search():
    # Each op holds 60 of 100 B, so P1 cannot be pending at E0: the optimum is 40. The fluid
    # LP (30) and its fractional R5 charge (34) sit below; the fluid MIP is the optimum, and
    # a start that meets it needs no search. It floors the probes only where the MIP with
    # loads run whole does not follow an unproven search (here: not asked for).
    instance = tiny_instance([(10, 60, 10, 60, 0), (10, 60, 10, 60, 0)])
    plan = solve(instance, "cpsat", replace(SHARED, loads_run_whole=False))
    assert plan.claims.params["fluid_bound_ns"] == 40
    assert plan.claims.params["solver_status"] == "start meets the bound"
    assert plan.claims.status == "optimal" and plan.claims.makespan_ns == 40


def test_where_the_mip_with_loads_run_whole_follows_the_floor_is_the_lp():
    # the same instance by default: the plain MIP would cost the probes time; the search
    # proves 40 from the LP's floor
    instance = tiny_instance([(10, 60, 10, 60, 0), (10, 60, 10, 60, 0)])
    plan = solve(instance, "cpsat", SHARED)
    assert plan.claims.params["fluid_bound_ns"] == 30
    assert plan.claims.status == "optimal" and plan.claims.makespan_ns == 40


def _in_layers(instance, layers):
    return replace(instance, ops=tuple(replace(op, layer=layer)
                                       for op, layer in zip(instance.ops, layers, strict=True)))


@pytest.mark.parametrize("layers,fits", [((None, None), True), ((0, 0), True),
                                         ((None, 3), True), ((0, 1), False)])
def test_the_mip_with_loads_run_whole_runs_on_a_decoder_layer_or_less(layers, fits):
    instance = _in_layers(tiny_instance([(10, 60, 10, 60, 0), (10, 60, 10, 60, 0)]), layers)
    assert fits_loads_run_whole(instance) is fits
    assert (loads_run_whole(instance, "shared-noc", None, "cpsat", time.perf_counter())
            is not None) is fits


def test_on_two_layers_the_plain_mip_floors_the_probes():
    # two layers: the MIP with loads run whole does not follow (it took 29 s to over 120 s
    # there for a few ns), so the plain MIP floors the probes again, and the start meets it
    instance = _in_layers(tiny_instance([(10, 60, 10, 60, 0), (10, 60, 10, 60, 0)]), (0, 1))
    plan = solve(instance, "cpsat", SHARED)
    assert plan.claims.params["fluid_bound_ns"] == 40
    assert "fluid_contiguous_ns" not in plan.claims.params
    assert plan.claims.status == "optimal" and plan.claims.makespan_ns == 40


def test_a_repeatable_run_floors_with_the_lp_alone():
    # HiGHS stops a MIP on the wall clock only: under a work limit the floor is the LP's (30
    # on the example above), and the search still proves 40
    instance = tiny_instance([(10, 60, 10, 60, 0), (10, 60, 10, 60, 0)])
    plan = solve(instance, "cpsat", SolveOptions(threads=1, timing="shared-noc", work_limit=1.0))
    assert plan.claims.params["fluid_bound_ns"] == 30
    assert plan.claims.status == "optimal" and plan.claims.makespan_ns == 40


def _fake_probes(monkeypatch, options: SolveOptions, upper: int | None = None, ops: int = 5):
    """Probes from 1000 (below a start of makespan `upper`, if given, on `ops` ops) whose
    first stops unproven with a bound of 1005 and whose later ones are infeasible; the caps
    probed, each with its lower end, and the time limits given."""
    bounds = itertools.chain([1005.0], itertools.repeat(math.inf))
    caps, limits = [], []

    class Stopped:
        deterministic_time = 0.0

        def __init__(self, limit: float) -> None:
            self.best_objective_bound = next(bounds)
            limits.append(limit)

    def run(solver, model):
        return cp_model.UNKNOWN if math.isfinite(solver.best_objective_bound) \
            else cp_model.INFEASIBLE

    monkeypatch.setattr(cpsat_probe, "solver_for", lambda _, limit, __: Stopped(limit))
    monkeypatch.setattr(cpsat_probe, "run_cpsat", run)
    capped = lambda cap, lower: caps.append((lower, cap)) or SimpleNamespace(model=None)  # noqa: E731
    return probe(capped, options, time.perf_counter(), 1000, upper, ops), caps, limits


def test_a_probe_stopped_with_its_bound_above_its_cap_counts_as_refuted(monkeypatch):
    # nothing at or below the first cap is left, so the next cap is probed, not given up on
    probed, caps, _ = _fake_probes(monkeypatch, SHARED)
    assert caps == [(1000, 1002), (1003, 1005), (1006, 1009)]
    assert probed.lower == 1010 and probed.solver is None


def test_cold_probes_above_the_floor_get_the_larger_share(monkeypatch):
    options = replace(SHARED, time_limit_s=1000.0)
    _, _, cold = _fake_probes(monkeypatch, options)
    warm = _fake_probes(monkeypatch, replace(options, warm_plan=_plan()))[2]
    assert [round(x / 1000, 2) for x in cold] == [COLD_PROBE_SHARE] * 3
    assert [round(x / 1000, 2) for x in warm] == [PROBE_SHARE] * 3


@pytest.mark.parametrize(("ops", "last_share"), [(5, 1.0), (0, PROBE_SHARE)])
def test_the_probe_below_a_start_within_reach_gets_all_the_time_left(monkeypatch, ops,
                                                                    last_share):
    # the first cap, 1002, asks whether anything beats the start (1003): 3 ns above the
    # bound, within reach on 5 ops (a ns per interval), not on none; within reach the open
    # search could only look for the same plans
    options = replace(SHARED, time_limit_s=1000.0, warm_plan=_plan())
    probed, caps, limits = _fake_probes(monkeypatch, options, upper=1003, ops=ops)
    assert caps == [(1000, 1002)] and probed.lower == 1003
    assert [round(x / 1000, 2) for x in limits] == [last_share]


def _plan():
    instance = tiny_instance([(10, 60, 10, 60, 0), (10, 60, 10, 60, 0)])
    return solve(instance, "elk-full", SHARED)


def test_a_search_that_proves_nothing_still_claims_the_bound_with_loads_run_whole(monkeypatch):
    # The example of tests/test_bounds.py: the fluid LP gives 22 (the floor: no plain MIP
    # where this one follows), with loads run whole 24, the optimum. A search that ends
    # unproven, with time kept back for that bound, claims it.
    instance = port_instance([(0, 0, 10, 5), (0, 0, 2, 2), (6, 0, 4, 0), (10, 5, 6, 0)])
    limits = []

    def unproven(instance, restrict, started, ready):
        limits.append(ready.options.time_limit_s)
        return cp_model.UNKNOWN, SimpleNamespace(best_objective_bound=0.0,
                                                 status_name=lambda _: "UNKNOWN"), None, ready

    monkeypatch.setattr(cpsat, "_probe_then_search", unproven)
    options = replace(SHARED, time_limit_s=60.0, warm_plan=solve(instance, "elk-full", SHARED),
                      warm_start="elk-full")
    plan = solve(instance, "cpsat", options)
    params = plan.claims.params
    assert params["fluid_bound_ns"] == 22 and params["fluid_contiguous_ns"] == 24
    assert params["fluid_contiguous_complete"] is True and params["fluid_contiguous_s"] >= 0
    assert plan.claims.lower_bound_ns == 24
    # certify lists that MIP under its own name, with params that reproduce it for --check
    entry = cpsat_contiguous_entry(plan)
    assert entry is not None and (entry["name"], entry["ns"]) == ("fluid-contiguous", 24)
    assert recompute(instance, "shared-noc", entry["name"], entry["params"], {}) == 24
    unfinished = {**params, "fluid_contiguous_complete": False}
    assert cpsat_contiguous_entry(replace(plan, claims=replace(plan.claims,
                                                               params=unfinished))) is None
    assert plan.claims.status == ("optimal" if plan.claims.makespan_ns == 24 else "feasible")
    assert limits and limits[0] < 60.0 * (1 - cpsat.WHOLE_LOADS_SHARE) + 1


def test_a_plan_a_ns_per_interval_above_that_mip_gets_its_intervals_in_whole_ns(monkeypatch):
    # tests/test_bounds.py's example: the MIP with loads run whole gives 16, the optimum is 17
    # since every end falls on a whole ns. A search that proves nothing, with Elk-Full's
    # plan (17) within a ns per interval of 16, solves that MIP with whole intervals: 17.
    instance = port_instance([(0, 0, 7, 4), (0, 0, 7, 4), (9, 4, 1, 0)])

    def unproven(instance, restrict, started, ready):
        return cp_model.UNKNOWN, SimpleNamespace(best_objective_bound=0.0,
                                                 status_name=lambda _: "UNKNOWN"), None, ready

    monkeypatch.setattr(cpsat, "_probe_then_search", unproven)
    warm = solve(instance, "elk-full", SHARED)
    assert warm.claims.makespan_ns == 17
    plan = solve(instance, "cpsat", replace(SHARED, time_limit_s=60.0, warm_plan=warm,
                                            warm_start="elk-full"))
    params = plan.claims.params
    assert params["fluid_contiguous_ns"] == 16 and params["fluid_whole_ns_ns"] == 17
    assert plan.claims.status == "optimal" and plan.claims.lower_bound_ns == 17
    entry = cpsat_whole_ns_entry(plan)
    assert entry is not None and (entry["name"], entry["ns"]) == ("fluid-whole-ns", 17)
    assert recompute(instance, "shared-noc", entry["name"], entry["params"], {}) == 17
    assert check(plan_to_dict(plan)).valid


def test_with_a_floor_given_cpsat_runs_the_mip_with_loads_run_whole_only_when_asked(
        monkeypatch):
    # `certify` hands on its floor and asks for that MIP (SolveOptions.loads_run_whole): the
    # fluid floor is not computed again, and the MIP still runs after the unproven search.
    instance = port_instance([(0, 0, 10, 5), (0, 0, 2, 2), (6, 0, 4, 0), (10, 5, 6, 0)])

    def unproven(instance, restrict, started, ready):
        return cp_model.UNKNOWN, SimpleNamespace(best_objective_bound=0.0,
                                                 status_name=lambda _: "UNKNOWN"), None, ready

    def refuse(*_args, **_kwargs):
        raise AssertionError("the fluid floor was computed though a floor was given")

    monkeypatch.setattr(cpsat, "_probe_then_search", unproven)
    monkeypatch.setattr(cpsat_prepare, "fluid_floor", refuse)
    options = replace(SHARED, time_limit_s=60.0, warm_plan=solve(instance, "elk-full", SHARED),
                      warm_start="elk-full", floor_ns=20)
    asked = solve(instance, "cpsat", replace(options, loads_run_whole=True)).claims
    assert asked.params["given_floor_ns"] == 20 and asked.params["fluid_bound_ns"] is None
    assert asked.params["fluid_contiguous_ns"] == 24 and asked.lower_bound_ns == 24
    not_asked = solve(instance, "cpsat", options).claims
    assert "fluid_contiguous_ns" not in not_asked.params and not_asked.lower_bound_ns < 24


def test_the_search_continued_after_that_mip_does_not_run_it_again():
    instance = port_instance([(0, 0, 10, 5), (0, 0, 2, 2), (6, 0, 4, 0), (10, 5, 6, 0)])
    start = solve(instance, "basic", SHARED)
    plan = replace(start, claims=replace(start.claims, status="feasible", lower_bound_ns=20))
    again: list[SolveOptions] = []

    def search(instance, options):
        again.append(options)
        return plan

    asked = replace(SHARED, time_limit_s=60.0, floor_ns=20, loads_run_whole=True)
    cpsat_after.continued(instance, asked, plan, time.perf_counter(), search)
    assert len(again) == 1 and not wants_loads_run_whole(again[0])


@pytest.mark.parametrize(("floor", "asked", "work", "runs"), [
    (None, None, None, True), (20, None, None, False), (20, True, None, True),
    (None, False, None, False), (None, True, 1.0, False), (None, None, 1.0, False)])
def test_who_runs_the_mip_with_loads_run_whole(floor, asked, work, runs):
    options = replace(SHARED, floor_ns=floor, loads_run_whole=asked, work_limit=work)
    assert wants_loads_run_whole(options) is runs


def test_a_request_for_that_mip_that_is_no_bool_is_refused():
    with pytest.raises(UsageError, match="loads_run_whole must be true, false or unset, got 1"):
        solve(tiny_instance([(10, 60, 10, 60, 0)]), "cpsat", replace(SHARED, loads_run_whole=1))


def test_under_a_restriction_cpsat_never_returns_the_replayed_plan(monkeypatch):
    # The plan read from the fluid MIP keeps to no restriction, and the search's bound answers
    # the restricted question only: with `fifo`, the search's start is what comes back.
    instance = port_instance([(0, 0, 10, 5), (0, 0, 2, 2), (6, 0, 4, 0), (10, 5, 6, 0)])

    warm = solve(instance, "basic", SHARED)
    assert warm.claims.makespan_ns > 24  # a start the replay beats

    def unproven(instance, restrict, started, ready):  # ends with the slow start
        return cp_model.UNKNOWN, SimpleNamespace(best_objective_bound=0.0,
                                                 status_name=lambda _: "UNKNOWN"), None, \
            replace(ready, best=warm, warm=warm)

    monkeypatch.setattr(cpsat, "_probe_then_search", unproven)
    for params, replayed in (({}, True), ({"fifo": True}, False)):
        options = replace(SHARED, time_limit_s=60.0, warm_plan=warm, warm_start="basic",
                          params=params)
        plan = solve(instance, "cpsat", options)
        assert ("plan_source" in plan.claims.params) is replayed, params
        assert check(plan_to_dict(plan)).valid
