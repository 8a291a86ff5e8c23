"""Progress of long work on stderr: a tqdm bar with counts and an ETA when stderr is a terminal,
plain lines (counts, elapsed, ETA) when it is not (CI logs, pipes, files), nothing when not
wanted.

stdout is never written: commands print their results there, so `--json` output stays clean.
Library code passes `enabled=False` unless its caller asked (`progress=True`); commands ask
unless `--quiet`. Leaving the block by an exception (an interrupt) closes the bar where it
stood, so the command's one "interrupted" line starts on a line of its own.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Protocol, TextIO, TypeVar

from tqdm import tqdm

FALLBACK_SIZE = (80, 24)  # columns and rows of a terminal that reports none
PLAIN_INTERVAL_S = 10.0  # the least time between two plain count lines (notes are not limited)

T = TypeVar("T")


class Progress(Protocol):
    def advance(self, steps: int = 1, *, note: str | None = None,
                status: str | None = None) -> None:
        """Count `steps` more done. `note`: a log line about them, always shown (a study's
        per-cell result); `status`: the work's state now (the bar's postfix, or the tail of a
        plain count line)."""

    def write(self, text: str) -> None:
        """A message that is not a step (on a terminal, above the bar)."""


class _Silent:
    def advance(self, steps: int = 1, *, note: str | None = None,
                status: str | None = None) -> None:
        pass

    def write(self, text: str) -> None:
        pass


class _Bar:
    """tqdm's bar; notes and messages go above it through `tqdm.write`."""

    def __init__(self, total: int, desc: str, unit: str, done: int, stream: TextIO) -> None:
        self._stream = stream
        sizeless = _reports_no_size(stream)
        self._bar = tqdm(total=total, initial=done, desc=desc, unit=unit, file=stream,
                         ncols=FALLBACK_SIZE[0] if sizeless else None,
                         nrows=FALLBACK_SIZE[1] if sizeless else None,
                         dynamic_ncols=not sizeless, leave=True)

    def advance(self, steps: int = 1, *, note: str | None = None,
                status: str | None = None) -> None:
        if status is not None:
            self._bar.set_postfix_str(status, refresh=False)  # drawn by update, rate-limited
        self._bar.update(steps)
        if note is not None:
            self.write(note)  # redraws the bar below it, with the count just made

    def write(self, text: str) -> None:
        tqdm.write(text, file=self._stream)

    def close(self) -> None:
        self._bar.close()


class _Lines:
    """One line per note, and a count line at most every `interval_s` and at the end."""

    def __init__(self, total: int, desc: str, unit: str, done: int, stream: TextIO,
                 interval_s: float) -> None:
        self._total, self._desc, self._unit, self._stream = total, desc, unit, stream
        self._done = self._first = done
        self._interval_s = interval_s
        self._started = self._last = time.monotonic()

    def advance(self, steps: int = 1, *, note: str | None = None,
                status: str | None = None) -> None:
        self._done += steps
        now = time.monotonic()
        if note is not None:
            self.write(f"{note} [{self._times(now)}]")
        elif now - self._last >= self._interval_s or self._done >= self._total:
            state = f", {status}" if status else ""
            self.write(f"{self._desc}: {self._done}/{self._total} {self._unit}s{state} "
                       f"[{self._times(now)}]")

    def write(self, text: str) -> None:
        print(text, file=self._stream, flush=True)
        self._last = time.monotonic()

    def _times(self, now: float) -> str:
        elapsed = now - self._started
        shown = f"{tqdm.format_interval(elapsed)} elapsed"
        if self._done >= self._total:
            return shown
        if self._done == self._first:
            return f"{shown}, ETA ?"
        left = elapsed / (self._done - self._first) * (self._total - self._done)
        return f"{shown}, ETA {tqdm.format_interval(left)}"

    def close(self) -> None:
        pass


def _reports_no_size(stream: TextIO) -> bool:
    """A terminal of size 0 (a pty nobody sized, as some CI runners give) would get no bar
    from tqdm, which follows the reported size."""
    try:
        return os.get_terminal_size(stream.fileno()).columns == 0
    except (AttributeError, OSError, ValueError):
        return False


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


@contextmanager
def report_progress(total: int, desc: str, *, unit: str = "step", done: int = 0,
                    enabled: bool = True, stream: TextIO | None = None,
                    interval_s: float = PLAIN_INTERVAL_S) -> Iterator[Progress]:
    """Show the progress of `total` steps, `done` of them done before (a resumed study).
    `stream`: default the current stderr."""
    if not enabled:
        yield _Silent()
        return
    stream = stream if stream is not None else sys.stderr
    shown = (_Bar(total, desc, unit, done, stream) if _is_terminal(stream)
             else _Lines(total, desc, unit, done, stream, interval_s))
    try:
        yield shown
    finally:
        shown.close()


def say(text: str, *, enabled: bool = True) -> None:
    """A line on stderr that leaves an open bar whole (`tqdm.write`): for messages from inside
    a loop that `track` or `report_progress` shows."""
    if enabled:
        tqdm.write(text, file=sys.stderr)


def track(items: Collection[T], desc: str, *, unit: str = "step",
          enabled: bool = True) -> Iterator[T]:
    """`items`, one step each: `for x in track(xs, "windows", unit="window", enabled=...)`.
    Leaving the loop early closes the bar."""
    with report_progress(len(items), desc, unit=unit, enabled=enabled) as shown:
        for item in items:
            yield item
            shown.advance()
