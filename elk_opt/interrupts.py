"""How elk-opt stops when asked: SIGINT and SIGTERM unwind like exceptions instead of killing
the process where it stands, so temporary files are removed, worker processes are ended and
finished study cells are kept.

CP-SAT registers its own SIGINT handler for each solve (its `catch_sigint_signal`, on by
default) and leaves SIGINT at the system default afterwards; `sigint_restored` puts Python's
handler back, or the first Ctrl-C after an exact solve would kill the process before any
cleanup.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
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


def _raise_terminated(_signum: int, _frame: FrameType | None) -> None:
    raise Terminated


def install() -> None:
    """Make SIGTERM raise Terminated and SIGINT raise KeyboardInterrupt in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return  # only the main thread can set handlers (elk-opt called from a thread)
    signal.signal(signal.SIGTERM, _raise_terminated)
    signal.signal(signal.SIGINT, signal.default_int_handler)


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
