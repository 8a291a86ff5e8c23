"""Solving CP-SAT models in a loop so that a Ctrl-C (SIGINT) ends the loop, not one solve.

CP-SAT catches SIGINT itself and returns as if its time limit had passed, leaving no trace
of the interrupt, so a method that solves model after model (polish, the window bound) would
go on to the next one. Inside `with Interrupt() as interrupt:` a SIGINT is recorded instead
(`interrupt.seen`) and stops the search in progress; `interrupt.solve` runs CP-SAT in a
worker thread, with its own catching off, so that the main thread, which Python hands
signals to, stays free to act on it. The loop checks `seen` and keeps what it has.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

from ortools.sat.python import cp_model


class Interrupt:
    def __init__(self) -> None:
        self.seen = False
        self._solver: cp_model.CpSolver | None = None
        self._previous = None
        self._listening = False

    def __enter__(self) -> Interrupt:
        self._listening = threading.current_thread() is threading.main_thread()
        if self._listening:
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._listening:
            signal.signal(signal.SIGINT, self._previous)

    def _handle(self, _signum: int, _frame: FrameType | None) -> None:
        self.seen = True
        if self._solver is not None:
            self._solver.stop_search()

    def solve(self, solver: cp_model.CpSolver, model: cp_model.CpModel) -> int:
        """CP-SAT's status; after a SIGINT the solver holds its best solution and bound."""
        if not self._listening:
            return solver.solve(model)
        solver.parameters.catch_sigint_signal = False
        result: list[int] = []
        failure: list[BaseException] = []
        done = threading.Event()

        def work() -> None:
            try:
                result.append(solver.solve(model))
            except BaseException as e:  # handed to the caller's thread below
                failure.append(e)
            finally:
                done.set()

        self._solver = solver
        try:
            if self.seen:
                solver.stop_search()
            threading.Thread(target=work, daemon=True).start()
            while not done.wait(0.1):  # wakes up so that a SIGINT's handler can run
                pass
        finally:
            self._solver = None
        if failure:
            raise failure[0]
        return result[0]
