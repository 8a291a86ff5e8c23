"""`elk-full-lp`: Elk-Full at the fluid LP's pairs (heuristics.lp_pairs)."""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import given, settings

import elk_opt
from elk_opt.bounds import fluid_sram
from elk_opt.bounds.cuts import PairCost, pair_cost, pair_uses
from elk_opt.bounds.fluid import fluid_bound, fluid_pairs
from elk_opt.bounds.fluid_sram import SpacedCost, fluid_sram_bound, fluid_sram_pairs, spaced_cost
from elk_opt.errors import UsageError
from elk_opt.io import plan_to_dict
from elk_opt.methods import solve
from elk_opt.problem import TIMINGS
from elk_opt.solution import SolveOptions
from heuristics.lp_pairs import narrowed
from tests.strategies import synthetic_instances
from verify import check


def _cost(instance, j, choice) -> PairCost:
    op = instance.ops[j]
    return next(pair_cost(*use) for use in pair_uses(op, instance.chip)
                if (use[0].id, use[1].id) == (choice.preload, choice.exec))


@pytest.mark.parametrize("timing", TIMINGS)
@settings(max_examples=15, deadline=None)
@given(synthetic_instances(max_ops=30, max_plans=4))
def test_the_plan_verifies_at_the_lps_pairs_and_claims_the_lps_bound(timing, instance):
    plan = solve(instance, "elk-full-lp", SolveOptions(timing=timing, params={"lp": "fluid"}))
    assert not check(plan_to_dict(plan)).violations
    bound, picks = fluid_pairs(instance, timing)
    assert bound == fluid_bound(instance, timing).bound_ns
    assert plan.claims.lower_bound_ns == bound <= plan.claims.makespan_ns
    assert (plan.claims.status == "optimal") == (bound == plan.claims.makespan_ns)
    assert [_cost(instance, j, c) for j, c in enumerate(plan.choice)] == picks


def test_narrowing_keeps_exactly_the_picked_pairs():
    instance = elk_opt.synthetic_instance(ops=24, plans=4, seed=5)
    _bound, picks = fluid_pairs(instance, "shared-noc")
    narrow = narrowed(instance, picks)
    for j, (op, pick) in enumerate(zip(narrow.ops, picks, strict=True)):
        assert op.warmup, op.name
        assert {_cost(instance, j, w) for w in op.warmup} == {pick}
    assert any(len(a.warmup) < len(b.warmup) for a, b in zip(narrow.ops, instance.ops,
                                                             strict=True))


def test_without_time_for_the_lp_the_plan_is_elk_fulls_and_says_so():
    instance = elk_opt.synthetic_instance(ops=40, plans=4, seed=1)
    plan = solve(instance, "elk-full-lp", SolveOptions(timing="shared-noc", time_limit_s=1e-6))
    assert plan.claims.method == "elk-full-lp"
    assert "did not finish" in plan.claims.params["pairs"]
    assert not check(plan_to_dict(plan)).violations


def _spaced(instance, j, choice) -> SpacedCost:
    return next(spaced_cost(*use) for use in pair_uses(instance.ops[j], instance.chip)
                if (use[0].id, use[1].id) == (choice.preload, choice.exec))


@pytest.mark.parametrize("timing", TIMINGS)
@settings(max_examples=10, deadline=None)
@given(synthetic_instances(max_ops=30, max_plans=4))
def test_by_default_the_faster_of_both_lps_pairs_is_kept(timing, instance):
    plan = solve(instance, "elk-full-lp", SolveOptions(timing=timing))
    assert not check(plan_to_dict(plan)).violations
    each = {lp: solve(instance, "elk-full-lp", SolveOptions(timing=timing, params={"lp": lp}))
            for lp in ("fluid", "fluid-sram")}
    assert plan.claims.makespan_ns == min(p.claims.makespan_ns for p in each.values())
    assert plan.claims.makespan_ns == each[plan.claims.params["lp"]].claims.makespan_ns
    bound, picks = fluid_sram_pairs(instance, timing)
    with mock.patch.object(fluid_sram, "MAX_DIVISORS", fluid_sram.GUIDE_DIVISORS):
        assert bound == fluid_sram_bound(instance, timing).bound_ns  # the guide's own rows
    assert bound <= fluid_sram_bound(instance, timing).bound_ns
    assert each["fluid-sram"].claims.lower_bound_ns == bound
    assert [_spaced(instance, j, c) for j, c in enumerate(each["fluid-sram"].choice)] == picks
    assert plan.claims.lower_bound_ns == max(p.claims.lower_bound_ns for p in each.values())
    assert plan.claims.lower_bound_ns <= plan.claims.makespan_ns


@pytest.mark.parametrize("params", [{"lp": "simplex"}, {"lp": 2}, {"max_shift": 1}])
def test_a_bad_parameter_is_refused_by_name(params):
    instance = elk_opt.synthetic_instance(ops=12, plans=2, seed=3)
    with pytest.raises(UsageError, match="elk-full-lp"):
        solve(instance, "elk-full-lp", SolveOptions(params=params))
