"""The execution-order setting (R2): each method solves only in the orders it lists."""

import csv
import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from elk_opt.bounds.cheap import cheap_bounds
from elk_opt.bounds.cuts import (
    hbm_cut_any_bound,
    hbm_cut_bound,
    port_cut_any_bound,
    port_cut_bound,
)
from elk_opt.cli import main
from elk_opt.errors import UsageError
from elk_opt.evaluate import evaluate, evaluate_plan
from elk_opt.io import load_plan, plan_to_dict, save_instance
from elk_opt.methods import METHODS, solve
from elk_opt.problem import TIMINGS, Claims, Plan
from elk_opt.solution import SolveOptions
from formulations.enumerate import enumerate_free_optimum, enumerate_optimum
from tests.strategies import random_instances
from tests.tiny import branching, only_choice, parse, tiny_instance
from verify import check

SEPARATE = SolveOptions(threads=1, timing="separate-noc")


def test_every_method_lists_a_default_order():
    for name, info in METHODS.items():
        assert info.exec_orders and set(info.exec_orders) <= {"instance", "free"}, name


def test_an_order_a_method_does_not_solve_is_refused():
    instance = tiny_instance([(10, 5, 20, 10, 0), (10, 5, 20, 10, 0)])
    refusing = [n for n, info in METHODS.items() if "free" not in info.exec_orders]
    if not refusing:
        pytest.skip("every method solves in free order")
    with pytest.raises(UsageError, match="--exec-order"):
        solve(instance, refusing[0], SolveOptions(exec_order="free"))


def test_misspelled_exec_order_is_one_line_and_exit_2(tmp_path):
    done = subprocess.run([sys.executable, "-m", "elk_opt.cli", "solve", "x.json",
                           "--method", "basic", "--exec-order", "fre", "-o",
                           str(tmp_path / "p.json")], capture_output=True, text=True)
    assert done.returncode == 2
    assert "--exec-order" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "p.json").exists()


def test_a_refused_order_is_one_line_before_any_work(tmp_path, capsys):
    refusing = [n for n, info in METHODS.items() if "free" not in info.exec_orders]
    if not refusing:
        pytest.skip("every method solves in free order")
    path = tmp_path / "i.json"
    save_instance(path, tiny_instance([(10, 5, 20, 10, 0), (10, 5, 20, 10, 0)]))
    out = tmp_path / "p.json"
    assert main(["solve", str(path), "--method", refusing[0], "--exec-order", "free",
                 "-o", str(out)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "--exec-order" in err[0], err  # no "solving ..." line before it
    assert not out.exists()


@pytest.mark.parametrize("command", [["gap", "--suite", "small"], ["compare", "x.json"],
                                     ["reproduce", "--quick"]])
def test_misspelled_exec_order_in_a_study_is_one_line_and_exit_2(tmp_path, capsys, command):
    assert main([*command, "--exec-order", "fre", "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--exec-order" in err
    assert not (tmp_path / "out").exists()


SUITE = """
[[instance]]
source = "synthetic"
ops = [5]
plans = 2
seed = 3
tightness = 0.6
"""


def _suite(tmp_path) -> str:
    suite = tmp_path / "suite.toml"
    suite.write_text(SUITE)
    return str(suite)


def test_a_study_refuses_a_named_method_that_cannot_solve_in_the_order(tmp_path, capsys):
    instance_only = next(m for m, info in METHODS.items()
                         if info.family in ("heuristic", "exact")
                         and "free" not in info.exec_orders)
    # (reproduce runs only heuristics, which all solve in either order)
    command = ["gap", "--suite", _suite(tmp_path), "-o", str(tmp_path / "gap")]
    assert main([*command, "--methods", instance_only, "--exec-order", "free"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and instance_only in err and "--exec-order" in err
    assert not (tmp_path / "gap" / "cells").exists()


def test_gap_study_in_free_order_records_it_and_keeps_orders_apart(tmp_path, capsys):
    out = tmp_path / "gap"
    command = ["gap", "--suite", _suite(tmp_path), "-o", str(out), "--timing", "separate-noc",
               "--time-limit", "10", "--quiet"]
    assert main([*command, "--exec-order", "free"]) == 0
    err = capsys.readouterr().err
    skipped = [m for m, info in METHODS.items()
               if info.family in ("heuristic", "exact") and "free" not in info.exec_orders]
    assert all(m in err for m in skipped)
    rows = list(csv.DictReader((out / "gap.csv").open()))
    assert {r["method"] for r in rows} >= {"cpsat"}
    assert {r["exec_order"] for r in rows} == {"free"}
    assert not skipped or not {r["method"] for r in rows} & set(skipped)
    for row in rows:
        plan = load_plan(out / row["plan"])
        assert check(plan_to_dict(plan)).valid
    # the same folder under the instance's order is another study
    assert main([*command, "--exec-order", "instance"]) == 2
    assert "exec_order" in capsys.readouterr().err


def test_compare_in_free_order_runs_the_methods_that_can(tmp_path, capsys):
    path = tmp_path / "instance.json"
    save_instance(path, branching())
    rows_path = tmp_path / "rows.json"
    assert main(["compare", str(path), "--methods", "cpsat", "--exec-order", "free",
                 "--timing", "separate-noc", "--json", str(rows_path)]) == 0
    doc = json.loads(rows_path.read_text())
    assert doc["exec_order"] == "free"
    row = next(r for r in doc["rows"] if r["method"] == "cpsat")
    assert row["exec_order"] == "free" and row["valid"] and row["status"] == "optimal"
    capsys.readouterr()
    assert main(["compare", str(path), "--methods", "ilp", "--exec-order", "free"]) == 2
    assert "ilp" in capsys.readouterr().err


SEPARATE_FREE = SolveOptions(threads=1, timing="separate-noc", exec_order="free")
SHARED_FREE = SolveOptions(threads=1, timing="shared-noc", exec_order="free")


def _free_plan_holds(plan) -> int:
    """A free-order plan passes verify, its claims say free, and optimal means bound met."""
    report = check(plan_to_dict(plan))
    assert report.valid, [v.message for v in report.violations]
    c = plan.claims
    assert c.params["exec_order"] == "free"
    assert c.makespan_ns == evaluate_plan(plan).makespan_ns
    assert (c.status == "optimal") == (c.lower_bound_ns == c.makespan_ns)
    return c.makespan_ns


@settings(max_examples=10, deadline=None)
@given(random_instances(max_ops=5, max_plans=2))
def test_cpsat_free_meets_the_exhaustive_search_over_orders_under_section_5(instance):
    best = enumerate_free_optimum(instance, "separate-noc")
    plan = solve(instance, "cpsat", SEPARATE_FREE)
    assert plan.claims.status == "optimal"
    assert _free_plan_holds(plan) == best.makespan_ns
    assert best.makespan_ns <= enumerate_optimum(instance).makespan_ns


@settings(max_examples=15, deadline=None)
@given(random_instances(max_ops=3, max_plans=2, noc=True, max_ns=8))
def test_cpsat_free_meets_the_exhaustive_search_over_orders_under_5b(instance):
    best = enumerate_free_optimum(instance, "shared-noc")
    assert evaluate(instance, best.choice, best.program, best.release_ns,
                    timing="shared-noc").makespan_ns == best.makespan_ns
    plan = solve(instance, "cpsat", SHARED_FREE)
    assert plan.claims.status == "optimal"
    assert _free_plan_holds(plan) == best.makespan_ns


@settings(max_examples=10, deadline=None)
@given(random_instances(max_ops=5, max_plans=3, noc=True), st.sampled_from(TIMINGS))
def test_free_optimum_is_never_above_the_instance_order_optimum(instance, timing):
    fixed = solve(instance, "cpsat", SolveOptions(threads=1, timing=timing, time_limit_s=10))
    free = solve(instance, "cpsat", SolveOptions(threads=1, timing=timing, exec_order="free",
                                                 time_limit_s=10, warm_plan=fixed,
                                                 warm_start="cpsat"))
    assert fixed.claims.params["exec_order"] == "instance"
    _free_plan_holds(free)
    # the free bound holds for every order, the instance's included
    assert free.claims.lower_bound_ns <= fixed.claims.makespan_ns
    if free.claims.status == "optimal" and fixed.claims.status == "optimal":
        assert free.claims.makespan_ns <= fixed.claims.makespan_ns


def test_branching_instance_gains_from_a_free_order():
    """Two chains that join: running the second chain's first op early hides its load."""
    instance = branching()
    fixed = solve(instance, "cpsat", SEPARATE)
    free = solve(instance, "cpsat", SEPARATE_FREE)
    best = enumerate_free_optimum(instance)
    assert _free_plan_holds(free) == best.makespan_ns < fixed.claims.makespan_ns


def test_a_plan_that_breaks_a_dependency_is_rejected_with_r2():
    """Any topological order passes verify; an execute before its input's is R2."""
    instance = tiny_instance([(10, 5, 20, 10, 0)] * 3, inputs=[(), (0,), ()])

    def rules(program: str, makespan: int) -> set[str]:
        plan = Plan(instance=instance, choice=tuple(only_choice(instance)),
                    program=tuple(parse(program)),
                    claims=Claims(method="test", status="feasible", makespan_ns=makespan),
                    timing="separate-noc")
        return {v.rule for v in check(plan_to_dict(plan)).violations}

    # loads 10 ns each back to back, executes 20 ns each from the first load's end
    assert rules("P2 P0 P1 E2 E0 E1", 70) == set()
    assert rules("P1 P0 P2 E1 E0 E2", 70) == {"R2"}


def test_free_order_refuses_restrictions_with_one_line():
    instance = tiny_instance([(10, 5, 20, 10, 0)] * 2)
    with pytest.raises(UsageError, match="--exec-order instance"):
        solve(instance, "cpsat", SolveOptions(exec_order="free", params={"window": 1}))


@settings(max_examples=25, deadline=None)
@given(random_instances(max_ops=5, max_plans=2))
def test_any_order_cuts_never_exceed_the_free_optimum_under_section_5(instance):
    best = enumerate_free_optimum(instance, "separate-noc").makespan_ns
    assert hbm_cut_any_bound(instance) <= best
    assert max(cheap_bounds(instance, "separate-noc", any_order=True).values()) <= best


@settings(max_examples=15, deadline=None)
@given(random_instances(max_ops=3, max_plans=2, noc=True, max_ns=8))
def test_any_order_cuts_never_exceed_the_free_optimum_under_5b(instance):
    best = enumerate_free_optimum(instance, "shared-noc").makespan_ns
    assert max(hbm_cut_any_bound(instance), port_cut_any_bound(instance)) <= best


def test_any_order_cuts_equal_the_instance_cuts_on_a_chain():
    chain = tiny_instance([(10, 5, 20, 10, 0), (30, 5, 10, 10, 2), (5, 5, 5, 10, 0)])
    assert hbm_cut_any_bound(chain) == hbm_cut_bound(chain)
    assert port_cut_any_bound(chain) == port_cut_bound(chain)


def test_bound_command_in_free_order_lists_only_bounds_for_every_order(tmp_path, capsys):
    path = tmp_path / "instance.json"
    save_instance(path, branching())
    out = tmp_path / "bounds.json"
    assert main(["bound", str(path), "--exec-order", "free", "-o", str(out), "--quiet"]) == 0
    rows = json.loads(out.read_text())["bounds"]
    assert {r["bound"] for r in rows} == {"ideal", "hbm-cut-any", "port-total", "port-cut-any"}
    assert {r["order"] for r in rows} == {"any"}
    assert "every execution order" in capsys.readouterr().out


def test_export_of_a_free_order_model_is_refused_with_one_line(tmp_path, capsys):
    path = tmp_path / "instance.json"
    save_instance(path, tiny_instance([(10, 5, 20, 10, 0)] * 2))
    assert main(["solve", str(path), "--method", "cpsat", "--exec-order", "free",
                 "--export", str(tmp_path / "m.pb.txt")]) == 2
    assert "--exec-order" in capsys.readouterr().err
    assert not (tmp_path / "m.pb.txt").exists()


@pytest.mark.parametrize("timing", TIMINGS)
def test_a_warm_start_in_another_order_starts_the_free_model(timing):
    """The exhaustive search's free-order plan (it reorders) as the warm start: re-timed in
    its own order under 5b, hinted under section 5; the result is never worse."""
    instance = branching()
    best = enumerate_free_optimum(instance, "separate-noc")
    assert [j for kind, j in best.program if kind == "E"] != list(range(5))
    warm = Plan(instance=instance, choice=best.choice, program=best.program,
                claims=Claims(method="enumerate", status="optimal",
                              makespan_ns=best.makespan_ns), timing=timing)
    plan = solve(instance, "cpsat", SolveOptions(threads=1, timing=timing, exec_order="free",
                                                 warm_plan=warm, warm_start="enumerate"))
    assert _free_plan_holds(plan) <= best.makespan_ns
    assert plan.claims.status == "optimal"
