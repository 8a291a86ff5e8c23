"""Progress of long work (elk_opt.progress): a tqdm bar when stderr is a terminal, plain lines
with counts, elapsed time and ETA when it is not, nothing when quiet, never a byte on stdout;
and an interrupt under a bar still ends with the command's one line and exit 130."""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import pty
import re
import signal
import struct
import subprocess
import termios
import threading
import time
from pathlib import Path

import pytest
from tqdm import tqdm

import elk_opt
from elk_opt import progress
from elk_opt.cli import main
from elk_opt.progress import report_progress, say, track
from elk_opt.studies import eta as eta_module
from elk_opt.studies.eta import Eta, parallel

SUITE = """
[[instance]]
source = "synthetic"
ops = [4, 8]
plans = 4
seed = 1
tightness = 0.5
"""
SLOW_SUITE = SUITE.replace("[4, 8]", "[4, 40]")  # CP-SAT on 40 ops searches for minutes
STAMP = r"\[\d\d:\d\d elapsed(, ETA (\d\d:\d\d|\?))?\]"


class Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def clock(monkeypatch):
    """The progress module's clock, moved by hand."""
    now = [1000.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    return now


# ------------------------------------------------------------------- the helper itself

def test_plain_lines_count_steps_and_tell_elapsed_and_eta(clock):
    out = io.StringIO()
    with report_progress(4, "plan search", unit="op", stream=out, interval_s=0) as shown:
        for k in range(4):
            clock[0] += 5
            shown.advance(status=f"{k + 1} distinct")
    assert out.getvalue().splitlines() == [
        "plan search: 1/4 ops, 1 distinct [00:05 elapsed, ETA 00:15]",
        "plan search: 2/4 ops, 2 distinct [00:10 elapsed, ETA 00:10]",
        "plan search: 3/4 ops, 3 distinct [00:15 elapsed, ETA 00:05]",
        "plan search: 4/4 ops, 4 distinct [00:20 elapsed]",
    ]


def test_plain_count_lines_are_rate_limited_but_the_last_is_shown(clock):
    out = io.StringIO()
    with report_progress(100, "windows", unit="window", stream=out, interval_s=10) as shown:
        for _ in range(100):
            clock[0] += 1
            shown.advance()
    lines = out.getvalue().splitlines()
    assert len(lines) == 10  # one per 10 s of the 100 s, the last at the end
    assert lines[-1] == "windows: 100/100 windows [01:40 elapsed]"


def test_notes_are_each_a_line_and_a_resumed_eta_counts_only_new_steps(clock):
    out = io.StringIO()
    with report_progress(4, "gap", unit="cell", done=2, stream=out, interval_s=3600) as shown:
        shown.write("resuming: 2 of 4 cells already done")
        clock[0] += 30
        shown.advance(note="[3/4] a basic: 10 ns")
        clock[0] += 30
        shown.advance(note="[4/4] a cpsat: 9 ns")
    assert out.getvalue().splitlines() == [
        "resuming: 2 of 4 cells already done",
        "[3/4] a basic: 10 ns [00:30 elapsed, ETA 00:30]",
        "[4/4] a cpsat: 9 ns [01:00 elapsed]",
    ]


def test_a_callers_eta_replaces_the_mean_time_per_step(clock):
    out = io.StringIO()
    left = [None, 42.0]
    with report_progress(3, "reproduce", unit="cell", stream=out, interval_s=3600,
                         eta=lambda: left.pop(0)) as shown:
        clock[0] += 1
        shown.advance(note="[1/3] basic")
        clock[0] += 1
        shown.advance(note="[2/3] static")
        shown.advance(note="[3/3] cpsat")
    assert out.getvalue().splitlines() == ["[1/3] basic [00:01 elapsed, ETA ?]",
                                           "[2/3] static [00:02 elapsed, ETA 00:42]",
                                           "[3/3] cpsat [00:02 elapsed]"]
    term = Terminal()
    with report_progress(2, "gap", unit="cell", stream=term, eta=lambda: 75.0) as shown:
        shown.advance(status="best 9 ns")
    assert "1/2 [00:00<01:15, best 9 ns]" in term.getvalue()


def test_an_exact_cell_left_counts_its_whole_time_limit(clock, monkeypatch):
    monkeypatch.setattr(eta_module.time, "monotonic", lambda: clock[0])
    eta = Eta({"a basic": None, "a static": None, "a cpsat": 11.0, "b cpsat": 11.0}, 2)
    assert eta() is None  # nothing done yet says how long a heuristic takes
    clock[0] += 0.5
    eta.done("a basic", 0.2)
    assert eta() == pytest.approx((11 + 11 + 1.0) / 2)  # 2 workers x 0.5 s per heuristic
    eta.done("a static", 0.2)
    eta.done("a cpsat", 3.0)
    assert eta() == pytest.approx(11 / 2)
    eta.done("b cpsat", 11.0)
    assert eta() == 0
    assert parallel("serial", 4, 10) == 1 and parallel("local", 4, 3) == 3


def test_ticking_shows_elapsed_time_against_the_limit():
    out = io.StringIO()
    with progress.ticking("  cpsat", 60, stream=out, interval_s=0.01):
        deadline = time.monotonic() + 30
        while "of at most" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)  # the call being shown: runs until the drawing thread ticked
    lines = out.getvalue().splitlines()
    assert lines[0] == "  cpsat: running, time limit 60 s"
    assert re.fullmatch(r"  cpsat: \d+ s of at most 60 s", lines[1])
    assert re.fullmatch(r"  cpsat: done in \d+\.\d s \(time limit 60 s\)", lines[-1])
    term = Terminal()
    with progress.ticking("  cpsat", 60, stream=term):
        pass
    assert "of at most 60 s" in term.getvalue() and not tqdm._instances
    quiet = io.StringIO()
    with progress.ticking("  cpsat", 60, stream=quiet, enabled=False):
        pass
    assert quiet.getvalue() == ""


def test_a_terminal_gets_a_tqdm_bar_with_counts_and_notes_above_it():
    term = Terminal()
    with report_progress(3, "gap", unit="cell", stream=term) as shown:
        for k in range(3):
            shown.advance(note=f"[{k + 1}/3] cell {k}", status="best 9 ns")
    text = term.getvalue()
    assert "\r" in text and "gap: 100%" in text and "3/3" in text and "best 9 ns" in text
    assert all(f"[{k + 1}/3] cell {k}" in text for k in range(3))
    assert text.endswith("\n") and not tqdm._instances  # closed, left on a line of its own


def test_an_interrupt_closes_the_bar_where_it_stood():
    term = Terminal()
    with pytest.raises(KeyboardInterrupt), report_progress(5, "sweep", stream=term) as shown:
        shown.advance(2)
        raise KeyboardInterrupt
    assert term.getvalue().rstrip("\n").split("\r")[-1].startswith("sweep:  40%")
    assert term.getvalue().endswith("\n") and not tqdm._instances


def test_track_yields_every_item_and_leaving_early_closes_its_bar(monkeypatch):
    term = Terminal()
    monkeypatch.setattr(progress.sys, "stderr", term)
    assert list(track(range(5), "orders", unit="order")) == list(range(5))
    for k in track(range(5), "orders", unit="order"):
        if k == 2:
            break
    assert not tqdm._instances and "2/5" in term.getvalue()


def test_say_writes_above_an_open_bar(monkeypatch):
    term = Terminal()
    monkeypatch.setattr(progress.sys, "stderr", term)
    for k in track(range(3), "passes", unit="pass"):
        say(f"pass {k}: improved")
    screen = [line.split("\r")[-1].rstrip() for line in term.getvalue().split("\n")]
    assert [line for line in screen if line.startswith("pass ")] == \
        ["pass 0: improved", "pass 1: improved", "pass 2: improved"]
    assert screen[-2].startswith("passes: 100%") and screen[-1] == ""


def test_quiet_shows_nothing_anywhere(capsys):
    with report_progress(3, "gap", enabled=False) as shown:
        shown.write("resuming")
        shown.advance(3, note="[3/3] done")
    assert list(track([1, 2], "x", enabled=False)) == [1, 2]
    say("improved", enabled=False)
    assert capsys.readouterr() == ("", "")


# ------------------------------------------------------------------- the commands

def _suite(tmp_path: Path, text: str = SUITE) -> str:
    (tmp_path / "suite.toml").write_text(text)
    return str(tmp_path / "suite.toml")


def test_gap_shows_a_plain_line_per_cell_on_stderr_only(tmp_path, capsys):
    argv = ["gap", "--suite", _suite(tmp_path), "--methods", "basic,static",
            "--executor", "serial", "-o", str(tmp_path / "g")]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == 4 and all(re.fullmatch(rf"\[{k + 1}/4\] synthetic-\S+ (basic|static): "
                                                rf"[\d,]+ ns heuristic \(\d+\.\d s\) {STAMP}", line)
                                   for k, line in enumerate(lines)), err
    assert "[" not in out and "elapsed" not in out  # stdout: the table only
    assert main([*argv, "--quiet"]) == 0
    out_again, err = capsys.readouterr()
    assert err == "" and out_again == out


def test_sweep_and_reproduce_show_a_plain_line_per_point_or_cell(tmp_path, capsys):
    assert main(["sweep", "--axis", "hbm", "--values", "1,2", "--model", "llama2-7b",
                 "--layers", "1", "--batch", "2", "--kv-len", "64", "--methods", "basic",
                 "--executor", "serial", "-o", str(tmp_path / "s")]) == 0
    out, err = capsys.readouterr()
    assert [line.split(" ns ")[0].split()[:2] for line in err.splitlines()] == \
        [["[sweep", "1/2]"], ["[sweep", "2/2]"]]
    assert re.search(STAMP + "$", err.splitlines()[0]) and "elapsed" not in out
    assert main(["reproduce", "-o", str(tmp_path / "r"), "--models", "llama2-13b",
                 "--batches", "32", "--kv", "2048", "--layers", "1", "--settings", "shared-bsp",
                 "--cost-models", "analytic", "--methods", "basic", "--exact-layers", "none",
                 "--executor", "serial"]) == 0
    out, err = capsys.readouterr()
    assert re.fullmatch(rf"\[1/1\] llama2-13b-\S+ basic: [\d,]+ ns heuristic {STAMP}\n", err)
    assert "elapsed" not in out


def test_an_instance_build_ends_with_its_count_line(tmp_path, capsys):
    argv = ["instance", "llama2-7b", "--layers", "1", "-o", str(tmp_path / "i.json")]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert re.search(r"^plan search: (\d+)/\1 ops, \d+ distinct ops searched \[\d\d:\d\d "
                     r"elapsed\]$", err, re.MULTILINE), err
    assert "plan search" not in out
    assert main([*argv, "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_the_api_is_quiet_unless_asked(capsys):
    elk_opt.build_instance("llama2-7b", layers=1)
    small = elk_opt.synthetic_instance(ops=6, seed=1)
    elk_opt.bound(small, window=3, window_time_s=1, threads=1)
    assert capsys.readouterr() == ("", "")
    elk_opt.build_instance("llama2-7b", layers=1, progress=True)
    elk_opt.bound(small, window=3, window_time_s=1, threads=1, progress=True)
    out, err = capsys.readouterr()
    assert out == "" and "plan search: " in err and "window bound: 2/2 windows" in err


# ------------------------------------------------------------------- a real terminal

class _Pty:
    """elk-opt with stderr on a pseudo-terminal of 100 x 30 (stdout a pipe), read as it runs."""

    def __init__(self, argv: list[str], cwd: Path, size: tuple[int, int] = (30, 100)) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))
        self.proc = subprocess.Popen(["elk-opt", *argv], stdout=subprocess.PIPE, stderr=slave,
                                     cwd=cwd, start_new_session=True)
        os.close(slave)
        self._master, self._chunks = master, []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self._master, 4096)
            except OSError:  # the child closed the terminal
                return
            if not chunk:
                return
            self._chunks.append(chunk)

    @property
    def stderr(self) -> str:
        return b"".join(self._chunks).decode()

    def finish(self, timeout: float = 120) -> tuple[int, str, str]:
        code = self.proc.wait(timeout=timeout)
        out = self.proc.stdout.read().decode()
        self._reader.join(10)
        os.close(self._master)
        return code, out, self.stderr

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)


@pytest.fixture
def terminal():
    started: list[_Pty] = []

    def run(argv: list[str], cwd: Path, **kw) -> _Pty:
        started.append(_Pty(argv, cwd, **kw))
        return started[-1]

    yield run
    for run_ in started:
        run_.kill()


def _screen_lines(raw: str) -> list[str]:
    """What a terminal keeps: per line, the text after its last carriage return."""
    return [line.split("\r")[-1].rstrip() for line in raw.replace("\r\n", "\n").split("\n")]


@pytest.mark.parametrize("size", [(30, 100), (0, 0)], ids=["sized", "unsized pty"])
def test_on_a_terminal_gap_draws_a_bar_and_stdout_stays_clean(tmp_path, terminal, size):
    run = terminal(["gap", "--suite", _suite(tmp_path), "--methods", "basic,static",
                    "--executor", "serial", "-o", "g"], tmp_path, size=size)
    code, out, err = run.finish()
    assert code == 0, err
    assert re.search(r"gap: 100%\|█+\| 4/4 \[\d\d:\d\d<00:00", err), repr(err)
    screen = [line for line in _screen_lines(err) if line]
    assert [line.split()[0] for line in screen[:-1]] == ["[1/4]", "[2/4]", "[3/4]", "[4/4]"]
    assert screen[-1].startswith("gap: 100%")
    assert "\r" not in out and "gap:" not in out and out.startswith("2 instances x 2 methods")


def test_on_a_terminal_quiet_shows_nothing(tmp_path, terminal):
    run = terminal(["gap", "--suite", _suite(tmp_path), "--methods", "basic",
                    "--executor", "serial", "-q", "-o", "g"], tmp_path)
    code, out, err = run.finish()
    assert code == 0 and err == "" and out


def test_an_interrupt_under_a_bar_still_ends_with_one_line_and_exit_130(tmp_path, terminal):
    run = terminal(["gap", "--suite", _suite(tmp_path, SLOW_SUITE), "--methods", "basic,cpsat",
                    "--workers", "2", "--time-limit", "120", "-o", "g"], tmp_path)
    cells = tmp_path / "g" / "cells"
    deadline = time.monotonic() + 120
    while len(list(cells.glob("*.json"))) < 3:  # three quick cells; CP-SAT on 40 ops searches
        assert run.proc.poll() is None and time.monotonic() < deadline, run.stderr
        time.sleep(0.2)
    time.sleep(0.5)  # the third cell's line and the bar are drawn
    os.killpg(run.proc.pid, signal.SIGINT)
    code, _out, err = run.finish(60)
    assert code == 130, err
    screen = [line for line in _screen_lines(err) if line]
    assert screen[-1].startswith("elk-opt gap: interrupted (SIGINT); 3 of 4 cells done"), err
    assert screen[-2].startswith("gap:  75%|") and "3/4" in screen[-2]
    assert "Traceback" not in err and sum("interrupted" in line for line in screen) == 1
