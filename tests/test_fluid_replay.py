"""Plans read from the fluid MIP's timeline (formulations.fluid_replay), and `cpsat` keeping
one when it beats its search."""

from __future__ import annotations

import time
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from elk_opt.bounds.fluid_milp import solve_fluid_milp
from elk_opt.bounds.run_all import lower_bounds
from elk_opt.evaluate import evaluate, evaluate_plan
from elk_opt.io import plan_to_dict
from elk_opt.methods import solve as solve_method
from elk_opt.problem import TIMINGS
from elk_opt.solution import SolveOptions, make_plan
from formulations import cpsat, cpsat_after
from formulations.enumerate import enumerate_optimum, enumerate_shared_optimum
from formulations.fluid_replay import replayed_plan
from tests.strategies import port_chains, random_instances
from tests.tiny import port_instance
from verify import check


def _replayed(instance, timing="shared-noc"):
    solved = solve_fluid_milp(instance, timing, contiguous=True)
    assert solved.model is not None and solved.solution is not None
    return solved.bound.bound_ns, replayed_plan(instance, solved.model, solved.solution,
                                                timing, "test", time.perf_counter())


def _holds(instance, bound, plan):
    """The plan is valid on its own, under its timing, and no faster than the exhaustive
    optimum or the bound."""
    report = check(plan_to_dict(plan))
    assert report.valid and report.timing == plan.timing
    optimum = enumerate_shared_optimum if plan.timing == "shared-noc" else enumerate_optimum
    best = optimum(instance).makespan_ns
    assert bound <= best <= plan.claims.makespan_ns
    _releases_bind(plan)


def _releases_bind(plan):
    """Only binding releases are kept: dropping any one of them changes the schedule."""
    schedule = evaluate_plan(plan)
    for instr in plan.release_ns:
        fewer = {k: v for k, v in plan.release_ns.items() if k != instr}
        assert evaluate(plan.instance, plan.choice, plan.program, fewer,
                        timing=plan.timing) != schedule, instr


@settings(max_examples=40)
@given(port_chains())
def test_a_replayed_plan_is_valid_and_never_beats_the_optimum(instance):
    bound, plan = _replayed(instance)
    if plan is not None:
        _holds(instance, bound, plan)


@settings(max_examples=30)
@given(random_instances(max_ops=3, max_plans=2, noc=True, max_ns=10),
       st.sampled_from(TIMINGS))
def test_a_replayed_plan_is_valid_on_random_instances_under_either_timing(instance, timing):
    bound, plan = _replayed(instance, timing)
    if plan is not None:
        _holds(instance, bound, plan)


def test_a_replayed_plan_keeps_only_the_releases_that_bind():
    # 40 ops whose timeline, released at every execute start, held back none of them
    instance = port_instance([(k % 3 * 4, k % 2 * 4, 10 + k % 5, (10 + k % 5) * (k % 2))
                              for k in range(40)])
    _, plan = _replayed(instance)
    assert plan is not None and check(plan_to_dict(plan)).valid
    _releases_bind(plan)


def test_the_timeline_of_the_four_op_example_replays_to_its_optimum():
    # tests/test_bounds.py: the MIP with loads run whole meets the optimum, 24 ns; its
    # solution, replayed as a program, is a plan of that makespan
    instance = port_instance([(0, 0, 10, 5), (0, 0, 2, 2), (6, 0, 4, 0), (10, 5, 6, 0)])
    bound, plan = _replayed(instance)
    assert bound == 24
    assert plan is not None and plan.claims.makespan_ns == 24
    _holds(instance, bound, plan)


def test_cpsat_keeps_the_faster_of_its_plan_and_the_replayed_one():
    instance = port_instance([(0, 0, 10, 5), (0, 0, 2, 2), (6, 0, 4, 0), (10, 5, 6, 0)])
    _, fast = _replayed(instance)
    assert fast is not None
    started = time.perf_counter()
    kept = cpsat_after.faster(instance, None, fast, 24, {"solver": "cp-sat"}, started)
    assert kept is not None and kept.claims is not None
    assert (kept.claims.method, kept.claims.status, kept.claims.lower_bound_ns) == (
        "cpsat", "optimal", 24)
    assert kept.claims.params["plan_source"] == "fluid MIP timeline"
    assert check(plan_to_dict(kept)).valid
    assert cpsat_after.faster(instance, kept, fast, 24, {}, started) is kept  # not faster
    assert cpsat_after.faster(instance, kept, None, 24, {}, started) is kept


def test_the_bounds_report_lists_the_replayed_plan_only_when_asked():
    instance = port_instance([(0, 0, 10, 5), (0, 0, 2, 2), (6, 0, 4, 0), (10, 5, 6, 0)])
    plain = lower_bounds(instance, timing="shared-noc", threads=1)
    assert "replayed" not in plain
    report = lower_bounds(instance, timing="shared-noc", threads=1, replay=True)
    (document,) = report["replayed"]
    assert check(document).valid
    assert document["claims"]["method"] == "fluid-contiguous"
    assert document["claims"]["makespan_ns"] >= report["best"]["ns"] == 24


def test_cpsat_continues_its_search_in_the_time_the_mip_leaves(monkeypatch):
    # a plan claimed with a weak bound: the search run again from it, with that bound as its
    # floor, proves the optimum (24 ns); without a time limit or without a bound, no rerun.
    # No annealing before it (tests/test_anneal.py): the search alone is what is tested here.
    monkeypatch.setattr(cpsat_after, "ANNEAL_SHARE", 0.0)
    instance = port_instance([(0, 0, 10, 5), (0, 0, 2, 2), (6, 0, 4, 0), (10, 5, 6, 0)])
    start = solve_method(instance, "basic", SolveOptions(timing="shared-noc"))
    started = time.perf_counter()
    weak = make_plan(instance, start.choice, start.program, method="cpsat", started=started,
                     timing="shared-noc", release_ns=start.release_ns, status="feasible",
                     lower_bound_ns=20, params={"solver": "cp-sat"})
    assert weak.claims is not None and weak.claims.makespan_ns > 24
    options = SolveOptions(timing="shared-noc", threads=1, time_limit_s=30)
    again = cpsat_after.continued(instance, options, weak, started, cpsat.solve)
    assert again.claims is not None
    assert (again.claims.makespan_ns, again.claims.lower_bound_ns, again.claims.status) == (
        24, 24, "optimal")
    assert again.claims.params["continued_ns"] == 24
    assert again.claims.params["plan_source"] == "search continued"
    assert check(plan_to_dict(again)).valid
    assert cpsat_after.continued(instance, replace(options, time_limit_s=None), weak, started,
                                 cpsat.solve) is weak
    unbounded = replace(weak, claims=replace(weak.claims, lower_bound_ns=None))
    assert cpsat_after.continued(instance, options, unbounded, started, cpsat.solve) is unbounded
