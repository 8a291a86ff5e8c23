"""The paper's schedulers (static, elk-dyn, elk-full, lhs, ideal) and the Ideal bound."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from hypothesis import given, settings

from elk_opt.bounds import ideal_bound
from elk_opt.evaluate import evaluate, evaluate_plan
from elk_opt.io import plan_to_dict
from elk_opt.methods import METHODS, solve
from elk_opt.problem import Choice, Instance
from elk_opt.solution import SolveOptions, make_plan
from elk_opt.synthetic import synthetic_instance
from elk_opt.zoo import model_instance, model_names
from heuristics.inductive import schedule
from heuristics.ladders import op_classes
from heuristics.orders import find_template, full_order, layer_orders
from tests.strategies import random_instances, synthetic_instances
from verify import check

OURS = ("static", "elk-dyn", "elk-full", "lhs", "ideal")


def _plans(instance: Instance) -> dict[str, object]:
    return {m: solve(instance, m) for m in (*OURS, "basic")}


def _assert_sound(instance: Instance) -> None:
    bound = ideal_bound(instance)
    plans = _plans(instance)
    for method, plan in plans.items():
        report = check(plan_to_dict(plan))
        assert report.valid, (method, report.violations[:3])
        assert plan.claims.makespan_ns == evaluate_plan(plan).makespan_ns
        assert bound <= plan.claims.makespan_ns, method
        if method in OURS:
            assert plan.claims.lower_bound_ns == bound
    assert plans["elk-full"].claims.makespan_ns <= plans["elk-dyn"].claims.makespan_ns


def test_registered():
    for name in OURS:
        assert METHODS[name].family == ("bound" if name == "ideal" else "heuristic")


@given(synthetic_instances(max_ops=40, max_plans=4))
def test_synthetic_plans_verify(instance):
    _assert_sound(instance)


@given(random_instances(max_ops=6, max_plans=3))
def test_random_plans_verify(instance):
    _assert_sound(instance)


def _brute_optimum(instance: Instance) -> int:
    """Least makespan over every choice and every program obeying R1-R5."""
    n = len(instance.ops)
    sram = instance.chip.sram_bytes

    def programs(issued, done, prog):
        if len(done) == n:
            yield tuple(prog)
            return
        for j in range(n):
            if j not in issued:
                yield from programs(issued | {j}, done, [*prog, ("P", j)])
        for i in range(n):
            if i in issued and i not in done and set(instance.ops[i].inputs) <= done:
                yield from programs(issued, done | {i}, [*prog, ("E", i)])

    every = list(programs(frozenset(), frozenset(), []))
    best = None
    for pairs in itertools.product(*[op.warmup for op in instance.ops]):
        choice = [Choice(exec=w.exec, preload=w.preload) for w in pairs]
        for program in every:
            s = evaluate(instance, choice, program)
            if s.peak_sram_bytes <= sram and (best is None or s.makespan_ns < best):
                best = s.makespan_ns
    assert best is not None
    return best


@settings(max_examples=15)
@given(random_instances(max_ops=3, max_plans=2))
def test_ideal_never_exceeds_the_exhaustive_optimum(instance):
    optimum = _brute_optimum(instance)
    assert ideal_bound(instance) <= optimum
    for method in OURS:
        assert solve(instance, method).claims.makespan_ns >= optimum


@settings(max_examples=10)
@given(synthetic_instances(max_ops=30, max_plans=4))
def test_deterministic(instance):
    for method in ("static", "elk-dyn", "elk-full", "lhs"):
        a, b = plan_to_dict(solve(instance, method)), plan_to_dict(solve(instance, method))
        a["claims"].pop("wall_s")
        b["claims"].pop("wall_s")
        assert a == b, method


@pytest.mark.parametrize("tightness", [0.0, 0.3, 0.6, 1.0])
def test_every_preload_order_schedules_a_valid_plan(tightness):
    """The inductive scheduler under non-identity orders, checked by the verifier."""
    instance = synthetic_instance(ops=30, plans=4, seed=7, tightness=tightness)
    ladders = op_classes(instance)
    template = find_template(instance, ladders[0])
    assert template is not None
    layer = [ladders[1][ladders[0][template.starts[0] + k]] for k in range(template.width)]
    orders = list(layer_orders(template, layer, instance.chip.sram_bytes, 1))
    scheduled = 0
    for order in orders:
        got = schedule(instance, full_order(len(instance.ops), template, order), ladders)
        if got is None:
            continue
        scheduled += 1
        plan = make_plan(instance, got.choice, got.program, method="elk-full", started=0.0)
        report = check(plan_to_dict(plan))
        assert report.valid, (order, report.violations[:3])
    assert scheduled >= 1


def test_layer_orders_are_bounded_permutations_of_groups():
    instance = synthetic_instance(ops=24, plans=3, seed=1, tightness=0.0)
    ladders = op_classes(instance)
    template = find_template(instance, ladders[0])
    assert template is not None and template.width == 12
    layer = [ladders[1][ladders[0][k]] for k in range(template.width)]
    huge = 1 << 60
    groups = template.groups
    for shift in (0, 1, 2):
        orders = list(layer_orders(template, layer, huge, shift))
        assert orders[0] == tuple(range(template.width))
        assert len(set(orders)) == len(orders)
        expected = [p for p in itertools.permutations(range(len(groups)))
                    if all(abs(slot - g) <= shift for slot, g in enumerate(p))]
        assert len(orders) == len(expected)
        for order in orders:
            assert Counter(order) == Counter(range(template.width))


def test_elk_full_uses_permuted_orders_when_they_pay():
    """On this instance a permuted order beats the identity (Elk-Dyn) order."""
    instance = synthetic_instance(ops=96, plans=5, seed=0, tightness=0.3)
    full = solve(instance, "elk-full")
    dyn = solve(instance, "elk-dyn")
    assert full.claims.params["layer_preload_order"] != "identity"
    assert full.claims.makespan_ns < dyn.claims.makespan_ns
    assert check(plan_to_dict(full)).valid


def test_elk_full_rejects_unknown_knobs():
    from elk_opt.errors import UsageError
    instance = synthetic_instance(ops=12, plans=2, seed=0)
    with pytest.raises(UsageError, match="unknown parameter"):
        solve(instance, "elk-full", SolveOptions(params={"bogus": 1}))


@pytest.mark.parametrize("model", model_names())
def test_zoo_plans_verify(model):
    """Every method's plan verifies on a two-layer slice of every zoo model."""
    instance = model_instance(model, layers=2)
    bound = ideal_bound(instance)
    makespans = {}
    for method in (*OURS, "basic"):
        options = SolveOptions(params={"max_shift": 1} if method in ("elk-full", "ideal") else {})
        plan = solve(instance, method, options)
        report = check(plan_to_dict(plan))
        assert report.valid, (model, method, report.violations[:3])
        assert bound <= plan.claims.makespan_ns
        makespans[method] = plan.claims.makespan_ns
    assert makespans["elk-full"] <= makespans["elk-dyn"]
