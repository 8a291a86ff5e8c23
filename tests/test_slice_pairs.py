"""One pair per op class chosen on a slice and tiled (formulations.slice_pairs)."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from elk_opt.bounds.cuts import pair_uses
from elk_opt.bounds.fluid_sram import spaced_cost, spaced_costs
from elk_opt.evaluate import Schedule, evaluate_plan
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.io import plan_to_dict
from elk_opt.methods import solve
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions
from formulations.lns_tiling import best_tiling, slice_instance, slice_layers, structure
from formulations.slice_pairs import (
    FINAL,
    TRIAL,
    Classes,
    Descent,
    descend,
    narrowed,
    op_classes,
    start_pairs,
)
from verify import check

TIMINGS = ("separate-noc", "shared-noc")


def _decoder(layer_count: int, seed: int, plans: int = 2):
    instance = synthetic_instance(ops=12 * layer_count, plans=plans, seed=seed, tightness=0.6)
    layers = structure(instance)
    assert layers is not None
    return instance, layers, slice_instance(instance, layers, slice_layers(layers, 3))


def _checked(descent: Descent, than: tuple[Plan, Schedule] | None, sliced: Instance,
             classes: Classes) -> None:
    """The descent's best, checked against `than` (a tiling, or None when none obeyed R5):
    complete, no slower, timed as it says, a valid plan but for its claims (R6), its slice
    plan valid, and every class given a pair running it in every layer of the slice."""
    assert descent.complete
    if than is None:
        return
    assert descent.best is not None
    sliced_plan, tiled, schedule = descent.best
    assert schedule.makespan_ns <= than[1].makespan_ns
    assert evaluate_plan(tiled) == schedule
    report = check(plan_to_dict(tiled))
    assert all(v.rule == "R6" for v in report.violations), report.violations
    assert check(plan_to_dict(sliced_plan)).violations == ()  # a plan of the slice, pairs open
    for key, cost in descent.forced.items():
        for i in classes[key]:
            op, choice = sliced.ops[i], sliced_plan.choice[i]
            uses = [u for u in pair_uses(op, sliced.chip)
                    if (u[0].id, u[1].id) == (choice.preload, choice.exec)]
            assert [spaced_cost(*u) for u in uses] == [cost]


@settings(max_examples=4, deadline=None)
@given(st.integers(4, 6), st.integers(0, 10_000), st.sampled_from(TIMINGS))
def test_the_descent_tiles_a_valid_plan_no_slower_than_its_start(layer_count, seed, timing):
    instance, layers, sliced = _decoder(layer_count, seed)
    options = SolveOptions(timing=timing)
    descent = descend(instance, layers, sliced, options, solve)
    start = solve(sliced, TRIAL, options)
    classes = op_classes(layers, 3)
    assert sorted(len(ops) for ops in classes.values()) == [3] * 12
    _checked(descent, best_tiling(instance, layers, start, evaluate_plan(start)), sliced,
             classes)


def test_narrowing_keeps_only_the_forced_pairs_of_the_forced_class():
    instance, layers, sliced = _decoder(5, 3)
    classes = op_classes(layers, 3)
    costs = spaced_costs(sliced)
    key = next(k for k, ops in classes.items() if len(costs[ops[0]]) > 1)
    cost = costs[classes[key][0]][0]
    small = narrowed(sliced, classes, {key: cost})
    for i, (before, after) in enumerate(zip(sliced.ops, small.ops, strict=True)):
        if i in classes[key]:
            assert 0 < len(after.warmup) < len(before.warmup)
        else:
            assert after == before


def test_the_descent_stops_at_its_deadline_with_the_start_it_has():
    instance, layers, sliced = _decoder(6, 11)
    descent = descend(instance, layers, sliced, SolveOptions(timing="shared-noc"), solve,
                      time.perf_counter())
    assert not descent.complete and descent.trials == 1 and not descent.forced


def test_the_descent_without_a_deadline_is_deterministic():
    instance, layers, sliced = _decoder(4, 7)
    runs = [descend(instance, layers, sliced, SolveOptions(timing="shared-noc"), solve)
            for _ in range(2)]
    assert runs[0].forced == runs[1].forced and runs[0].trials == runs[1].trials
    assert runs[0].best is not None and runs[1].best is not None
    assert runs[0].best[1].choice == runs[1].best[1].choice
    assert runs[0].best[1].program == runs[1].best[1].program


@settings(max_examples=4, deadline=None)
@given(st.integers(4, 6), st.integers(0, 10_000), st.sampled_from(TIMINGS))
def test_a_start_gives_each_class_its_middle_pair_or_one_no_worse(layer_count, seed, timing):
    instance, layers, sliced = _decoder(layer_count, seed, plans=3)
    whole = solve(instance, FINAL, SolveOptions(timing=timing))
    classes = op_classes(layers, 3)
    costs = spaced_costs(sliced)
    start = start_pairs(whole, layers, costs, classes)
    middle = len(layers.runs) // 2
    assert set(start) == set(classes)  # an undominated cost no worse always exists
    for (phase, offset), cost in start.items():
        assert cost in costs[classes[phase, offset][0]]
        j = layers.runs[middle - middle % layers.period + phase][0] + offset
        choice = whole.choice[j]
        own = next(spaced_cost(*u) for u in pair_uses(instance.ops[j], instance.chip)
                   if (u[0].id, u[1].id) == (choice.preload, choice.exec))
        numbers = ("run", "load", "exec_demand", "load_demand", "load_space", "held_space")
        assert all(getattr(cost, k) <= getattr(own, k) for k in numbers)


@settings(max_examples=4, deadline=None)
@given(st.integers(4, 6), st.integers(0, 10_000), st.sampled_from(TIMINGS))
def test_the_descent_from_a_plan_is_no_slower_than_elk_full_at_its_pairs(layer_count, seed,
                                                                       timing):
    instance, layers, sliced = _decoder(layer_count, seed, plans=3)
    options = SolveOptions(timing=timing)
    whole = solve(instance, FINAL, options)
    descent = descend(instance, layers, sliced, options, solve, start=whole)
    classes = op_classes(layers, 3)
    forced = start_pairs(whole, layers, spaced_costs(sliced), classes)
    at_start = solve(narrowed(sliced, classes, forced), FINAL, options)
    _checked(descent, best_tiling(instance, layers, at_start, evaluate_plan(at_start)), sliced,
             classes)
