"""The command line end to end: files in, files out, exit codes, no tracebacks."""

import json
import subprocess
import sys

import pytest

from elk_opt.cli import main


def test_instance_solve_verify(tmp_path, capsys):
    inst, plan = tmp_path / "i.json", tmp_path / "p.json"
    assert main(["instance", "synthetic", "--ops", "25", "--plans", "3", "--seed", "4",
                 "-o", str(inst)]) == 0
    assert main(["solve", str(inst), "--method", "basic", "-o", str(plan)]) == 0
    assert main(["verify", str(plan)]) == 0
    out = capsys.readouterr().out
    assert "basic: makespan" in out and "valid" in out
    claims = json.loads(plan.read_text())["claims"]
    assert claims["method"] == "basic" and claims["status"] == "heuristic"


def test_synthetic_command_is_deterministic(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for path in (a, b):
        main(["instance", "synthetic", "--ops", "30", "--seed", "9", "-o", str(path)])
    assert a.read_bytes() == b.read_bytes()


@pytest.mark.parametrize("args, message", [
    (["solve", "{missing}", "--method", "basic", "-o", "{out}"], "no such file"),
    (["solve", "{bad}", "--method", "basic", "-o", "{out}"],
     "ops[0].exec_plans[0].space_bytes: must be a non-negative integer, got -5"),
    (["instance", "synthetic", "--ops", "0", "-o", "{out}"], "--ops must be at least 1"),
    (["instance", "synthetic", "--tightness", "2", "-o", "{out}"], "--tightness"),
    (["instance", "nosuchmodel", "-o", "{out}"], "unknown instance source"),
])
def test_bad_input_is_one_clear_line_and_exit_2(tmp_path, capsys, args, message):
    bad = tmp_path / "bad.json"
    main(["instance", "synthetic", "--ops", "3", "-o", str(bad)])
    raw = json.loads(bad.read_text())
    raw["ops"][0]["exec_plans"][0]["space_bytes"] = -5
    bad.write_text(json.dumps(raw))
    out = tmp_path / "out.json"
    fill = {"missing": str(tmp_path / "missing.json"), "bad": str(bad), "out": str(out)}
    capsys.readouterr()
    assert main([a.format(**fill) for a in args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()


def test_demo_runs_and_verifies(capsys, tmp_path):
    assert main(["demo", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "elk-full" in out and "FAILED" not in out
    assert "1-layer slice: CP-SAT" in out
    for name in ("instance.json", "slice.instance.json", "basic.plan.json",
                 "slice.cpsat.plan.json", "timeline.png", "methods.png"):
        assert (tmp_path / name).stat().st_size > 0, name


def test_console_entry_points(tmp_path):
    inst, plan = tmp_path / "i.json", tmp_path / "p.json"
    main(["instance", "synthetic", "--ops", "5", "-o", str(inst)])
    main(["solve", str(inst), "--method", "basic", "-o", str(plan)])
    for cmd in (["verify", str(plan)], [sys.executable, "-m", "verify", str(plan)]):
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert "valid" in done.stdout
    plan.write_text("{")
    done = subprocess.run(["verify", str(plan)], capture_output=True, text=True)
    assert done.returncode == 2 and "invalid JSON" in done.stderr
