"""Warm starts from the best heuristic plan (elk_opt.warm) and the 5b model's cheap floor: they
change how fast exact methods get there, never what they claim."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from elk_opt.comparison import compare
from elk_opt.evaluate import evaluate_plan
from elk_opt.io import plan_to_dict
from elk_opt.methods import heuristics, solve
from elk_opt.solution import SolveOptions
from elk_opt.studies.gap import run_study
from elk_opt.studies.reproduce import Cell as ReproCell
from elk_opt.studies.suites import load_suite
from elk_opt.warm import best_heuristic, in_instance_order, warm_options
from formulations.enumerate import enumerate_optimum, enumerate_shared_optimum
from tests.strategies import random_instances
from tests.tiny import port_instance
from verify import check

TIMINGS = ("shared-noc", "separate-noc")


def _claims_hold(plan) -> int:
    """The plan verifies, its claimed makespan is its replay, and `optimal` means proven."""
    assert check(plan_to_dict(plan)).valid
    c = plan.claims
    assert c.makespan_ns == evaluate_plan(plan).makespan_ns
    assert c.lower_bound_ns is not None and c.lower_bound_ns <= c.makespan_ns
    assert (c.status == "optimal") == (c.lower_bound_ns == c.makespan_ns)
    return c.makespan_ns


@settings(max_examples=25, deadline=None)
@given(random_instances(max_ops=5, max_plans=3, noc=True), st.sampled_from(TIMINGS))
def test_the_best_heuristic_is_no_worse_than_any_heuristic(instance, timing):
    found = best_heuristic(instance, timing)
    plans = {name: solve(instance, name, SolveOptions(timing=timing)) for name in heuristics()}
    usable = [p.claims.makespan_ns for p in plans.values() if in_instance_order(p)]
    if not usable:
        assert found is None
        return
    name, plan = found
    assert plan.claims.makespan_ns == min(usable) == plans[name].claims.makespan_ns
    assert best_heuristic(instance, timing, plans)[1] is plans[name]  # reuses what it is given


@settings(max_examples=30, deadline=None)
@given(random_instances(max_ops=3, max_plans=2, noc=True, max_ns=10), st.sampled_from(TIMINGS))
def test_warm_started_cpsat_meets_the_exhaustive_optimum(instance, timing):
    options = warm_options(instance, "cpsat", SolveOptions(threads=1, timing=timing))
    assert options.warm_plan is not None and options.warm_start in heuristics()
    plan = solve(instance, "cpsat", options)
    assert plan.claims.status == "optimal"
    best = (enumerate_shared_optimum(instance) if timing == "shared-noc"
            else enumerate_optimum(instance))
    assert _claims_hold(plan) == best.makespan_ns <= options.warm_plan.claims.makespan_ns


def test_warm_options_touch_only_exact_methods_and_not_cold_ones():
    instance = port_instance([(4, 4, 6, 6), (5, 0, 3, 3), (2, 2, 2, 0)])
    base = SolveOptions(timing="shared-noc")
    assert warm_options(instance, "elk-full", base) is base
    assert warm_options(instance, "cpsat", base, cold=True) is base
    warm = warm_options(instance, "ilp", base)
    assert warm.warm_start in heuristics() and warm.warm_plan is not None


def test_a_start_that_meets_the_floor_is_claimed_optimal_without_search():
    """One op: every plan loads then runs, so the start meets the section-5 bound."""
    instance = port_instance([(7, 7, 5, 5)])
    plan = solve(instance, "cpsat", SolveOptions(threads=1, timing="shared-noc"))
    assert plan.claims.params["solver_status"] == "start meets the bound"
    assert plan.claims.status == "optimal" and _claims_hold(plan) == 12


SUITE = """
[[instance]]
source = "synthetic"
ops = [5]
plans = 2
seed = [1, 2]
tightness = 0.6
"""


@pytest.fixture(scope="module")
def warm_and_cold(tmp_path_factory):
    """The same suite studied warm (the default) and cold, in folders of their own."""
    made = {}
    for cold in (False, True):
        out = tmp_path_factory.mktemp(f"gap-cold-{cold}")
        suite = out / "suite.toml"
        suite.write_text(SUITE)
        specs = load_suite(str(suite))
        made[cold] = (specs, out, run_study(specs, ["static", "elk-full", "cpsat"], out,
                                            time_limit_s=20, timing="shared-noc",
                                            executor="serial", cold=cold))
    return made


def test_warm_and_cold_studies_prove_the_same_optima(warm_and_cold):
    optima = {}
    for cold, (_specs, _out, cells) in warm_and_cold.items():
        for c in cells:
            assert c.verified and c.error == "", c
            if c.method == "cpsat":
                assert c.status == "optimal" and c.lower_bound_ns == c.makespan_ns
                best = min(x.makespan_ns for x in cells if x.instance == c.instance)
                assert c.makespan_ns == best
                optima.setdefault(c.instance, set()).add(c.makespan_ns)
                # a warm cell names the heuristic it started from, a cold one none
                assert (c.warm_start is None) == cold
                assert cold or c.warm_start in heuristics()
    assert all(len(v) == 1 for v in optima.values())


def test_a_warm_study_folder_refuses_a_cold_resume(warm_and_cold):
    specs, out, _cells = warm_and_cold[False]
    from elk_opt.errors import UsageError
    with pytest.raises(UsageError, match="start"):
        run_study(specs, ["static", "elk-full", "cpsat"], out, time_limit_s=20,
                  timing="shared-noc", executor="serial", cold=True)
    settings_file = json.loads((out / "study.json").read_text())
    assert settings_file["exact_start"] == "best heuristic"


def test_compare_names_the_warm_start_of_exact_rows():
    instance = port_instance([(4, 4, 6, 6), (5, 0, 3, 3), (2, 2, 2, 0), (3, 3, 4, 4)])
    options = SolveOptions(threads=1, timing="shared-noc", time_limit_s=20)
    warm = {r["method"]: r for r in compare(instance, ["static", "cpsat"], options)}
    cold = {r["method"]: r for r in compare(instance, ["static", "cpsat"], options, cold=True)}
    assert warm["cpsat"]["warm_start"] in heuristics() and cold["cpsat"]["warm_start"] is None
    assert warm["cpsat"]["valid"] and cold["cpsat"]["valid"]
    assert warm["cpsat"]["makespan_ns"] == cold["cpsat"]["makespan_ns"]  # both proven
    assert warm["cpsat"]["status"] == cold["cpsat"]["status"] == "optimal"


def test_reproduce_keeps_exact_cells_only_for_the_same_start(tmp_path):
    (tmp_path / "p.plan.json.gz").write_bytes(b"")  # a kept plan: only its presence counts
    cell = ReproCell(model="m", batch=1, kv_len=1, layers=1, cost_model="analytic",
                     setting="separate-noc", timing="separate-noc", method="cpsat",
                     family="exact", status="optimal", time_limit_s=10, cold=False,
                     plan="p.plan.json.gz")
    assert cell.reusable(10, tmp_path) and not cell.reusable(10, tmp_path, cold=True)
    heuristic = ReproCell(model="m", batch=1, kv_len=1, layers=1, cost_model="analytic",
                          setting="separate-noc", timing="separate-noc", method="static",
                          family="heuristic", status="heuristic", plan="p.plan.json.gz")
    assert heuristic.reusable(10, tmp_path, cold=True)


def test_the_gap_study_leaves_the_ilp_out_by_default_only_under_5b():
    from elk_opt.commands.gap import default_methods

    assert "ilp" in default_methods("separate-noc")
    assert "ilp" not in default_methods("shared-noc")
    assert {"cpsat", "polish", *heuristics()} <= set(default_methods("shared-noc"))


def test_one_thread_5b_cpsat_stopped_by_a_work_limit_repeats():
    """The two phases of a one-thread 5b solve (LNS interleaved, then the full search) are
    each deterministic, and a budget split between them stops the same way twice."""
    from elk_opt.frontend.synthetic import synthetic_instance

    instance = synthetic_instance(ops=12, plans=3, seed=1, tightness=0.3)
    options = SolveOptions(threads=1, work_limit=0.2, timing="shared-noc")
    first, second = (solve(instance, "cpsat", options) for _ in range(2))
    _claims_hold(first)
    data = [plan_to_dict(p) for p in (first, second)]
    for d in data:
        d["claims"].pop("wall_s")
    assert json.dumps(data[0], sort_keys=True) == json.dumps(data[1], sort_keys=True)


@pytest.mark.parametrize("params", [{"fifo": True}, {"max_pending": 1}, {"window": 1}])
@pytest.mark.parametrize("start", ["lhs", "elk-full"])
def test_a_start_that_breaks_a_restriction_never_becomes_the_restricted_answer(params, start):
    """A warm start may break the restrictions (heuristics do not know them): it must neither
    bound the restricted model nor be returned as its (optimal) plan."""
    instance = port_instance([(0, 0, 20, 20), (10, 10, 40, 0), (10, 10, 10, 0), (5, 5, 9, 9),
                              (8, 8, 3, 3)])
    options = SolveOptions(threads=1, timing="shared-noc", params=params, warm_start=start)
    plan = solve(instance, "cpsat", options)
    _claims_hold(plan)
    free = solve(instance, "cpsat", SolveOptions(threads=1, timing="shared-noc"))
    assert plan.claims.makespan_ns >= free.claims.makespan_ns
    schedule = evaluate_plan(plan)
    if "max_pending" in params:
        assert max(schedule.preload_count) <= 1
    issue = [j for kind, j in plan.program if kind == "P"]
    if "fifo" in params:
        moving = [j for j in issue if instance.ops[j].preload_plans[0].load_ns]
        assert moving == sorted(moving)
    if "window" in params:
        done = 0
        for kind, j in plan.program:
            done += kind == "E"
            assert kind == "E" or done >= j - 1
