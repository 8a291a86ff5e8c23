"""The time left in a study whose exact cells may each run up to their time limit.

The mean time of the cells done so far says little when most were heuristics that took a
second and the cells left include CP-SAT solves that take their whole limit: `reproduce` once
showed an ETA of 00:01 while a CP-SAT cell ran 11 s. Here a pending exact cell counts its time
limit; a pending other cell counts the mean time other cells took (the run's elapsed worker
time less what its exact cells took, per other cell done); the sum is shared by the workers.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping


class Eta:
    """Called with no argument: seconds left, or None before any non-exact cell is done
    (nothing yet to say how long one takes)."""

    def __init__(self, pending: Mapping[str, float | None], parallel: int) -> None:
        """`pending`: cell name -> its time limit if it is an exact cell, else None."""
        self._pending = dict(pending)
        self._parallel = max(1, parallel)
        self._started = time.monotonic()
        self._exact_s = 0.0
        self._others = 0

    def done(self, name: str, seconds: float | None) -> None:
        """Cell `name` finished after `seconds` of solving (None: none recorded, as for a cell
        that could not run)."""
        if name not in self._pending:
            return
        limit = self._pending.pop(name)
        if limit is None:
            self._others += 1
        else:
            self._exact_s += min(seconds or 0.0, limit)

    def __call__(self) -> float | None:
        exact = sum(limit for limit in self._pending.values() if limit is not None)
        others = sum(limit is None for limit in self._pending.values())
        if not others:
            return exact / self._parallel
        if not self._others:
            return None
        worked = (time.monotonic() - self._started) * self._parallel - self._exact_s
        return (exact + others * max(0.0, worked) / self._others) / self._parallel


def parallel(executor: str, workers: int | None, tasks: int) -> int:
    """How many cells run at once: one in series, else the workers asked (default one per
    CPU; a remote cluster's size is not known here), at most one per task."""
    if executor == "serial":
        return 1
    return max(1, min(workers or os.cpu_count() or 1, tasks))
