"""The exact models: CP-SAT, ILP and exhaustive enumeration agree; optima verify and hold."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from elk_opt.bounds.window import window_bound
from elk_opt.cli import main
from elk_opt.errors import UsageError
from elk_opt.evaluate import evaluate, evaluate_plan
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.io import plan_to_dict, save_instance
from elk_opt.methods import heuristics
from elk_opt.methods import solve as run_method
from elk_opt.solution import SolveOptions
from formulations import cpsat, cpsat_model, ilp
from formulations.enumerate import enumerate_optimum
from tests.strategies import random_instances, synthetic_instances
from tests.tiny import parse, tiny_instance
from verify import check

ONE = SolveOptions(threads=1, timing="separate-noc")
TWO = SolveOptions(threads=2, timing="separate-noc")


def _sound(plan) -> int:
    """The plan verifies, its claims hold, and an optimal claim has its bound equal."""
    report = check(plan_to_dict(plan))
    assert report.valid, report.violations
    c = plan.claims
    assert plan.timing == "separate-noc"
    assert c.makespan_ns == evaluate_plan(plan).makespan_ns == report.makespan_ns
    assert c.lower_bound_ns is None or c.lower_bound_ns <= c.makespan_ns
    assert (c.status == "optimal") == (c.lower_bound_ns == c.makespan_ns)
    assert c.params["exec_order"] == "instance"
    return c.makespan_ns


@given(random_instances(max_ops=5, max_plans=3))
def test_three_methods_agree_on_random_instances(instance):
    a = cpsat.solve(instance, ONE)
    b = ilp.solve(instance, ONE)
    best = enumerate_optimum(instance)
    assert a.claims.status == b.claims.status == "optimal"
    assert _sound(a) == _sound(b) == best.makespan_ns


@settings(max_examples=10)
@given(synthetic_instances(max_ops=5, max_plans=3))
def test_three_methods_agree_on_synthetic_instances(instance):
    a = cpsat.solve(instance, ONE)
    b = ilp.solve(instance, ONE)
    assert a.claims.status == b.claims.status == "optimal"
    assert _sound(a) == _sound(b) == enumerate_optimum(instance).makespan_ns


@settings(max_examples=15)
@given(synthetic_instances(max_ops=14, max_plans=4))
def test_optimum_beats_every_heuristic_and_meets_its_bound(instance):
    plan = cpsat.solve(instance, TWO)
    assert plan.claims.status == "optimal"
    best = _sound(plan)
    for name in heuristics():
        other = run_method(instance, name, TWO)
        if [i for kind, i in other.program if kind == "E"] == list(range(len(instance.ops))):
            assert best <= other.claims.makespan_ns, name


def test_cbc_agrees_with_highs():
    instance = synthetic_instance(ops=6, plans=3, seed=5, tightness=0.6)
    cbc = ilp.solve(instance, SolveOptions(threads=1, timing="separate-noc",
                                           params={"solver": "cbc"}))
    assert cbc.claims.status == "optimal"
    assert _sound(cbc) == _sound(ilp.solve(instance, ONE))


def test_a_preload_waits_for_the_execute_it_follows():
    # op1 loads 10 ns; op0 runs 50 ns. Issued after E0, P1 starts at 50 (not 0): makespan
    # 50 + 10 + 5 = 65; issued before E0 it overlaps: 50 + 5 = 55 -- if it fits beside op0.
    roomy = tiny_instance([(0, 0, 50, 10, 0), (10, 40, 5, 40, 0)], sram=100)
    tight = tiny_instance([(0, 0, 50, 70, 0), (10, 40, 5, 40, 0)], sram=100)
    for model in (cpsat, ilp):
        a = model.solve(roomy, ONE)
        assert a.claims.makespan_ns == 55 and a.program == tuple(parse("P0 P1 E0 E1"))
        b = model.solve(tight, ONE)
        assert b.claims.makespan_ns == 65 and b.program == tuple(parse("P0 E0 P1 E1"))


def test_reordered_preloads_beat_fifo_and_fifo_is_recorded():
    # op1's preload does not fit beside E0 but op2's does: load op2 first, during E0 (63 ns).
    # FIFO must load op1 after E0 and op2 after op1 (102 ns).
    instance = tiny_instance([(1, 0, 50, 5, 0), (10, 6, 1, 6, 0), (40, 4, 1, 4, 0)], sram=10)
    free = cpsat.solve(instance, ONE)
    fifo = cpsat.solve(instance, replace(ONE, params={"fifo": True}))
    fifo_ilp = ilp.solve(instance, replace(ONE, params={"fifo": True}))
    assert _sound(free) == 63 and _sound(fifo) == _sound(fifo_ilp) == 102
    assert fifo.claims.params["fifo"] is True and "fifo" not in free.claims.params
    loads = [j for kind, j in fifo.program if kind == "P" and instance.ops[j].preload_plans[0]
             .load_ns]
    assert loads == sorted(loads)


@pytest.mark.parametrize("model", [cpsat, ilp])
def test_restrictions_are_honoured_and_recorded(model):
    instance = synthetic_instance(ops=10, plans=3, seed=2, tightness=0.0)
    free = model.solve(instance, ONE)
    capped = model.solve(instance, replace(ONE, params={"max_pending": 1, "window": 2}))
    assert capped.claims.params["max_pending"] == 1 and capped.claims.params["window"] == 2
    schedule = evaluate_plan(capped)
    assert max(schedule.preload_count) <= 1
    position = {instr: k for k, instr in enumerate(capped.program)}
    for j in range(len(instance.ops)):
        executes_before = sum(1 for kind, i in capped.program[:position["P", j]] if kind == "E")
        assert executes_before >= j - 2 or instance.ops[j].hbm_bytes == 0
    assert _sound(free) <= _sound(capped)


def test_time_limit_returns_a_feasible_plan_with_a_bound():
    instance = synthetic_instance(ops=72, plans=6, seed=1, tightness=0.6)
    warm = run_method(instance, "basic", ONE)
    for model in (cpsat, ilp):
        plan = model.solve(instance, replace(ONE, time_limit_s=1.0, warm_start="basic",
                                             warm_plan=warm))
        assert plan.claims.status in ("optimal", "feasible")
        assert plan.claims.lower_bound_ns is not None
        assert _sound(plan) <= warm.claims.makespan_ns
    plan = run_method(instance, "polish", replace(ONE, time_limit_s=1.0, warm_start="basic",
                                                  warm_plan=warm))
    assert _sound(plan) <= warm.claims.makespan_ns


def test_warm_start_is_recorded_and_method_runs_via_registry():
    instance = synthetic_instance(ops=8, plans=3, seed=3, tightness=0.5)
    plan = run_method(instance, "cpsat", replace(ONE, warm_start="basic"))
    assert plan.claims.params["warm_start"] == "basic"
    assert plan.claims.status == "optimal"


def test_enumeration_finds_the_hand_computed_optimum():
    instance = tiny_instance([(5, 10, 20, 10, 1), (30, 50, 10, 10, 0), (5, 50, 10, 10, 0)],
                             sram=80)
    # Both later loads beside E0 need 10 + 50 + 50 > 80 B. R5 charges op1 its larger layout
    # (50 B) at E1, so P2 (50 B) cannot be pending there either: P0 0-5, P1 5-35, E0 5-26,
    # E1 35-45, then P2 45-50 and E2 50-60.
    best = enumerate_optimum(instance)
    assert best.makespan_ns == 60
    assert best.program == tuple(parse("P0 P1 E0 E1 P2 E2"))
    assert evaluate(instance, best.choice, best.program, timing="separate-noc").makespan_ns == 60
    for model in (cpsat, ilp):
        assert model.solve(instance, ONE).claims.makespan_ns == 60


def test_infeasible_instance_is_a_usage_error():
    instance = tiny_instance([(1, 0, 1, 200, 0)], sram=100)
    for model in (cpsat, ilp):
        with pytest.raises(UsageError, match="infeasible"):
            model.solve(instance, ONE)


@given(random_instances(max_ops=5, max_plans=3), st.integers(1, 5))
def test_window_bound_never_exceeds_the_optimum(instance, width):
    best = enumerate_optimum(instance).makespan_ns
    assert window_bound(instance, width=width, threads=1).bound_ns <= best
    assert window_bound(instance, width=len(instance.ops), threads=1).bound_ns == best


@settings(max_examples=10)
@given(synthetic_instances(max_ops=16, max_plans=3), st.integers(2, 8))
def test_window_and_lp_bounds_hold_on_synthetic_instances(instance, width):
    best = cpsat.solve(instance, TWO)
    assert best.claims.status == "optimal"
    assert window_bound(instance, width=width).bound_ns <= best.claims.makespan_ns
    assert ilp.lp_bound(instance) <= best.claims.makespan_ns


def test_bound_and_solve_commands(tmp_path, capsys):
    inst, plan, out = tmp_path / "i.json", tmp_path / "p.json", tmp_path / "b.json"
    save_instance(inst, synthetic_instance(ops=12, plans=3, seed=7, tightness=0.8))
    assert main(["solve", str(inst), "--method", "cpsat", "--threads", "2", "--param",
                 "window=3", "--timing", "separate-noc", "-o", str(plan)]) == 0
    claims = json.loads(plan.read_text())["claims"]
    assert claims["params"]["window"] == 3 and claims["status"] == "optimal"
    # the plan is section 5's: its makespan bounds that timing's optimum (5b's may be higher)
    assert main(["bound", str(inst), "--window", "4", "--threads", "1", "--timing",
                 "separate-noc", "--layers-time", "1", "-o", str(out)]) == 0
    bounds = json.loads(out.read_text())
    assert {b["bound"] for b in bounds["bounds"]} == {"ideal", "hbm-cut", "fluid",
                                                      "fluid-sram", "fluid-milp",
                                                      "fluid-contiguous", "lp", "window4",
                                                      "carry", "layers1", "fluid-layers"}
    assert bounds["best"]["ns"] <= claims["makespan_ns"]
    assert "best" in capsys.readouterr().out
    assert main(["solve", str(inst), "--method", "ilp", "--param", "nonsense=1",
                 "-o", str(plan)]) == 2
    assert "unknown exact-method parameter" in capsys.readouterr().err


@settings(max_examples=8)
@given(synthetic_instances(max_ops=30, max_plans=4))
def test_polish_never_worsens_its_start_and_verifies(instance):
    plan = run_method(instance, "polish", replace(
        TWO, warm_start="basic", params={"width": 6, "stride": 3, "window_time": 2.0}))
    start = plan.claims.params["start_makespan_ns"]
    assert start == run_method(instance, "basic", ONE).claims.makespan_ns
    assert _sound(plan) <= start
    assert plan.claims.params["warm_start"] == "basic"


def test_polish_with_one_window_is_the_exact_optimum():
    instance = synthetic_instance(ops=10, plans=3, seed=11, tightness=0.6)
    plan = run_method(instance, "polish", replace(TWO, warm_start="basic",
                                                  params={"width": 10, "certify": True}))
    assert plan.claims.lower_bound_ns >= ilp.lp_bound(instance)
    assert _sound(plan) == cpsat.solve(instance, TWO).claims.makespan_ns
    with pytest.raises(UsageError, match="unknown polish parameter"):
        run_method(instance, "polish", SolveOptions(warm_start="basic", params={"fifo": True}))
    with pytest.raises(UsageError, match="polish needs"):
        run_method(instance, "polish", SolveOptions(warm_start="basic",
                                                    params={"window_time": "x"}))


@settings(max_examples=20)
@given(random_instances(max_ops=5, max_plans=3),
       st.sampled_from([{"fifo": True}, {"window": 1}, {"max_pending": 1},
                        {"fifo": True, "window": 2, "max_pending": 2}]))
def test_models_agree_under_restrictions(instance, params):
    options = replace(ONE, params=params)
    a, b = cpsat.solve(instance, options), ilp.solve(instance, options)
    assert a.claims.status == b.claims.status == "optimal"
    assert _sound(a) == _sound(b) >= enumerate_optimum(instance).makespan_ns
    assert a.claims.params == {**b.claims.params, "solver": "cp-sat",
                               "solver_status": "OPTIMAL"}


@settings(max_examples=10)
@given(synthetic_instances(max_ops=14, max_plans=4))
def test_warm_starts_are_complete_feasible_solutions_of_both_models(instance):
    """A heuristic plan's warm start satisfies every row of the ILP and every CP-SAT constraint
    (so the solvers can take it as their first incumbent), at the plan's own makespan."""
    from ortools.sat.python import cp_model

    from formulations.common import Restrictions
    for name in heuristics():
        plan = run_method(instance, name, ONE)
        if [i for kind, i in plan.program if kind == "E"] != list(range(len(instance.ops))):
            continue
        im = ilp.build(instance, Restrictions())
        assert ilp.set_warm_values(im, instance, plan)
        assert im.prob.valid(eps=1e-6), name
        assert im.exec_end[-1].varValue <= plan.claims.makespan_ns
        cm = cpsat_model.build(instance, Restrictions())
        cpsat_model.add_hint(cm, instance, plan)
        solver = cp_model.CpSolver()
        solver.parameters.fix_variables_to_their_hinted_value = True
        solver.parameters.num_workers = 1
        assert solver.solve(cm.model) == cp_model.OPTIMAL, name
        assert solver.objective_value <= plan.claims.makespan_ns
