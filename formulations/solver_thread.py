"""A native solve in a worker thread, so that signals reach Python while it runs.

Python runs signal handlers in the main thread only, between bytecodes: while the main thread
is inside a native solver, neither a SIGINT's nor a SIGTERM's handler can run. So the solve
runs in a worker thread while the main thread waits in short steps. A stop request (a SIGINT
under `elk_opt.interrupts.sigint_stops`) calls the solver's own stop, which keeps its best
solution and bound. An exception raised in the waiting thread (KeyboardInterrupt,
Terminated) stops the solver too and is raised again only once the worker has ended: a
process that exits while a solver's native threads run aborts ("terminate called without an
active exception"). The worker starts inside the `try` that waits for it, and one that has
not reached the solve when a signal lands skips it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from elk_opt.interrupts import stop_requested

POLL_S = 0.1  # how often the waiting thread wakes up so that a signal's handler can run
T = TypeVar("T")


def run_stoppable(solve: Callable[[], T], stop: Callable[[], None]) -> T:
    """`solve()` in a worker thread (module docstring); `stop()` must be harmless if repeated
    or called before the solve began. An error inside `solve` reaches the caller."""
    result: list[T] = []
    failure: list[BaseException] = []
    done = threading.Event()
    cancelled = threading.Event()  # set before the main thread unwinds: a late start skips

    def work() -> None:
        try:
            if not cancelled.is_set():
                result.append(solve())
        except BaseException as e:  # handed to the caller's thread below
            failure.append(e)
        finally:
            done.set()

    worker = threading.Thread(target=work, daemon=True)
    try:
        worker.start()  # inside the try: a signal landing as it returns still waits below
        while not done.wait(POLL_S):
            if stop_requested():
                stop()
    except BaseException:  # KeyboardInterrupt, Terminated: stop, wait, then unwind
        cancelled.set()
        # a thread without an ident has not reached `work`, which now skips the solve; one
        # with an ident may be solving: it is stopped and waited for, never left running
        while worker.ident is not None and not done.is_set():
            try:
                stop()
                done.wait(POLL_S)
            except KeyboardInterrupt:  # a second Ctrl-C changes nothing
                continue
        raise
    if failure:
        raise failure[0]
    return result[0]
