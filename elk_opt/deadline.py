"""A method's time limit as one instant that every phase checks, model building included,
heuristics' searches too.

A SIGINT under `elk_opt.interrupts.sigint_stops` is a deadline that came early: `check`
raises and `left` is 0 once one arrived, whatever the limit."""

from __future__ import annotations

import time
from dataclasses import dataclass

from elk_opt.interrupts import stop_requested


class OutOfTime(Exception):
    """The deadline passed before the phase that checked it could finish."""


@dataclass(frozen=True)
class Deadline:
    at: float | None  # a time.perf_counter() reading; None: no limit

    @classmethod
    def after(cls, limit_s: float | None, started: float) -> Deadline:
        return cls(None if limit_s is None else started + limit_s)

    def left(self) -> float | None:
        """Seconds left (never negative), or None without a limit; 0 once stopped."""
        if stop_requested():
            return 0.0
        return None if self.at is None else max(0.0, self.at - time.perf_counter())

    def passed(self) -> bool:
        """The deadline passed, or a SIGINT asked to stop."""
        return stop_requested() or (self.at is not None and time.perf_counter() >= self.at)

    def check(self) -> None:
        """Raise OutOfTime once the deadline has passed (or a SIGINT asked to stop)."""
        if self.passed():
            raise OutOfTime


NO_DEADLINE = Deadline(None)


def share(ends: float | None, cap: float, parts: int = 1) -> float:
    """`cap` seconds, or less: an even share of what is left before `ends` (a
    time.perf_counter() reading; None: no end) over the `parts` solves still to run."""
    return cap if ends is None else min(cap, (ends - time.perf_counter()) / parts)
