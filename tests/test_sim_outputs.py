"""Lowering round trip, device-program files, Chrome traces, plots and the two commands."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from elk_opt.cli import main
from elk_opt.errors import InputError
from elk_opt.evaluate import evaluate
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.io import save_plan
from elk_opt.lower import (
    ExecuteCall,
    PreloadCall,
    device_program_from_dict,
    device_program_to_dict,
    load_device_program,
    lower,
)
from elk_opt.methods import solve
from elk_opt.simulator import simulate, simulate_program
from elk_opt.simulator.trace import trace_events
from tests.test_simulator import mesh_of, random_plans


@settings(max_examples=60)
@given(random_plans())
def test_lowering_round_trips(plan):
    dp = lower(plan)
    again = device_program_from_dict(json.loads(json.dumps(device_program_to_dict(dp))))
    assert again == dp
    assert dp.plan_program() == plan.program
    assert dp.choice() == plan.choice
    for c in dp.calls:  # release times become not_before_ns on their call
        kind = "P" if isinstance(c, PreloadCall) else "E"
        assert c.not_before_ns == plan.release_ns.get((kind, c.op), 0)
    assert simulate_program(again).makespan_ns == simulate(plan).makespan_ns


def test_lowering_splits_executes_and_maps_tiles():
    instance = synthetic_instance(ops=12, plans=3, seed=0)
    plan = solve(instance, "basic")
    dp = lower(plan)
    assert dp.scheme == "in_order" and dp.tile_to_core == tuple(range(instance.chip.cores))
    for c in dp.calls:
        if isinstance(c, ExecuteCall):
            op, choice = instance.ops[c.op], plan.choice[c.op]
            assert c.wait == f"done{c.op}"
            assert c.distribute_ns == op.warmup_ns[(choice.preload, choice.exec)]
            assert c.local_ns == op.exec_by_id[choice.exec].time_ns
    mesh = lower(plan, mesh_of(instance.chip))
    assert mesh.scheme == "boustrophedon" and sorted(mesh.tile_to_core) == list(
        range(instance.chip.cores))
    cols = mesh.chip.noc.mesh_cols
    for a, b in zip(mesh.tile_to_core, mesh.tile_to_core[1:], strict=False):  # neighbours
        assert abs(a // cols - b // cols) + abs(a % cols - b % cols) == 1


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["program"][-1].update(wait="done0"), "own preload"),
    (lambda d: d["program"].reverse(), "comes before"),
    (lambda d: d["program"].pop(), "every op"),
    (lambda d: d["mapping"].update(tile_to_core=[0] * len(d["mapping"]["tile_to_core"])),
     "permutation"),
    (lambda d: d["program"][0].update(call="prefetch"), "preload_async"),
    (lambda d: d["program"][0].update(load_ns=-1), "load_ns"),
])
def test_bad_device_programs_are_rejected(edit, message):
    plan = solve(synthetic_instance(ops=4, plans=2, seed=0), "basic")
    raw = device_program_to_dict(lower(plan))
    edit(raw)
    with pytest.raises(InputError, match=message):
        device_program_from_dict(raw, "dp.json")


def check_trace(trace: dict) -> None:
    """Chrome trace-event rules Perfetto relies on, and the tracks' own invariants."""
    events = trace["traceEvents"]
    slices = defaultdict(list)
    for e in events:
        assert e["ph"] in {"X", "C", "M"} and isinstance(e["name"], str) and "pid" in e
        if e["ph"] == "X":
            assert e["ts"] >= 0 and e["dur"] >= 0 and "tid" in e
            slices[e["tid"]].append((e["ts"], e["ts"] + e["dur"], e["name"]))
        if e["ph"] == "C":
            assert e["ts"] >= 0
            assert all(isinstance(v, int | float) for v in e["args"].values())
    loads = sorted(slices[1])
    for (_s0, e0, _), (s1, _e1, _) in zip(loads, loads[1:], strict=False):
        assert s1 >= e0 - 1e-6  # one load at a time
    executes = sorted(s for s in slices[2] if s[2].startswith("E"))
    for (_s0, e0, _), (s1, _e1, _) in zip(executes, executes[1:], strict=False):
        assert s1 >= e0 - 1e-6  # one execute at a time
    for start, end, name in slices[2]:
        if not name.startswith("E"):  # phases nest inside their execute
            assert any(s - 1e-6 <= start and end <= e + 1e-6 for s, e, _ in executes), name
    names = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert names == {"preload (DMA queue)", "execute"}
    assert {e["name"] for e in events if e["ph"] == "C"} == {"bandwidth GB/s",
                                                               "SRAM per core KiB"}


@settings(max_examples=30)
@given(random_plans(), st.sampled_from(["none", "port", "full"]))
def test_traces_are_valid(plan, sharing):
    trace = trace_events(simulate(plan, sharing=sharing))
    check_trace(json.loads(json.dumps(trace)))


def test_simulate_and_lower_commands(tmp_path, capsys):
    plan = solve(synthetic_instance(ops=24, plans=3, seed=5), "elk-dyn")
    plan_path = tmp_path / "plan.json"
    save_plan(plan_path, plan)
    trace, png = tmp_path / "trace.json", tmp_path / "timeline.png"
    assert main(["simulate", str(plan_path), "--json", "--trace", str(trace),
                 "--plot", str(png)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {"makespan_ns", "hbm_util", "noc_util", "tflops", "sharing"} <= out.keys()
    section_5 = evaluate(plan.instance, plan.choice, plan.program, plan.release_ns,
                         timing="separate-noc").makespan_ns
    assert out["makespan_ns"] >= section_5
    assert out["analytic_makespan_ns"] == plan.claims.makespan_ns
    check_trace(json.loads(trace.read_text()))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["simulate", str(plan_path), "--no-contention", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["makespan_ns"] == section_5
    assert main(["simulate", str(plan_path), "--sharing", "port", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["makespan_ns"] == plan.claims.makespan_ns
    dp_path = tmp_path / "device-program.json"
    assert main(["lower", str(plan_path), "-o", str(dp_path)]) == 0
    assert load_device_program(str(dp_path)).plan_program() == plan.program
    capsys.readouterr()
    assert main(["simulate", str(dp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["makespan_ns"] == out["makespan_ns"]


def test_commands_fail_cleanly(tmp_path, capsys):
    plan_path = tmp_path / "plan.json"
    save_plan(plan_path, solve(synthetic_instance(ops=6, plans=2, seed=0), "basic"))
    assert main(["simulate", str(plan_path), "--chip", "no-such-chip"]) == 2
    assert "unknown chip" in capsys.readouterr().err
    assert main(["simulate", str(plan_path), "--chip", "ipu-pod4-mesh"]) == 2
    assert "cores" in capsys.readouterr().err
    assert main(["simulate", str(tmp_path / "missing.json")]) == 2
    assert main(["lower", str(plan_path), "-o", str(tmp_path / "no" / "dp.json")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "no").exists()


def test_chip_files_swap_the_network(tmp_path, capsys):
    """`--chip file.toml` maps the plan onto a mesh, for `lower` and for a lowered program."""
    instance = synthetic_instance(ops=12, plans=3, seed=2)
    plan_path = tmp_path / "plan.json"
    save_plan(plan_path, solve(instance, "basic"))
    chip = instance.chip
    toml = tmp_path / "mesh.toml"
    toml.write_text(f'name = "test-mesh"\ncores = {chip.cores}\nsram_bytes = {chip.sram_bytes}\n'
                    f"hbm_bytes_per_s = {chip.hbm_bytes_per_s}\nclock_hz = {chip.clock_hz}\n"
                    '[noc]\ntopology = "mesh"\nlink_bytes_per_s = 5_500_000_000\n'
                    "mesh_rows = 32\nmesh_cols = 46\nhbm_ports = 4\n")
    dp_path = tmp_path / "dp.json"
    assert main(["lower", str(plan_path), "-o", str(dp_path), "--chip", str(toml)]) == 0
    dp = load_device_program(str(dp_path))
    assert dp.scheme == "boustrophedon" and dp.chip.name == "test-mesh"
    capsys.readouterr()
    assert main(["simulate", str(plan_path), "--json", "--chip", str(toml)]) == 0
    on_mesh = json.loads(capsys.readouterr().out)
    assert on_mesh["topology"] == "mesh"
    assert main(["simulate", str(dp_path), "--json"]) == 0  # the program keeps its mesh
    assert json.loads(capsys.readouterr().out)["makespan_ns"] == on_mesh["makespan_ns"]
    lowered_flat = tmp_path / "flat.json"
    assert main(["lower", str(plan_path), "-o", str(lowered_flat)]) == 0
    capsys.readouterr()
    assert main(["simulate", str(lowered_flat), "--json", "--chip", str(toml)]) == 0
    assert json.loads(capsys.readouterr().out)["makespan_ns"] == on_mesh["makespan_ns"]
