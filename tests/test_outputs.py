"""Outputs are written whole or not at all: no half-written file, no temporary left behind
(an interrupt included), and none left by a killed writer piles up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from elk_opt.errors import InputError
from elk_opt.interrupts import Terminated
from elk_opt.io import check_writable, write_atomic


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
        from elk_opt.io import write_atomic
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
