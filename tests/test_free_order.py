"""Heuristics under a free execution order (R2): lhs as XLA's list scheduler, and Elk-Dyn and
Elk-Full over candidate orders. Plans must verify, execute a topological order, honour SRAM,
claim only bounds that hold for every order, and repeat for the same input."""

import pytest
from hypothesis import given, settings

from elk_opt.bounds.cheap import cheap_bounds
from elk_opt.evaluate import evaluate, evaluate_plan, fits_memory
from elk_opt.io import plan_to_dict
from elk_opt.methods import METHODS, solve
from elk_opt.problem import TIMINGS, Instance, Plan
from elk_opt.reorder import reorder, restore
from elk_opt.solution import SolveOptions
from heuristics.exec_orders import johnson_order
from tests.strategies import random_instances, synthetic_instances
from tests.tiny import tiny_instance
from verify.checker import check

FREE = ("lhs", "basic", "static", "elk-dyn", "elk-full")


def executes(plan: Plan) -> list[int]:
    return [i for kind, i in plan.program if kind == "E"]


def assert_topological(instance: Instance, order: list[int]) -> None:
    assert sorted(order) == list(range(len(instance.ops)))
    at = {op: k for k, op in enumerate(order)}
    for i, op in enumerate(instance.ops):
        assert all(at[j] < at[i] for j in op.inputs), (i, op.inputs, order)


def assert_sound_free_plan(instance: Instance, plan: Plan) -> None:
    report = check(plan_to_dict(plan))
    assert report.valid, report.violations
    assert plan.claims is not None and plan.claims.params["exec_order"] == "free"
    assert_topological(instance, executes(plan))
    any_order = max(cheap_bounds(instance, plan.timing, any_order=True).values())
    assert plan.claims.lower_bound_ns == any_order <= plan.claims.makespan_ns


def test_lhs_frees_by_default_and_the_paper_schedulers_keep_the_instance_order():
    assert METHODS["lhs"].exec_orders == ("free", "instance")
    for method in ("basic", "static", "elk-dyn", "elk-full"):
        assert METHODS[method].exec_orders == ("instance", "free")


def _two_branches() -> Instance:
    """Ops 0 and 1 feed op 2; op 0's load is long and its execute short, op 1 the opposite."""
    return tiny_instance([(100, 10, 20, 10, 0), (10, 10, 100, 10, 0), (5, 5, 10, 5, 0)],
                         inputs=[(), (), (0, 1)])


@pytest.mark.parametrize("timing", TIMINGS)
@pytest.mark.parametrize("method", FREE)
def test_a_free_order_runs_the_short_load_first_and_hides_the_long_one(method, timing):
    """In the instance's order E0 waits 100 ns for its load and E1's long execute hides only
    op 2's; run E1 first and op 0's load hides under it: P1 (10) E1 (10-110) P0 (10-110)
    E0 (110-130) E2 (130-140). XLA's rules find it through op 0's larger async depth,
    Johnson's rule through op 1's load being shorter than its execute."""
    instance = _two_branches()
    kept = solve(instance, method, SolveOptions(timing=timing, exec_order="instance"))
    free = solve(instance, method, SolveOptions(timing=timing, exec_order="free"))
    assert executes(kept) == [0, 1, 2] and kept.claims.makespan_ns == 230
    assert executes(free) == [1, 0, 2] and free.claims.makespan_ns == 140
    assert_sound_free_plan(instance, free)


@settings(max_examples=25, deadline=None)
@given(random_instances(max_ops=7, noc=True))
def test_free_plans_verify_on_branching_instances(instance):
    for method in FREE:
        for timing in TIMINGS:
            plan = solve(instance, method, SolveOptions(timing=timing, exec_order="free"))
            assert_sound_free_plan(instance, plan)


@settings(max_examples=25, deadline=None)
@given(random_instances(max_ops=7, noc=True))
def test_lhs_free_fits_sram(instance):
    """SRAM fits every op alone (the strategy makes sure), so the reruns end in a program that
    fits: at worst the limit 0, where nothing is loaded ahead."""
    for timing in TIMINGS:
        plan = solve(instance, "lhs", SolveOptions(timing=timing, exec_order="free"))
        assert fits_memory(instance, evaluate_plan(plan))
        assert 0 <= plan.claims.params["memory_limit_bytes"] <= instance.chip.sram_bytes


@settings(max_examples=25, deadline=None)
@given(random_instances(max_ops=7, noc=True))
def test_a_paper_scheduler_free_is_never_worse_than_its_instance_order(instance):
    """The instance's order is always one of the candidates, and ties keep it."""
    for method in ("basic", "static", "elk-dyn", "elk-full"):
        for timing in TIMINGS:
            kept = solve(instance, method, SolveOptions(timing=timing))
            free = solve(instance, method, SolveOptions(timing=timing, exec_order="free"))
            assert free.claims.makespan_ns <= kept.claims.makespan_ns
            if free.claims.params["order_used"] == "instance":
                assert (free.choice, free.program) == (kept.choice, kept.program)


@settings(max_examples=10, deadline=None)
@given(random_instances(max_ops=7, noc=True))
def test_free_plans_are_deterministic(instance):
    _same_twice(instance, FREE)


@settings(max_examples=5, deadline=None)
@given(synthetic_instances(max_ops=40, max_plans=4))
def test_lhs_free_is_deterministic_on_synthetic_decoders(instance):
    _same_twice(instance, ("lhs",))


def _same_twice(instance: Instance, methods: tuple[str, ...]) -> None:
    for method in methods:
        for timing in TIMINGS:
            options = SolveOptions(timing=timing, exec_order="free", seed=3)
            a = plan_to_dict(solve(instance, method, options))
            b = plan_to_dict(solve(instance, method, options))
            a["claims"].pop("wall_s")
            b["claims"].pop("wall_s")
            assert a == b, (method, timing)


@settings(max_examples=40, deadline=None)
@given(random_instances(max_ops=7, noc=True))
def test_a_renumbered_plan_maps_back_to_the_same_schedule(instance):
    """A plan of the instance renumbered into Johnson's order, mapped back, times the same."""
    order = johnson_order(instance)
    assert_topological(instance, list(order))
    sub = reorder(instance, order)
    for timing in TIMINGS:
        plan = solve(sub, "elk-dyn", SolveOptions(timing=timing))
        choice, program, _ = restore(order, plan.choice, plan.program)
        assert executes(plan) == list(range(len(order)))
        assert [i for kind, i in program if kind == "E"] == list(order)
        assert evaluate(instance, choice, program, timing=timing).makespan_ns == \
            plan.claims.makespan_ns


def test_free_respects_a_time_limit_of_zero():
    """Cut before any schedule, each method still returns a sound plan."""
    instance = _two_branches()
    for method in FREE:
        plan = solve(instance, method, SolveOptions(exec_order="free", time_limit_s=0.0))
        assert check(plan_to_dict(plan)).valid
        assert_topological(instance, executes(plan))
