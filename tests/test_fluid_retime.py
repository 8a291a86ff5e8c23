"""A plan's pairs and load order re-timed exactly (formulations.fluid_retime), as `cpsat` and
`polish` do with the plan read from the fluid MIP's timeline."""

from __future__ import annotations

import time
from dataclasses import replace

from hypothesis import given, settings

from elk_opt.io import plan_to_dict
from elk_opt.methods import solve as solve_method
from elk_opt.solution import SolveOptions, make_plan
from formulations.common import feasible_pairs
from formulations.enumerate import enumerate_shared_optimum
from formulations.fluid_retime import retimed
from tests.test_exact_shared import contended_instances
from tests.tiny import port_instance
from verify import check

SHARED = SolveOptions(threads=1, timing="shared-noc")


def _loads(plan) -> list[int]:
    """The ops whose loads move data, in the order the program issues them."""
    return [op for kind, op in plan.program if kind == "P"
            and plan.instance.ops[op].preload_plans[plan.choice[op].preload].load_ns]


@settings(max_examples=30, deadline=None)
@given(contended_instances(max_ops=4))
def test_a_retimed_plan_is_valid_faster_and_keeps_the_pairs_and_the_load_order(instance):
    start = solve_method(instance, "basic", SolveOptions(timing="shared-noc"))
    found = retimed(instance, start, None, 5.0, SHARED, "test", time.perf_counter())
    if found is None:
        return
    report = check(plan_to_dict(found))
    assert report.valid, report.violations
    assert found.claims.makespan_ns == report.makespan_ns < start.claims.makespan_ns
    assert found.claims.makespan_ns >= enumerate_shared_optimum(instance).makespan_ns
    kept = feasible_pairs(instance, "shared-noc")
    for j, (a, b) in enumerate(zip(start.choice, found.choice, strict=True)):
        if any((p.preload, p.exec) == (a.preload, a.exec) for p in kept[j]):
            assert a == b, j  # a pair dropped as dominated gives way to one that dominates it
    assert _loads(found) == _loads(start)


def test_a_release_that_only_delays_is_dropped():
    # two ops, each loading then running; holding the second execute back by 50 ns only
    # delays it, and the re-timed plan runs it at once
    instance = port_instance([(4, 2, 6, 3), (4, 2, 6, 3)])
    start = solve_method(instance, "basic", SolveOptions(timing="shared-noc"))
    held = make_plan(instance, start.choice, start.program, method="test",
                     started=time.perf_counter(), timing="shared-noc",
                     release_ns={**start.release_ns, ("E", 1): 60})
    assert held.claims.makespan_ns == 66 > start.claims.makespan_ns
    found = retimed(instance, held, None, 5.0, SHARED, "test", time.perf_counter())
    assert found is not None and found.claims.makespan_ns <= start.claims.makespan_ns
    assert check(plan_to_dict(found)).valid
    assert found.claims.params["plan_source"] == "fluid MIP re-timed"


def test_a_plan_nothing_beats_is_returned_as_none():
    instance = port_instance([(4, 2, 6, 3), (4, 2, 6, 3)])
    best = enumerate_shared_optimum(instance).makespan_ns
    start = solve_method(instance, "cpsat", replace(SHARED, time_limit_s=10))
    assert start.claims.makespan_ns == best
    assert retimed(instance, start, None, 5.0, SHARED, "test", time.perf_counter()) is None
