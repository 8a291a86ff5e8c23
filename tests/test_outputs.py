"""Outputs are written whole or not at all: no half-written file, no temporary left behind
(an interrupt included), and none left by a killed writer piles up."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from elk_opt.errors import InputError
from elk_opt.files import check_writable, write_atomic
from elk_opt.interrupts import Terminated


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_failed_write_leaves_nothing(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("before")

    def interrupted(f) -> None:
        f.write("half")
        raise Terminated

    with pytest.raises(Terminated):
        write_atomic(target, interrupted)
    assert target.read_text() == "before"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_temporaries_of_dead_writers_are_removed_by_the_next_write(tmp_path):
    target = tmp_path / "p.json"
    stale = tmp_path / f".p.json.{_dead_pid()}.abc123_x.tmp"
    live = tmp_path / f".p.json.{os.getppid()}.zz9.tmp"  # our parent still runs
    other = tmp_path / f".p.json.x.{_dead_pid()}.abc.tmp"  # another file's: not ours to touch
    for path in (stale, live, other):
        path.write_text("partial")
    write_atomic(target, lambda f: f.write("{}"))
    assert target.read_text() == "{}"
    assert not stale.exists() and live.exists() and other.exists()


def test_sigterm_during_a_write_removes_the_temporary(tmp_path):
    target = tmp_path / "big.json"
    script = textwrap.dedent(f"""
        import sys, time
        from elk_opt import interrupts
        from elk_opt.files import write_atomic
        interrupts.install()

        def slow(f):
            f.write("partial")
            print("writing", flush=True)
            time.sleep(60)

        try:
            write_atomic({str(target)!r}, slow)
        except interrupts.Terminated:
            sys.exit(143)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    assert any(tmp_path.iterdir())  # the temporary exists while writing
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 143
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("path, message", [
    ("", "output path is empty"),
    ("/proc/p.json", "cannot write in /proc"),
    ("{tmp}", "is a directory"),
    ("{tmp}/no/such/dir/p.json", "does not exist"),
])
def test_unwritable_paths_are_one_input_error(tmp_path, path, message):
    target = path.format(tmp=tmp_path)
    with pytest.raises(InputError, match=message):
        check_writable(target)
    with pytest.raises(InputError, match=message):
        write_atomic(target, lambda f: f.write("x"))


# --- where an output lands: devices, FIFOs, links, inputs, standard output (issue 20) ---

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="making device nodes needs root")


def _instance(tmp_path):
    from elk_opt.frontend.synthetic import synthetic_instance
    from elk_opt.io import save_instance

    path = tmp_path / "i.json"
    save_instance(path, synthetic_instance(ops=6, plans=3, seed=1))
    return path


def _plan(tmp_path):
    from elk_opt.cli import main

    plan = tmp_path / "p.json"
    assert main(["solve", str(_instance(tmp_path)), "--method", "basic", "-q", "-o",
                 str(plan)]) == 0
    return plan


def _device(tmp_path, name: str, minor: int):
    """A character device node of our own (1, 3: null-like; 1, 5: zero-like; 1, 7: full-like)."""
    path = tmp_path / name
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    return path


def _elk(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "elk_opt.cli", *args], capture_output=True,
                          text=True, timeout=120, check=False, **kw)


def _one_line(stderr: str) -> None:
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr


def _output_commands(tmp_path) -> dict[str, list[str]]:
    inst, plan = str(_instance(tmp_path)), str(_plan(tmp_path))
    return {"solve": ["solve", inst, "--method", "basic", "-q", "-o"],
            "instance": ["instance", "synthetic", "--ops", "4", "-q", "-o"],
            "lower": ["lower", plan, "-o"],
            "bound": ["bound", inst, "--window", "0", "-o"],
            "compare": ["compare", inst, "--json"],
            "simulate": ["simulate", plan, "--sharing", "none", "--trace"]}


@ROOT_ONLY
def test_a_device_output_is_written_through_never_replaced(tmp_path):
    from elk_opt.cli import main

    null = _device(tmp_path, "null", 3)
    for name, args in _output_commands(tmp_path).items():
        assert main([*args, str(null)]) == 0, name
        assert stat.S_ISCHR(os.lstat(null).st_mode), name
    full = _device(tmp_path, "full", 7)
    assert main([*_output_commands(tmp_path)["solve"], str(full)]) == 2
    assert stat.S_ISCHR(os.lstat(full).st_mode)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_fifo_output_gets_the_whole_plan_and_stays_a_fifo(tmp_path):
    from elk_opt.cli import main

    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert main([*_output_commands(tmp_path)["solve"], str(fifo)]) == 0
    reader.join(timeout=60)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert json.loads(got[0])["format"] == "elk-plan/1"


def test_a_link_output_writes_its_target_and_stays_a_link(tmp_path):
    from elk_opt.cli import main

    target, link = tmp_path / "target.json", tmp_path / "link.json"
    target.write_text("old")
    link.symlink_to(target.name)
    assert main([*_output_commands(tmp_path)["solve"], str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == target.name
    assert json.loads(target.read_text())["format"] == "elk-plan/1"


@pytest.mark.parametrize("command", ["solve", "lower", "bound", "simulate"])
def test_an_output_that_is_an_input_is_refused_and_the_input_kept(tmp_path, capsys, command):
    from elk_opt.cli import main

    args = _output_commands(tmp_path)[command]
    source = next(a for a in args[1:] if a.endswith(".json"))
    before = Path(source).read_bytes()
    link = tmp_path / "alias.json"  # the same file by another name is the same input
    link.symlink_to(source)
    for out in (source, str(link)):
        capsys.readouterr()
        assert main([*args, out]) == 2
        err = capsys.readouterr().err
        _one_line(err)
        assert "is also an input" in err
    assert Path(source).read_bytes() == before


def test_two_outputs_naming_one_file_are_refused(tmp_path, capsys):
    from elk_opt.cli import main

    plan, out = _plan(tmp_path), tmp_path / "x"
    assert main(["simulate", str(plan), "--trace", str(out), "--plot", str(out)]) == 2
    _one_line(capsys.readouterr().err)
    assert not out.exists()


@pytest.mark.parametrize("command", ["solve", "instance", "lower", "bound", "compare",
                                     "simulate"])
def test_dash_is_standard_output_and_messages_go_to_stderr(tmp_path, capsys, monkeypatch,
                                                          command):
    from elk_opt.cli import main

    args = _output_commands(tmp_path)[command]
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main([*args, "-"]) == 0
    out, err = capsys.readouterr()
    assert isinstance(json.loads(out), dict | list), err
    assert not (tmp_path / "-").exists()


def test_only_one_output_can_be_standard_output(tmp_path, capsys):
    from elk_opt.cli import main

    assert main(["simulate", str(_plan(tmp_path)), "--trace", "-", "--plot", "-"]) == 2
    _one_line(capsys.readouterr().err)


def test_a_file_name_longer_than_the_file_system_allows_is_one_line(tmp_path, capsys):
    from elk_opt.cli import main

    args = _output_commands(tmp_path)["solve"]
    capsys.readouterr()
    assert main([*args, str(tmp_path / ("a" * 256))]) == 2
    _one_line(capsys.readouterr().err)
    assert main([*args, str(tmp_path / ("b" * 250))]) == 0  # too long for a temporary's name
    assert {len(name) for name in os.listdir(tmp_path)} >= {250}
    assert 256 not in {len(name) for name in os.listdir(tmp_path)}


def test_closed_stdout_writes_the_plan_and_exits_quietly(tmp_path):
    out = tmp_path / "p.json"
    args = [*_output_commands(tmp_path)["solve"]]
    args.remove("-q")
    done = _elk(*args, str(out), stdout=None, preexec_fn=lambda: os.close(1))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert json.loads(out.read_text())["format"] == "elk-plan/1"
    refused = _elk(*args, "-", stdout=None, preexec_fn=lambda: os.close(1))
    assert refused.returncode == 2
    assert "standard output is closed" in refused.stderr and "Traceback" not in refused.stderr


@ROOT_ONLY
@pytest.mark.parametrize("argv", [["-m", "elk_opt.cli", "models"],
                                  ["-m", "elk_opt.cli", "verify", "{plan}"],
                                  ["-m", "verify", "{plan}"]])
def test_stdout_on_a_full_device_is_one_line_and_exit_2(tmp_path, argv):
    plan = _plan(tmp_path)
    with open(_device(tmp_path, "full", 7), "w") as full:
        done = subprocess.run([sys.executable, *(a.format(plan=plan) for a in argv)],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120,
                              check=False)
    assert done.returncode == 2
    _one_line(done.stderr)
    assert "No space left" in done.stderr


@ROOT_ONLY
def test_an_endless_input_is_read_up_to_its_cap(tmp_path):
    from elk_opt.files import read_bytes

    zero = _device(tmp_path, "zero", 5)
    with pytest.raises(InputError, match="larger than 1,048,576 bytes"):
        read_bytes(zero, 2**20)
    assert read_bytes(_instance(tmp_path), 2**30)[:1] == b"{"


def test_lone_surrogates_in_names_print_escaped(tmp_path, capsys):

    raw = json.loads(_instance(tmp_path).read_text())
    raw["name"], raw["ops"][0]["name"] = "odd\ud800name", "op\udfff"
    inst = tmp_path / "odd.json"
    inst.write_text(json.dumps(raw))
    plan = tmp_path / "odd.plan.json"
    for args in (["solve", str(inst), "--method", "basic", "-o", str(plan)],
                 ["bound", str(inst), "--window", "0"], ["compare", str(inst)],
                 ["plans", str(inst), "--op", "0"], ["lower", str(plan), "-o",
                                                     str(tmp_path / "dp.json")]):
        code = subprocess.run([sys.executable, "-m", "elk_opt.cli", *args], capture_output=True,
                              timeout=120, check=False)
        assert code.returncode == 0 and b"Traceback" not in code.stderr, (args, code.stderr)


@pytest.mark.parametrize("argv", [
    ["gap", "--suite", "small", "-o", "{long}"],
    ["instance", "{long}.onnx", "-q", "-o", "{tmp}/i.json"],
    ["instance", "llama2-7b", "--chip", "{long}", "-q", "-o", "{tmp}/i.json"],
    ["solve", "{long}", "--method", "basic", "-o", "{tmp}/p.json"],
    ["simulate", "{long}"],
    ["verify", "{long}"],
])
def test_names_longer_than_the_file_system_allows_are_one_line(tmp_path, capsys, argv):
    from elk_opt.cli import main

    fill = {"long": str(tmp_path / ("n" * 300)), "tmp": str(tmp_path)}
    assert main([a.format(**fill) for a in argv]) == 2
    _one_line(capsys.readouterr().err)
