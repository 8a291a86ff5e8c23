"""Running CP-SAT so that signals stop it at once, whatever the phase of a method.

CP-SAT catches SIGINT itself and returns as if its time limit had passed, leaving no trace
of the interrupt, and a SIGTERM's Python handler cannot run while the main thread is inside
the solver. So `solve` runs CP-SAT in a worker thread, with its own catching off, while the
main thread, which Python hands signals to, polls: once a SIGINT asked the method to stop
(`elk_opt.interrupts.stop_requested`, under `sigint_stops`) it stops the search, which keeps
its best solution and bound; a KeyboardInterrupt or SIGTERM raised in the main thread stops
the search too, and is raised again only once the solver thread has ended (a process that
exits while CP-SAT's threads run aborts: "terminate called without an active exception").

`Interrupt` is the loop form (polish, the window bound): `seen` says a SIGINT arrived, and
the loop keeps what it has.
"""

from __future__ import annotations

import threading

from ortools.sat.python import cp_model

from elk_opt.interrupts import sigint_stops, stop_requested

POLL_S = 0.1  # how often the main thread looks for a stop request


def solve(solver: cp_model.CpSolver, model: cp_model.CpModel) -> int:
    """CP-SAT's status; after a stop request the solver holds its best solution and bound."""
    if threading.current_thread() is not threading.main_thread():
        return solver.solve(model)  # signals go to the main thread: nothing to listen for
    solver.parameters.catch_sigint_signal = False
    result: list[int] = []
    failure: list[BaseException] = []
    done = threading.Event()
    cancelled = threading.Event()  # set before the main thread unwinds: a late start skips

    def work() -> None:
        try:
            if not cancelled.is_set():
                result.append(solver.solve(model))
        except BaseException as e:  # handed to the caller's thread below
            failure.append(e)
        finally:
            done.set()

    worker = threading.Thread(target=work, daemon=True)
    try:
        worker.start()  # inside the try: a signal landing as it returns still waits below
        while not done.wait(POLL_S):  # wakes up so that a signal's handler can run
            if stop_requested():
                solver.stop_search()  # harmless if repeated, or before the solve began
    except BaseException:  # KeyboardInterrupt, Terminated: stop, wait, then unwind
        # a thread without an ident has not reached `work`, which now skips the solve; one
        # with an ident may be solving: it is stopped and waited for, never left running
        cancelled.set()
        while worker.ident is not None and not done.wait(POLL_S):
            solver.stop_search()
        raise
    if failure:
        raise failure[0]
    return result[0]


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
