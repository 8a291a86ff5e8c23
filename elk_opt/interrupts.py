"""How elk-opt stops when asked: SIGINT and SIGTERM unwind like exceptions instead of killing
the process where it stands, so temporary files are removed, worker processes are ended and
finished study cells are kept.

A method solving one instance (`elk-opt solve`) runs under `sigint_stops`: there a SIGINT is
a deadline that came early, and the method returns its best plan so far. Native solvers run
in a worker thread while the main thread, which Python hands signals to, polls: a SIGINT
stops the search with its incumbent, a SIGTERM stops it and unwinds once it has stopped
(never while a solver thread still runs, which would abort the process).

CP-SAT registers its own SIGINT handler for each solve (its `catch_sigint_signal`, on by
default) and leaves SIGINT at the system default afterwards; `sigint_restored` puts Python's
handler back, or the first Ctrl-C after an exact solve would kill the process before any
cleanup.

A signal whose handler runs where Python ignores exceptions (a `__del__`, a weakref callback
during garbage collection, importlib's module-lock cleanup) would be lost: Python prints
"Exception ignored in ..." with a traceback and goes on. `install` hooks those exceptions and
sends the signal again a moment later, when the main thread is back in ordinary code.
"""

from __future__ import annotations

import _thread
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType


class Terminated(BaseException):
    """SIGTERM arrived. A BaseException, like KeyboardInterrupt, so that `except Exception`
    (a study recording a failing method) does not swallow it."""


def exit_code(interrupt: BaseException) -> int:
    """The shell's convention: 128 + the signal number."""
    number = signal.SIGTERM if isinstance(interrupt, Terminated) else signal.SIGINT
    return 128 + int(number)


def signal_name(interrupt: BaseException) -> str:
    return "SIGTERM" if isinstance(interrupt, Terminated) else "SIGINT"


_terminated = threading.Event()  # a SIGTERM arrived since `install`


def terminated() -> bool:
    """Whether a SIGTERM arrived since `install`. A library may turn the Terminated raised
    inside it into an error of its own: OR-Tools' native modules, imported when the signal
    lands, raise ImportError("initialization failed") instead. An error after a SIGTERM is
    then the signal's doing, and the command ends as terminated."""
    return _terminated.is_set()


def _raise_terminated(_signum: int, _frame: FrameType | None) -> None:
    _terminated.set()
    raise Terminated


REDELIVERY_DELAY_S = 0.01  # long enough for the code that ignored the signal to return


def _signal_lost_in(exc_type: type[BaseException]) -> signal.Signals | None:
    if issubclass(exc_type, Terminated):
        return signal.SIGTERM
    if issubclass(exc_type, KeyboardInterrupt):
        return signal.SIGINT
    return None


def _send_later(thread: int, number: signal.Signals) -> None:
    time.sleep(REDELIVERY_DELAY_S)
    signal.pthread_kill(thread, number)


@dataclass(frozen=True)
class _Redelivering:
    """An unraisable hook that sends a lost SIGTERM or SIGINT to the main thread again, from
    a thread of its own: sent from the hook itself, its handler would run inside the hook
    and be ignored once more. The thread is `_thread`'s, not `threading`'s, whose start
    takes locks the interrupted code may hold. Every other exception goes to the hook it
    replaced."""

    previous: Callable[[sys.UnraisableHookArgs], object]

    def __call__(self, unraisable: sys.UnraisableHookArgs) -> None:
        number = _signal_lost_in(unraisable.exc_type)
        main = threading.main_thread().ident
        if number is not None and main is not None:
            try:
                _thread.start_new_thread(_send_later, (main, number))
                return
            except RuntimeError:  # no new threads at interpreter shutdown
                pass
        self.previous(unraisable)


def install() -> None:
    """Make SIGTERM raise Terminated and SIGINT raise KeyboardInterrupt in the main thread,
    and neither get lost where Python ignores exceptions."""
    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread can set handlers (elk-opt called from a thread)
    _terminated.clear()
    signal.signal(signal.SIGTERM, _raise_terminated)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if not isinstance(sys.unraisablehook, _Redelivering):
        sys.unraisablehook = _Redelivering(sys.unraisablehook)


_stop = threading.Event()  # a SIGINT asked the running method to stop (sigint_stops)
_stopping_depth = [0]


def stop_requested() -> bool:
    """Whether, inside `sigint_stops`, a SIGINT asked the running method to stop with its best
    so far: every deadline (elk_opt.deadline) reads it as its time being up."""
    return _stopping_depth[0] > 0 and _stop.is_set()


def stopping() -> bool:
    """Whether a `sigint_stops` block is running (SIGINT then stops, not raises)."""
    return _stopping_depth[0] > 0


def _request_stop(_signum: int, _frame: FrameType | None) -> None:
    if _stop.is_set():  # a second Ctrl-C: stop now, whatever is running
        raise KeyboardInterrupt
    _stop.set()


@contextmanager
def sigint_stops() -> Iterator[None]:
    """Within: SIGINT asks the method running to stop and return its best plan so far (a
    deadline that came early) instead of raising KeyboardInterrupt; a second SIGINT raises it.
    Native solvers are stopped by their wait loops (formulations.cpsat_run, highs_run), which
    poll `stop_requested`. Nests; only the main thread can set handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _request_stop)
    if _stopping_depth[0] == 0:
        _stop.clear()
    _stopping_depth[0] += 1
    try:
        yield
    finally:
        _stopping_depth[0] -= 1
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


@contextmanager
def stop_signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back during a block that must not be cut short; they are
    delivered when it ends. Processes started inside inherit the hold."""
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


@contextmanager
def sigint_restored() -> Iterator[None]:
    """Run a block that may call a native solver; afterwards SIGINT is handled as before it."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread can set handlers; native solvers there are Dask's concern
        return
    handler = signal.getsignal(signal.SIGINT)
    try:
        yield
    finally:
        if handler is not None:
            signal.signal(signal.SIGINT, handler)
