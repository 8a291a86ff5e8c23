"""Interrupts end a study cleanly: Ctrl-C (SIGINT to the process group) or SIGTERM to elk-opt
stops the pool's workers, keeps the finished cells, prints one line and exits 130 or 143,
leaving no process and no temporary file behind. These run the real command."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.processes import descendants, wait_gone

SUITE = """
[[instance]]
source = "synthetic"
ops = [4, 40]
plans = 4
seed = 1
tightness = 0.5
"""


@pytest.fixture
def start():
    """Start elk-opt in a process group of its own, as a shell does; whatever a failing test
    leaves running is killed at teardown."""
    started: list[subprocess.Popen] = []

    def run(argv: list[str], log: Path) -> subprocess.Popen:
        with log.open("w") as err:  # a file, not a pipe: read while the run goes on
            proc = subprocess.Popen(["elk-opt", *argv], stdout=subprocess.DEVNULL, stderr=err,
                                    start_new_session=True)
        started.append(proc)
        return proc

    yield run
    for proc in started:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def _wait_for(condition, proc: subprocess.Popen, log: Path, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert proc.poll() is None, f"ended before it could be interrupted:\n{log.read_text()}"
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.2)


def _group_is_gone(pgid: int, seconds: float = 15) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def _interrupt(proc: subprocess.Popen, how: str) -> None:
    if how == "SIGINT to the group":
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGTERM)


def _check_clean_end(proc: subprocess.Popen, log: Path, code: int) -> str:
    assert proc.wait(timeout=60) == code, log.read_text()
    assert _group_is_gone(proc.pid), "workers or the resource tracker outlived elk-opt"
    err = log.read_text()
    assert "Traceback" not in err and "leaked" not in err, err
    interrupted = [line for line in err.splitlines() if "interrupted" in line]
    assert len(interrupted) == 1 and err.splitlines()[-1] == interrupted[0], err
    return interrupted[0]


@pytest.mark.parametrize("how, code", [("SIGINT to the group", 130), ("SIGTERM", 143)])
def test_an_interrupted_gap_study_stops_cleanly_and_resumes(tmp_path, start, how, code):
    (tmp_path / "suite.toml").write_text(SUITE)
    out = tmp_path / "study"
    argv = ["gap", "--suite", str(tmp_path / "suite.toml"), "--methods", "basic,cpsat",
            "--workers", "2", "-o", str(out)]
    log = tmp_path / "stderr.txt"
    proc = start([*argv, "--time-limit", "120"], log)
    cells = out / "cells"
    # three quick cells finish; CP-SAT on 40 ops is still searching
    _wait_for(lambda: len(list(cells.glob("*.json"))) == 3, proc, log)
    _interrupt(proc, how)
    line = _check_clean_end(proc, log, code)
    kept = sorted(cells.glob("*.json"))
    assert f"3 of 4 cells done and kept in {cells}" in line
    assert len(kept) == 3 and all(json.loads(p.read_text())["status"] for p in kept)
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]

    resumed = subprocess.run(["elk-opt", *argv, "--time-limit", "2"], capture_output=True,
                             text=True, timeout=300)
    assert resumed.returncode in (0, 1), resumed.stderr
    assert "resuming: 3 of 4 cells already done" in resumed.stderr
    assert resumed.stderr.count("cpsat:") == 1  # only the interrupted cell runs again


def test_an_interrupted_sweep_stops_cleanly(tmp_path, start):
    out = tmp_path / "sweep"
    log = tmp_path / "stderr.txt"
    proc = start(["sweep", "--axis", "hbm", "--values", "0.5,1,2,4,8,16", "--model",
                   "llama2-7b", "--layers", "2", "--batch", "8", "--kv-len", "256",
                   "--methods", "elk-full", "--workers", "2", "-o", str(out)], log)
    _wait_for(lambda: "[sweep 1/6]" in log.read_text(), proc, log)
    os.killpg(proc.pid, signal.SIGINT)
    line = _check_clean_end(proc, log, 130)
    done = int(re.search(r"(\d+) of 6 points done", line).group(1))
    assert done >= 1 and f"written to {out / 'sweep.partial.csv'}" in line
    rows = (out / "sweep.partial.csv").read_text().splitlines()
    assert len(rows) == 1 + done  # the header and every finished point
    assert [p.name for p in out.iterdir()] == ["sweep.partial.csv"]


def _gap_argv(tmp_path: Path, methods: str) -> list[str]:
    (tmp_path / "suite.toml").write_text(SUITE)
    return ["gap", "--suite", str(tmp_path / "suite.toml"), "--methods", methods,
            "-o", str(tmp_path / "study")]


def test_sigkill_to_a_gap_study_ends_its_workers(tmp_path, start):
    # SIGKILL cannot be caught: the workers must notice their parent died on their own
    log = tmp_path / "stderr.txt"
    argv = [*_gap_argv(tmp_path, "basic,cpsat"), "--workers", "2", "--time-limit", "120"]
    proc = start(argv, log)
    cells = tmp_path / "study" / "cells"
    _wait_for(lambda: len(list(cells.glob("*.json"))) == 3, proc, log)
    proc.send_signal(signal.SIGKILL)  # the main process only, not its group
    proc.wait(timeout=60)
    assert _group_is_gone(proc.pid, seconds=60), "workers or the resource tracker outlived it"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
def test_sigkill_to_a_dask_gap_study_ends_every_process_it_started(tmp_path, start):
    pytest.importorskip("distributed")
    # Dask's workers leave elk-opt's process group, so they are followed by parent pid
    log = tmp_path / "stderr.txt"
    argv = [*_gap_argv(tmp_path, "basic,cpsat"), "--executor", "dask", "--workers", "2",
            "--time-limit", "120"]
    proc = start(argv, log)
    cells = tmp_path / "study" / "cells"
    _wait_for(lambda: len(list(cells.glob("*.json"))) == 3, proc, log)
    started = descendants(proc.pid)
    assert len(started) >= 2, started  # both workers (and their helpers) are traced
    proc.send_signal(signal.SIGKILL)  # the main process only
    proc.wait(timeout=60)
    assert not wait_gone(started, seconds=30), "processes outlived the killed study"


def test_two_identical_gap_runs_into_one_folder_compute_each_cell_once(tmp_path):
    argv = [*_gap_argv(tmp_path, "basic,static,lhs"), "--workers", "1", "--time-limit", "10"]
    runs = [subprocess.Popen(["elk-opt", *argv], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    errs = [run.communicate(timeout=300)[1] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], errs
    computed = sum(len(re.findall(r"^\[\d+/6\] ", err, re.M)) for err in errs)
    assert computed == 6, errs  # 2 instances x 3 methods, each once across both runs
    assert len(list((tmp_path / "study" / "cells").glob("*.json"))) == 6
