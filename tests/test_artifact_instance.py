"""`elk-opt instance elk-artifact`: the Elk implementation's measured layer, repeated."""

import json

import pytest

from elk_opt.cli import main
from elk_opt.frontend.artifact import LAYERS, TABLE, artifact_instance
from elk_opt.io import load_instance, plan_to_dict
from elk_opt.methods import solve
from elk_opt.solution import SolveOptions
from formulations.lns_periodic import twin_classes
from verify import check


@pytest.fixture(scope="module")
def layer():
    return load_instance(TABLE)


def test_one_layer_is_the_calibration_layer(layer):
    assert artifact_instance(1).ops == layer.ops  # plans, inputs, layer: everything compared
    assert artifact_instance(1).chip == layer.chip


def test_every_layer_has_the_measured_plans_and_reads_the_one_before(layer):
    n, inst = len(layer.ops), artifact_instance()
    assert len(inst.ops) == LAYERS * n
    # one twin class: polish and the periodic bounds see 40 identical layers
    assert [len(c) for c in twin_classes(inst)] == [LAYERS]
    for k in range(LAYERS):
        ops = inst.ops[k * n:(k + 1) * n]
        assert inst.twin_key(k * n, (k + 1) * n) == layer.twin_key(0, n)
        assert {op.layer for op in ops} == {k}
        assert all(i < k * n + j for j, op in enumerate(ops) for i in op.inputs)
        if k:  # the ops that read the layer input read the last layer's residual add
            readers = [j for j, op in enumerate(ops) if k * n - 1 in op.inputs]
            assert readers == [0, 5, 32]
            assert [op.hbm_bytes for op in ops] == [op.hbm_bytes for op in layer.ops]


@pytest.mark.parametrize("timing", ["shared-noc", "separate-noc"])
def test_its_heuristic_plans_verify(timing):
    inst = artifact_instance(3)
    for method in ("static", "elk-full"):
        plan = solve(inst, method, SolveOptions(timing=timing))
        assert plan.timing == timing and check(plan_to_dict(plan)).valid, method


def test_the_command_writes_it(tmp_path, capsys):
    out = tmp_path / "a.json"
    assert main(["instance", "elk-artifact", "--layers", "2", "-o", str(out)]) == 0
    assert load_instance(out).ops == artifact_instance(2).ops
    assert "elk-artifact-llama2-13b-b32-kv2048-L2: 96 ops" in capsys.readouterr().out
    assert json.loads(out.read_text())["chip"]["sram_bytes"] == 638976


@pytest.mark.parametrize("args, message", [
    (["--layers", "41"], "--layers must be between 1 and 40"),
    (["--chip", "ipu-pod4-hbm3e"], "--chip does not apply"),
    (["--cost-model", "analytic"], "--cost-model does not apply"),
    (["--max-preloads", "4"], "--max-preloads does not apply"),
    (["--batch", "64"], "the data is batch 32, got --batch 64"),
    (["--mode", "prefill"], "the data is mode decode, got --mode prefill"),
])
def test_flags_the_data_fixes_are_refused(tmp_path, capsys, args, message):
    out = tmp_path / "a.json"
    assert main(["instance", "elk-artifact", *args, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.splitlines()) == 1
    assert not out.exists()
