"""The command line end to end: files in, files out, exit codes, no tracebacks."""

import json
import subprocess
import sys
from dataclasses import replace

import pytest

from elk_opt.cli import main
from elk_opt.methods import heuristics, solve


@pytest.mark.parametrize("timing", ["shared-noc", "separate-noc"])
def test_instance_solve_verify(tmp_path, capsys, timing):
    inst, plan = tmp_path / "i.json", tmp_path / "p.json"
    assert main(["instance", "synthetic", "--ops", "25", "--plans", "3", "--seed", "4",
                 "-o", str(inst)]) == 0
    assert main(["solve", str(inst), "--method", "basic", "--timing", timing,
                 "-o", str(plan)]) == 0
    assert main(["verify", str(plan)]) == 0
    out = capsys.readouterr().out
    assert "basic: makespan" in out and "valid" in out
    doc = json.loads(plan.read_text())
    assert doc["timing"] == timing
    assert doc["claims"]["method"] == "basic" and doc["claims"]["status"] == "heuristic"


def test_synthetic_command_is_deterministic(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for path in (a, b):
        main(["instance", "synthetic", "--ops", "30", "--seed", "9", "-o", str(path)])
    assert a.read_bytes() == b.read_bytes()


@pytest.mark.parametrize("args, message", [
    (["solve", "{missing}", "--method", "basic", "-o", "{out}"], "no such file"),
    (["solve", "{bad}", "--method", "basic", "-o", "{out}"],
     "ops[0].exec_plans[0].space_bytes: must be a non-negative integer, got -5"),
    (["instance", "synthetic", "--ops", "0", "-o", "{out}"],
     "argument --ops: must be a positive integer, got '0'"),
    (["instance", "synthetic", "--tightness", "2", "-o", "{out}"],
     "argument --tightness: must be within [0, 1], got '2'"),
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
    assert message in err and "Traceback" not in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_demo_runs_and_verifies(capsys, tmp_path, monkeypatch):
    """The whole demo, except that its CP-SAT slice (warm-started from the best heuristic plan,
    as the demo does) stops on a budget of deterministic work rather than the demo's 60 s of
    wall clock: the same pipeline and table for a few seconds of CPU, whatever the load."""
    import elk_opt.commands.demo as demo

    def budgeted(instance, method, options):
        if method == "cpsat":
            assert options.warm_plan is not None and options.warm_start in heuristics()
            options = replace(options, time_limit_s=None, work_limit=2.0)
        return solve(instance, method, options)

    monkeypatch.setattr(demo, "solve", budgeted)
    assert main(["demo", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "elk-full" in out and "FAILED" not in out
    assert "planned and timed under shared-noc (docs/spec.md section 5b)" in out
    assert "sect. 5 ns" in out  # each plan also timed under section 5, for reference
    assert ("1-layer slice: CP-SAT proved optimal" in out
            or "1-layer slice: CP-SAT no optimum proved under shared-noc" in out)
    assert json.loads((tmp_path / "basic.plan.json").read_text())["timing"] == "shared-noc"
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


@pytest.fixture
def instance_file(tmp_path):
    path = tmp_path / "i.json"
    main(["instance", "synthetic", "--ops", "4", "--plans", "2", "-o", str(path)])
    return path


def _one_line_exit_2(capsys, argv, *expected):
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for text in expected:
        assert text in err, err
    return err


FLAG_VALUES = [  # (command and flag, value): every command takes its numbers the same way
    (["solve", "{i}", "--method", "basic", "-o", "{o}", "--time-limit"], "nan"),
    (["solve", "{i}", "--method", "basic", "-o", "{o}", "--time-limit"], "inf"),
    (["solve", "{i}", "--method", "basic", "-o", "{o}", "--time-limit"], "-1"),
    (["solve", "{i}", "--method", "basic", "-o", "{o}", "--threads"], "0"),
    (["solve", "{i}", "--method", "basic", "-o", "{o}", "--threads"], "-3"),
    (["solve", "{i}", "--method", "basic", "-o", "{o}", "--gap"], "-1"),
    (["solve", "{i}", "--method", "basic", "-o", "{o}", "--gap"], "5"),
    (["solve", "{i}", "--method", "basic", "-o", "{o}", "--gap"], "nan"),
    (["solve", "{i}", "--method", "basic", "-o", "{o}", "--seed"], "-1"),
    (["solve", "{i}", "--method", "basic", "-o", "{o}", "--timing"], "ideal-noc"),
    (["gap", "-o", "{d}", "--time-limit"], "-1"),
    (["gap", "-o", "{d}", "--time-limit"], "nan"),
    (["gap", "-o", "{d}", "--workers"], "0"),
    (["sweep", "--figure", "19", "-o", "{d}", "--workers"], "-2"),
    (["sweep", "--figure", "19", "-o", "{d}", "--batch"], "0"),
    (["compare", "{i}", "--time-limit"], "inf"),
    (["bound", "{i}", "--threads"], "0"),
    (["bound", "{i}", "--window-time"], "nan"),
    (["bound", "{i}", "--window"], "-1"),
    (["instance", "synthetic", "-o", "{o}", "--seed"], "-1"),
    (["instance", "llama2-7b", "-o", "{o}", "--batch"], "0"),
    (["instance", "llama2-7b", "-o", "{o}", "--layers"], "0"),
    (["demo", "-o", "{d}", "--timing"], "5"),
]


@pytest.mark.parametrize("args, value", FLAG_VALUES)
def test_bad_flag_values_name_the_flag_and_exit_2(tmp_path, capsys, instance_file, args,
                                                  value):
    fill = {"i": str(instance_file), "o": str(tmp_path / "out.json"),
            "d": str(tmp_path / "study")}
    argv = [a.format(**fill) for a in args] + [value]
    _one_line_exit_2(capsys, argv, f"argument {args[-1]}", repr(value).strip("'"))
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "study").exists()


def test_non_finite_method_params_are_refused(capsys, instance_file, tmp_path):
    _one_line_exit_2(capsys, ["solve", str(instance_file), "--method", "polish", "--param",
                              "window_time=NaN", "-o", str(tmp_path / "p.json")],
                     "--param window_time=NaN: must be a finite number")


def test_polish_starts_from_a_plan_file(tmp_path, capsys, instance_file):
    start, out = tmp_path / "start.json", tmp_path / "polished.json"
    assert main(["solve", str(instance_file), "--method", "basic", "-q", "-o", str(start)]) == 0
    assert main(["solve", str(instance_file), "--method", "polish", "--warm-start", str(start),
                 "--work-limit", "0.05", "--threads", "1", "-q", "-o", str(out)]) == 0
    before, after = json.loads(start.read_text()), json.loads(out.read_text())
    assert after["claims"]["params"]["warm_start"] == "basic"
    assert after["claims"]["makespan_ns"] <= before["claims"]["makespan_ns"]
    assert main(["verify", str(out)]) == 0


def test_a_warm_start_that_is_no_method_and_no_plan_of_the_instance_is_refused(
        tmp_path, capsys, instance_file):
    other, plan = tmp_path / "other.json", tmp_path / "other-plan.json"
    assert main(["instance", "synthetic", "--ops", "7", "--seed", "3", "-o", str(other)]) == 0
    assert main(["solve", str(other), "--method", "basic", "-q", "-o", str(plan)]) == 0
    out = tmp_path / "p.json"
    _one_line_exit_2(capsys, ["solve", str(instance_file), "--method", "polish",
                              "--warm-start", "elk-fool", "-o", str(out)],
                     "'elk-fool'", "neither a method", "elk-full")
    _one_line_exit_2(capsys, ["solve", str(instance_file), "--method", "polish",
                              "--warm-start", str(plan), "-o", str(out)],
                     str(plan), "not of", str(instance_file))
    assert not out.exists()


@pytest.mark.parametrize("output, message", [
    ("/proc/p.json", "cannot write in /proc"),
    (".", "is a directory"),
    ("", "output path is empty"),
    ("{dir}", "is a directory"),
    ("{dir}/", "is a directory"),
    ("{dir}/missing/p.json", "does not exist"),
])
def test_unwritable_outputs_fail_before_the_work(tmp_path, capsys, instance_file, output,
                                                 message):
    target = output.format(dir=tmp_path)
    _one_line_exit_2(capsys, ["solve", str(instance_file), "--method", "basic", "-o", target],
                     "argument -o/--output", message)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["i.json"]


@pytest.mark.parametrize("command", [["gap"], ["demo"], ["sweep", "--figure", "19"]])
def test_an_output_folder_that_is_a_file_exits_2(capsys, instance_file, command):
    before = instance_file.read_bytes()
    _one_line_exit_2(capsys, [*command, "-o", str(instance_file)], "is not a directory")
    assert instance_file.read_bytes() == before


def test_an_unreachable_cluster_is_one_line(tmp_path, capsys, monkeypatch):
    from elk_opt.studies import executors

    monkeypatch.setattr(executors, "CONNECT_TIMEOUT_S", 1)
    suite = tmp_path / "suite.toml"
    suite.write_text('[[instance]]\nsource = "synthetic"\nops = 3\n')
    _one_line_exit_2(capsys, ["gap", "--suite", str(suite), "--methods", "basic",
                              "--executor", "dask", "--address", "tcp://127.0.0.1:9",
                              "-o", str(tmp_path / "study")],
                     "--address tcp://127.0.0.1:9: cannot reach a Dask scheduler")


def test_a_closed_pipe_ends_quietly(tmp_path, instance_file):
    plan = tmp_path / "p.json"
    main(["solve", str(instance_file), "--method", "basic", "-o", str(plan)])
    for argv in (["simulate", str(plan), "--json"], ["models"], ["--help"]):
        proc = subprocess.Popen(["elk-opt", *argv], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        proc.stdout.close()  # like `| head -c 5` that has already exited
        err = proc.stderr.read()
        code = proc.wait()
        assert "Traceback" not in err and "Exception ignored" not in err, err
        assert code in (0, 141), (argv, code)  # 141: the shell's code for a closed pipe
