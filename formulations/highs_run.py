"""Running HiGHS in-process the way a command line needs it: silent unless asked, and a
Ctrl-C (SIGINT) stops the search at once with its best solution, as CP-SAT does.

HiGHS prints a banner on stdout when the first solver of a process is created, whatever its
options; `new_highs` sends it to /dev/null (to stderr when verbose). The solve runs in a
worker thread so that the main thread, which Python delivers SIGINT to, can ask HiGHS to stop
through its interrupt callbacks; HiGHS then returns its incumbent and bound with the status
"Interrupted by user".
"""

from __future__ import annotations

import os
import signal
import sys
import threading

import highspy

from elk_opt.interrupts import stopping
from formulations.solver_thread import run_stoppable


def new_highs(verbose: bool) -> highspy.Highs:
    """A solver whose banner and log appear (on stderr) only when `verbose`."""
    sys.stdout.flush()
    saved = os.dup(1)
    target = os.dup(2) if verbose else os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(target, 1)
        h = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(target)
    h.setOptionValue("output_flag", verbose)
    if verbose:  # the log on stderr, so that stdout keeps only a command's results
        h.setOptionValue("log_to_console", False)
        h.cbLogging += _log_to_stderr
    return h


def _log_to_stderr(event: highspy.cb.HighsCallbackEvent) -> None:
    print(event.message, end="", file=sys.stderr)


def run_interruptible(h: highspy.Highs) -> bool:
    """Run the solver; True if a SIGINT stopped it (its best solution is kept).

    Like CP-SAT, it listens for SIGINT during the solve even where the process was started
    with SIGINT ignored (a background job of a script). Under `sigint_stops` a SIGINT that
    arrived before (in model building) stops it at once. A SIGTERM (Terminated) cancels the
    solve and is raised again once HiGHS has returned, never while its threads run
    (formulations.solver_thread, as for CP-SAT).
    """
    h.HandleUserInterrupt = True  # HiGHS's callbacks stop the solve once cancelSolve is called
    listening = threading.current_thread() is threading.main_thread()
    previous = None
    if listening and not stopping():
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupted = False

    def stop() -> None:
        nonlocal interrupted
        interrupted = True
        h.cancelSolve()

    try:
        run_stoppable(h.run, stop)
    except KeyboardInterrupt:
        return True  # HiGHS keeps its incumbent and bound
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    return interrupted
