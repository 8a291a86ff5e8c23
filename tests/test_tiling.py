"""Slices of a decoder and their plans tiled back onto the whole model (formulations.lns_tiling)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from elk_opt.api import build_instance
from elk_opt.evaluate import evaluate, evaluate_plan
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.io import plan_to_dict
from elk_opt.methods import solve
from elk_opt.solution import SolveOptions
from formulations.lns_tiling import best_tiling, slice_instance, slice_layers, structure, tile
from verify import check

TIMINGS = ("separate-noc", "shared-noc")


def test_a_slice_is_the_instance_the_zoo_builds_with_that_many_layers():
    # the head (embedding) and the tail (final norm, LM head) stay; the tail reads the
    # slice's last layer instead of the model's
    whole = build_instance("llama2-13b", batch=16, layers=5, cost_model="elk-paper",
                           noc_occupancy="bsp")
    small = build_instance("llama2-13b", batch=16, layers=3, cost_model="elk-paper",
                           noc_occupancy="bsp")
    layers = structure(whole)
    assert layers is not None and layers.period == 1 and len(layers.runs) == 5
    assert layers.head == 1 and len(whole.ops) - layers.tail == 2
    sliced = slice_instance(whole, layers, 3)
    assert [(op.name, op.inputs, op.exec_plans, op.preload_plans, op.warmup)
            for op in sliced.ops] == [(op.name, op.inputs, op.exec_plans, op.preload_plans,
                                       op.warmup) for op in small.ops]


def test_layers_that_do_not_repeat_have_no_structure():
    assert structure(synthetic_instance(ops=40, plans=3, seed=2)) is None  # a part layer
    assert structure(synthetic_instance(ops=24, plans=3, seed=2)) is None  # two layers only
    assert structure(synthetic_instance(ops=36, plans=3, seed=2)) is not None


@settings(max_examples=12, deadline=None)
@given(st.integers(3, 7), st.integers(0, 10_000), st.sampled_from(TIMINGS),
       st.sampled_from(["basic", "elk-dyn", "elk-full"]), st.data())
def test_a_tiled_plan_is_a_valid_program_of_the_whole_instance(layer_count, seed, timing,
                                                              method, data):
    instance = synthetic_instance(ops=12 * layer_count, plans=3, seed=seed, tightness=0.6)
    layers = structure(instance)
    assert layers is not None
    count = data.draw(st.integers(slice_layers(layers, 1), layer_count))
    sliced = slice_instance(instance, layers, count)
    plan = solve(sliced, method, SolveOptions(timing=timing))
    repeated = data.draw(st.integers(1, count - 2))
    for tiled in tile(instance, layers, plan, evaluate_plan(plan), repeated):
        n = len(instance.ops)
        assert sorted(tiled.program) == sorted([("P", j) for j in range(n)]
                                               + [("E", j) for j in range(n)])
        assert [i for kind, i in tiled.program if kind == "E"] == list(range(n))
        position = {instr: k for k, instr in enumerate(tiled.program)}
        assert all(position["P", j] < position["E", j] for j in range(n))
        report = check(plan_to_dict(tiled))  # R5 included: fit_sram moved what broke it
        assert all(v.rule == "R6" for v in report.violations), report.violations
    best = best_tiling(instance, layers, plan, evaluate_plan(plan))
    if best is not None:
        assert best[1] == evaluate(instance, best[0].choice, best[0].program,
                                   best[0].release_ns, timing=timing)


@settings(max_examples=10, deadline=None)
@given(st.integers(3, 6), st.integers(0, 10_000), st.sampled_from(TIMINGS), st.data())
def test_tiling_a_slice_as_long_as_the_model_gives_its_plan_back(layer_count, seed, timing,
                                                                 data):
    instance = synthetic_instance(ops=12 * layer_count, plans=3, seed=seed, tightness=0.6)
    layers = structure(instance)
    assert layers is not None
    plan = solve(slice_instance(instance, layers, layer_count), "elk-full",
                 SolveOptions(timing=timing))
    repeated = data.draw(st.integers(1, layer_count - 2))
    with_releases, _without = tile(instance, layers, plan, evaluate_plan(plan), repeated)
    assert with_releases.choice == plan.choice
    assert with_releases.program == plan.program
    assert dict(with_releases.release_ns) == dict(plan.release_ns)


def test_a_period_repeated_keeps_its_pairs_and_its_loads_lead():
    # Elk-Full's plan of a four-layer slice, layer 2 repeated onto a seven-layer model:
    # layers 2-5 run layer 2's pairs, and each of their loads is issued the same number of
    # ops before its own execute as in the slice
    instance = synthetic_instance(ops=84, plans=4, seed=5, tightness=0.6)
    layers = structure(instance)
    assert layers is not None and len(layers.runs) == 7
    plan = solve(slice_instance(instance, layers, 4), "elk-full",
                 SolveOptions(timing="shared-noc"))
    tiled, _ = tile(instance, layers, plan, evaluate_plan(plan), 2)

    def lead(program, j):  # executes between a load and its own execute
        executes = [i for kind, i in program[:program.index(("P", j))] if kind == "E"]
        return j - len(executes)

    fitted = evaluate_plan(tiled).peak_sram_bytes <= instance.chip.sram_bytes
    for big in range(2, 6):
        for o in range(12):
            assert tiled.choice[12 * big + o] == plan.choice[24 + o]
            if fitted:
                assert lead(tiled.program, 12 * big + o) == lead(plan.program, 24 + o)
    assert tiled.choice[72:] == plan.choice[36:]  # the slice's last layer ends the model


def _alternating(layer_count: int, seed: int):
    """A synthetic decoder whose odd layers execute 1.5x slower: layers repeat in pairs."""
    instance = synthetic_instance(ops=12 * layer_count, plans=3, seed=seed, tightness=0.6)
    ops = tuple(replace(op, exec_plans=tuple(replace(e, time_ns=e.time_ns * 3 // 2)
                                             for e in op.exec_plans))
                if op.layer % 2 else op for op in instance.ops)
    return replace(instance, ops=ops)


@settings(max_examples=8, deadline=None)
@given(st.integers(6, 9), st.integers(0, 10_000), st.sampled_from(TIMINGS))
def test_layers_that_alternate_are_sliced_and_tiled_by_whole_periods(layer_count, seed,
                                                                     timing):
    instance = _alternating(layer_count, seed)
    layers = structure(instance)
    assert layers is not None and layers.period == 2
    count = slice_layers(layers, 4)
    assert count >= 5 and (layer_count - count) % 2 == 0
    plan = solve(slice_instance(instance, layers, count), "elk-full",
                 SolveOptions(timing=timing))
    for repeated in range(1, count - 2):
        for tiled in tile(instance, layers, plan, evaluate_plan(plan), repeated):
            for big in range(layer_count):  # each layer runs pairs of its own kind
                small = big if big < repeated else (
                    big - (layer_count - count) if big >= layer_count - count + repeated + 2
                    else repeated + (big - repeated) % 2)
                assert small % 2 == big % 2
                assert tiled.choice[12 * big:12 * big + 12] == \
                    plan.choice[12 * small:12 * small + 12]
            report = check(plan_to_dict(tiled))
            assert all(v.rule == "R6" for v in report.violations), report.violations
