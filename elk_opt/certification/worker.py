"""A spawned process that runs the search's solver phases, so the search can end one.

A heuristic has no time limit, a solver may overrun its own while it builds a model, and
CP-SAT catches SIGINT itself (it returns as if its time ran out, leaving no trace of the
signal). Run here, any phase can be stopped at its deadline by ending the process, and the
parent, which only waits, answers SIGINT and SIGTERM at once. The process ignores SIGINT
outside the solvers (a Ctrl-C reaches the whole process group; the parent decides); when the
parent is interrupted it sends the process a SIGINT, which stops a CP-SAT search (`cpsat`,
`polish`, the window bound) with its best so far, and takes that answer if it comes within
HANDOVER_S (as the interrupt's `partial`). The process is killed when the search ends, and
by the kernel when the parent dies, even by SIGKILL (elk_opt.orphans).
Spawned, not forked: forking a process whose solver threads hold locks can deadlock.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from typing import Any

from elk_opt.interrupts import Terminated
from elk_opt.orphans import die_with_parent
from elk_opt.problem import Instance

POLL_S = 0.1  # how often the parent looks at the process while it waits
HANDOVER_S = 2.0  # how long an interrupted parent waits for the phase's best so far
MIN_LIMIT_S = 0.01  # a solve whose `ends` has passed still runs, to hand back a first plan


class TimedOut(Exception):
    """The phase did not answer by its deadline; the process was ended."""


class WorkerEnded(RuntimeError):
    """The process ended without answering (killed, out of memory, or it failed to start)."""


@dataclass(frozen=True)
class Task:
    # "solve": elk_opt.methods.solve(instance, method, options), its time limit up to
    # args["ends"] (a time.perf_counter() reading: one clock for every process) if given;
    # "bounds": lower_bounds; "slice pairs": formulations.slice_pairs.descend with the
    # methods' `solve`
    kind: str
    instance: Instance
    args: dict[str, Any]


def _run(task: Task) -> Any:
    if task.kind == "solve":
        from elk_opt.methods import solve

        options = task.args["options"]
        if "ends" in task.args:  # the limit runs from here: the wait for this process is spent
            options = replace(options, time_limit_s=max(MIN_LIMIT_S,
                                                        task.args["ends"] - time.perf_counter()))
        return solve(task.instance, task.args["method"], options)
    if task.kind == "bounds":
        from elk_opt.bounds.run_all import lower_bounds

        return lower_bounds(task.instance, **task.args)
    if task.kind == "slice pairs":
        from elk_opt.methods import solve
        from formulations.slice_pairs import descend

        return descend(task.instance, **task.args, solve=solve)
    raise ValueError(f"unknown task {task.kind!r}")


def _serve(conn: Connection, parent: int) -> None:
    die_with_parent(parent)  # a killed certify leaves no solve running on
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        try:
            answer = ("ok", _run(task))
        except Exception as e:  # handed to the parent, which raises it
            answer = ("error", e)
        try:
            conn.send(answer)
        except (pickle.PicklingError, TypeError, AttributeError):
            conn.send(("error", RuntimeError(repr(answer[1]))))
        except OSError:  # the parent is gone (elsewhere than Linux, where this process is too)
            return


@contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored in this process for the block (main thread only: elsewhere as is), so
    that a process started in it begins with SIGINT ignored, and Python keeps it so."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class Worker:
    """`with Worker() as w: w.call(Task(...), deadline)`; the process starts on the first call
    (again after a call that timed out) and is killed on leaving the block. One worker may
    serve many searches: its solver libraries are imported once."""

    def __init__(self) -> None:
        self._process: multiprocessing.process.BaseProcess | None = None
        self._conn: Connection | None = None
        self._answered = False  # whether the running process has answered a task

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start the process now (its imports then overlap the caller's own work)."""
        if self._process is not None:
            return
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe()
        process = context.Process(target=_serve, args=(theirs, os.getpid()), daemon=True,
                                  name="elk-opt certify worker")
        with _sigint_ignored():  # inherited: a Ctrl-C while it starts up leaves it be
            process.start()
        theirs.close()
        self._process, self._conn, self._answered = process, ours, False

    def stop(self) -> None:
        if self._process is None:
            return
        self._process.kill()
        self._process.join()
        assert self._conn is not None
        self._conn.close()
        self._process = self._conn = None

    def _hand_over(self) -> Any:
        """Ask the running task to stop (SIGINT) and take its answer if it comes in time."""
        assert self._conn is not None and self._process is not None
        if self._process.is_alive() and self._process.pid is not None:
            os.kill(self._process.pid, signal.SIGINT)
        try:
            if self._conn.poll(HANDOVER_S):
                kind, value = self._conn.recv()
                return value if kind == "ok" else None
        except (EOFError, OSError):  # the process ended without an answer
            pass
        return None

    def _ended(self) -> WorkerEnded:
        """Why no answer came. A process that ends before its first answer with exit code 1
        most often failed as it started: spawned, it imports the caller's script again, and
        a script that calls `certify` outside `if __name__ == "__main__":` then calls it in
        the new process too, which Python refuses (multiprocessing's "safe importing")."""
        assert self._process is not None
        self._process.join(1.0)
        code = self._process.exitcode
        hint = ("; from a script, call certify under `if __name__ == \"__main__\":` (the "
                "worker process imports the script again as it starts)"
                if not self._answered and code == 1 else "")
        return WorkerEnded(f"the certify worker process ended without an answer (exit code "
                           f"{code}){hint}")

    def call(self, task: Task, deadline: float | None) -> Any:
        """The task's result; TimedOut when `deadline` (a time.perf_counter() reading) passes
        first. An exception the task raised is raised here; an interrupt while waiting is
        raised with the task's best so far as its `partial` (None if none came)."""
        self.start()
        assert self._conn is not None and self._process is not None
        try:
            self._conn.send(task)
            while not self._conn.poll(POLL_S if deadline is None else
                                      max(0.0, min(POLL_S, deadline - time.perf_counter()))):
                if deadline is not None and time.perf_counter() >= deadline:
                    raise TimedOut
                if not self._process.is_alive():
                    raise self._ended()
            try:
                kind, value = self._conn.recv()
            except (EOFError, OSError):  # the pipe closed: the process is gone
                raise self._ended() from None
            self._answered = True
        except (KeyboardInterrupt, Terminated) as stop:
            try:
                stop.partial = self._hand_over()  # type: ignore[attr-defined]
            finally:
                self.stop()
            raise
        except BaseException:  # a deadline, a dead process: the task is lost
            self.stop()
            raise
        if kind == "error":
            raise value
        return value
