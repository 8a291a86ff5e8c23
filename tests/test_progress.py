"""Progress of long work (elk_opt.progress): a tqdm bar when stderr is a terminal, plain lines
with counts, elapsed time and ETA when it is not, nothing when quiet."""

from __future__ import annotations

import io

import pytest
from tqdm import tqdm

from elk_opt import progress
from elk_opt.progress import report_progress, track


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


def test_quiet_shows_nothing_anywhere(capsys):
    with report_progress(3, "gap", enabled=False) as shown:
        shown.write("resuming")
        shown.advance(3, note="[3/3] done")
    assert list(track([1, 2], "x", enabled=False)) == [1, 2]
    assert capsys.readouterr() == ("", "")
