"""Slices of a decoder and their plans tiled back onto the whole model (formulations.lns_tiling)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import elk_opt
from elk_opt.api import build_instance
from elk_opt.cli import main
from elk_opt.errors import UsageError
from elk_opt.evaluate import evaluate, evaluate_plan
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.io import load_plan, plan_to_dict, save_instance, save_plan
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


def _slice_plan_files(tmp_path, count: int = 3):
    """A seven-layer synthetic decoder and Elk-Full's plan of its first `count` layers, saved."""
    instance = synthetic_instance(ops=84, plans=4, seed=5, tightness=0.6)
    layers = structure(instance)
    assert layers is not None
    plan = solve(slice_instance(instance, layers, count), "elk-full",
                 SolveOptions(timing="shared-noc"))
    whole, sliced = tmp_path / "whole.json", tmp_path / "slice.plan.json"
    save_instance(whole, instance)
    save_plan(sliced, plan)
    return instance, plan, whole, sliced


def test_elk_opt_tile_writes_the_best_tiling_as_a_plan_verify_accepts(tmp_path, capsys):
    instance, plan, whole, sliced = _slice_plan_files(tmp_path)
    out = tmp_path / "tiled.plan.json"
    assert main(["tile", str(whole), str(sliced), "-o", str(out)]) == 0
    tiled = load_plan(out)
    best = best_tiling(instance, structure(instance), plan, evaluate_plan(plan))
    assert best is not None and tiled.claims is not None
    assert (tiled.choice, tiled.program) == (best[0].choice, best[0].program)
    assert tiled.claims.method == "tiled" and tiled.claims.makespan_ns == best[1].makespan_ns
    assert tiled.claims.params["slice_layers"] == 3
    assert tiled.claims.params["slice_makespan_ns"] == plan.claims.makespan_ns
    assert check(plan_to_dict(tiled)).valid
    assert f"{best[1].makespan_ns:,} ns" in capsys.readouterr().out
    assert elk_opt.tile(instance, plan).program == tiled.program  # the API tiles alike
    # a certificate's plan tiles as the plan does
    cert = tmp_path / "slice.cert.json"
    cert.write_text(json.dumps({"format": "elk-certificate/1", "plan": plan_to_dict(plan)}))
    again = tmp_path / "again.plan.json"
    assert main(["tile", str(whole), str(cert), "-o", str(again)]) == 0
    assert load_plan(again).program == tiled.program


def test_a_plan_that_is_not_a_slice_is_one_line_exit_2_and_nothing_written(tmp_path, capsys):
    instance, plan, whole, sliced = _slice_plan_files(tmp_path)
    out = tmp_path / "tiled.plan.json"
    ops = list(plan.instance.ops)
    ops[14] = replace(ops[14], exec_plans=tuple(replace(e, time_ns=e.time_ns + 1)
                                                for e in ops[14].exec_plans))
    other = tmp_path / "other.plan.json"
    save_plan(other, replace(plan, instance=replace(plan.instance, ops=tuple(ops)),
                             claims=None))
    short = tmp_path / "short.plan.json"
    save_plan(short, solve(slice_instance(instance, structure(instance), 2), "basic",
                           SolveOptions(timing="shared-noc")))
    flat = tmp_path / "flat.json"  # 40 ops: the last layer is a part layer, nothing repeats
    save_instance(flat, synthetic_instance(ops=40, plans=3, seed=2))
    for args, says in (([str(whole), str(other)], "op 14"),
                       ([str(whole), str(short)], "no middle layer"),
                       ([str(flat), str(sliced)], "do not repeat"),
                       ([str(whole), str(whole)], "format")):
        assert main(["tile", *args, "-o", str(out)]) == 2
        err = capsys.readouterr().err
        assert says in err and err.count("\n") == 1, err
        assert not out.exists()
    with pytest.raises(UsageError, match="no middle layer"):
        elk_opt.tile(instance, load_plan(short))
