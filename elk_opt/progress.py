"""Progress of long work on stderr: a tqdm bar with counts and an ETA when stderr is a terminal,
plain lines (counts, elapsed, ETA) when it is not (CI logs, pipes, files), nothing when not
wanted.

stdout is never written: commands print their results there, so `--json` output stays clean.
Library code passes `enabled=False` unless its caller asked (`progress=True`); commands ask
unless `--quiet`. A caller that knows better than the mean time per step (a study whose exact
cells run up to their time limit) passes `eta`, its own estimate of the time left; `ticking`
shows one long call (an exact solve) as elapsed time against its limit. Leaving the block by an
exception (an interrupt) closes the bar where it stood, so the command's one "interrupted"
line starts on a line of its own.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import Protocol, TextIO, TypeVar

from tqdm import tqdm

FALLBACK_SIZE = (80, 24)  # columns and rows of a terminal that reports none
PLAIN_INTERVAL_S = 10.0  # the least time between two plain count lines (notes are not limited)
BAR_TICK_S = 1.0  # how often `ticking` redraws its bar
ETA_BAR = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{eta}{postfix}]"  # tqdm's, our ETA

Estimate = Callable[[], float | None]  # seconds of work left now; None: unknown

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


class _EtaBar(tqdm):
    """tqdm's bar showing the caller's estimate of the time left (`eta`) for tqdm's own."""

    eta = "?"

    @property
    def format_dict(self) -> dict:
        return {**super().format_dict, "eta": self.eta}


class _Bar:
    """tqdm's bar; notes and messages go above it through `tqdm.write`."""

    def __init__(self, total: int, desc: str, unit: str, done: int, stream: TextIO,
                 eta: Estimate | None = None) -> None:
        self._stream = stream
        self._eta = eta
        sizeless = _reports_no_size(stream)
        make = _EtaBar if eta else tqdm
        self._bar = make(total=total, initial=done, desc=desc, unit=unit, file=stream,
                         ncols=FALLBACK_SIZE[0] if sizeless else None,
                         nrows=FALLBACK_SIZE[1] if sizeless else None,
                         dynamic_ncols=not sizeless, leave=True,
                         bar_format=ETA_BAR if eta else None)

    def advance(self, steps: int = 1, *, note: str | None = None,
                status: str | None = None) -> None:
        if status is not None:
            self._bar.set_postfix_str(status, refresh=False)  # drawn by update, rate-limited
        if self._eta is not None:
            left = self._eta()
            self._bar.eta = "?" if left is None else tqdm.format_interval(left)
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
                 interval_s: float, eta: Estimate | None = None) -> None:
        self._total, self._desc, self._unit, self._stream = total, desc, unit, stream
        self._eta = eta
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
        if self._eta is not None:
            left = self._eta()
        elif self._done == self._first:
            left = None
        else:
            left = elapsed / (self._done - self._first) * (self._total - self._done)
        return f"{shown}, ETA {'?' if left is None else tqdm.format_interval(left)}"

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
                    interval_s: float = PLAIN_INTERVAL_S,
                    eta: Estimate | None = None) -> Iterator[Progress]:
    """Show the progress of `total` steps, `done` of them done before (a resumed study).
    `stream`: default the current stderr. `eta`: the caller's estimate of the time left,
    asked at each step (default: the mean time of the steps done so far, times those left)."""
    if not enabled:
        yield _Silent()
        return
    stream = stream if stream is not None else sys.stderr
    shown = (_Bar(total, desc, unit, done, stream, eta) if _is_terminal(stream)
             else _Lines(total, desc, unit, done, stream, interval_s, eta))
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


@contextmanager
def ticking(desc: str, limit_s: float, *, enabled: bool = True, stream: TextIO | None = None,
            interval_s: float = PLAIN_INTERVAL_S) -> Iterator[None]:
    """Show one long call (an exact solve under a time limit) as elapsed time against
    `limit_s`: a bar redrawn every second on a terminal, else a line when it starts, one every
    `interval_s`, and one when it ends. A thread draws, so the call itself needs no hooks."""
    if not enabled:
        yield
        return
    stream = stream if stream is not None else sys.stderr
    started = time.monotonic()
    stop = threading.Event()
    bar = None
    if _is_terminal(stream):
        bar = tqdm(total=limit_s, desc=desc, file=stream, leave=True,
                   bar_format="{desc}: {n:.0f} s of at most {total:.0f} s |{bar}|",
                   ncols=FALLBACK_SIZE[0] if _reports_no_size(stream) else None)

        def tick() -> None:
            while not stop.wait(BAR_TICK_S):
                bar.n = min(limit_s, time.monotonic() - started)
                bar.refresh()
    else:
        print(f"{desc}: running, time limit {limit_s:g} s", file=stream, flush=True)

        def tick() -> None:
            while not stop.wait(interval_s):
                print(f"{desc}: {time.monotonic() - started:.0f} s of at most {limit_s:g} s",
                      file=stream, flush=True)
    drawer = threading.Thread(target=tick, daemon=True)
    drawer.start()
    try:
        yield
    finally:
        stop.set()
        drawer.join()
        elapsed = time.monotonic() - started
        if bar is not None:
            bar.n = min(limit_s, elapsed)
            bar.close()
        print(f"{desc}: done in {elapsed:.1f} s (time limit {limit_s:g} s)", file=stream,
              flush=True)
