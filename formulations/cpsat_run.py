"""Running CP-SAT so that signals stop it at once, whatever the phase of a method.

CP-SAT catches SIGINT itself and returns as if its time limit had passed, leaving no trace
of the interrupt, and a SIGTERM's Python handler cannot run while the main thread is inside
the solver. So `solve` runs CP-SAT with its own catching off in a worker thread
(formulations.solver_thread): a stop request or a signal stops the search, which keeps its
best solution and bound, and a signal's exception is raised once the solver has returned.

`Interrupt` is the loop form (polish, the window bound): `seen` says a SIGINT arrived, and
the loop keeps what it has.
"""

from __future__ import annotations

import threading

from ortools.sat.python import cp_model

from elk_opt.interrupts import sigint_stops, stop_requested
from formulations.solver_thread import run_stoppable


def solve(solver: cp_model.CpSolver, model: cp_model.CpModel) -> int:
    """CP-SAT's status; after a stop request the solver holds its best solution and bound."""
    if threading.current_thread() is not threading.main_thread():
        return solver.solve(model)  # signals go to the main thread: nothing to listen for
    solver.parameters.catch_sigint_signal = False
    return run_stoppable(lambda: solver.solve(model), solver.stop_search)


class Interrupt:
    """`with Interrupt() as interrupt:` a SIGINT stops the solve in progress and sets `seen`."""

    def __init__(self) -> None:
        self._stops = sigint_stops()

    def __enter__(self) -> Interrupt:
        self._stops.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stops.__exit__(*exc)

    @property
    def seen(self) -> bool:
        return stop_requested()

    def solve(self, solver: cp_model.CpSolver, model: cp_model.CpModel) -> int:
        return solve(solver, model)
