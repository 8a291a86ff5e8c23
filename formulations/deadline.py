"""A method's time limit as one instant that every phase checks, model building included."""

from __future__ import annotations

import time
from dataclasses import dataclass


class OutOfTime(Exception):
    """The deadline passed before the phase that checked it could finish."""


@dataclass(frozen=True)
class Deadline:
    at: float | None  # a time.perf_counter() reading; None: no limit

    @classmethod
    def after(cls, limit_s: float | None, started: float) -> Deadline:
        return cls(None if limit_s is None else started + limit_s)

    def left(self) -> float | None:
        """Seconds left (never negative), or None without a limit."""
        return None if self.at is None else max(0.0, self.at - time.perf_counter())

    def check(self) -> None:
        """Raise OutOfTime once the deadline has passed."""
        if self.at is not None and time.perf_counter() >= self.at:
            raise OutOfTime


NO_DEADLINE = Deadline(None)
