"""Where study cells run: in this process, a local process pool, or a Ray or Dask cluster.

`run_all` is a context manager giving `(item, result)` pairs as cells finish, so callers record
each result at once (resumable studies) and show progress; leaving the block early, by an
interrupt or an error, cancels what has not started and ends every worker process this module
started. `fn` must be a picklable top-level function.

Pool workers ignore SIGINT (they start with it blocked, so a Ctrl-C to the process group during
their start-up cannot kill them either): the main process alone decides when to stop and ends
them. CP-SAT resets SIGINT in a worker after each solve; each cell puts the worker's handling
back (elk_opt.interrupts.sigint_restored). On Linux a pool worker also ends when the process
that started it dies, even by SIGKILL (PR_SET_PDEATHSIG, elk_opt.orphans), so no worker
outlives a killed study; the resource tracker then ends too, when the last holder of its pipe
is gone. The workers of the local Dask cluster need nothing of ours for that: each watches a
pipe from its parent and exits when it closes (distributed's AsyncProcess), which a killed
parent's kernel does; tests/test_interrupts.py kills both kinds of study to check.

`study_lock` keeps two studies from filling one folder at once: the second waits, then finds
the cells the first recorded and runs only what is missing.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from elk_opt.errors import UsageError
from elk_opt.interrupts import STOP_SIGNALS, sigint_restored, stop_signals_held
from elk_opt.orphans import die_with_parent

EXECUTORS = ("local", "serial", "dask", "ray")
CONNECT_TIMEOUT_S = 10  # to reach an existing cluster's scheduler
MANAGER_JOIN_S = 10  # for a stopped local pool's manager thread, once its workers are gone


@contextmanager
def run_all(fn: Callable[[Any], Any], items: Iterable[Any], executor: str = "local",
            workers: int | None = None,
            address: str | None = None) -> Iterator[Iterator[tuple[Any, Any]]]:
    items = list(items)
    if executor not in EXECUTORS:
        raise UsageError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")
    if workers is not None and workers < 1:
        raise UsageError(f"--workers must be a positive integer, got {workers}")
    if not items:
        results: Iterator[tuple[Any, Any]] = iter(())
    elif executor == "serial":
        results = _serial(fn, items)
    elif executor == "local":
        results = _local(fn, items, workers or os.cpu_count() or 1)
    elif executor == "dask":
        results = _dask(fn, items, workers, address)
    else:
        results = _ray(fn, items, workers, address)
    try:
        yield results
    finally:
        if hasattr(results, "close"):
            results.close()  # runs the generator's clean-up now, not when it is collected


def _call(fn: Callable[[Any], Any], item: Any) -> Any:
    with sigint_restored():
        return fn(item)


def _serial(fn: Callable, items: list) -> Iterator[tuple[Any, Any]]:
    for item in items:
        yield item, _call(fn, item)


def _start_worker(parent: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


@contextmanager
def study_lock(folder: Path, say: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold `folder`'s lock (its `.lock` file) for the block; another study holding it is
    waited for (a line through `say` says so). The lock ends with its process, however the
    process ends."""
    path = folder / ".lock"
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            if say is not None:
                say(f"waiting for the study already running in {folder} (pid {holder})")
            fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        try:
            yield
        finally:
            f.seek(0)
            f.truncate()
            fcntl.flock(f, fcntl.LOCK_UN)


def _local(fn: Callable, items: list, workers: int) -> Iterator[tuple[Any, Any]]:
    # spawn, not fork: forking a process whose solver threads hold locks can deadlock
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=min(workers, len(items)), mp_context=context,
                               initializer=_start_worker, initargs=(os.getpid(),))
    started: set[BaseProcess] = set()
    finished = False
    try:
        with stop_signals_held():  # workers start on submit and inherit the hold
            before = set(multiprocessing.active_children())
            futures = {pool.submit(_call, fn, item): item for item in items}
            started = set(multiprocessing.active_children()) - before
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                try:
                    result = future.result()
                except BrokenProcessPool:
                    raise UsageError(f"a worker process died (killed, or out of memory) while "
                                     f"running {futures[future]}; finished cells are kept, "
                                     "run again to resume") from None
                yield futures[future], result
        finished = True
    finally:
        if not finished:
            _end(pool, started)
        pool.shutdown(wait=True, cancel_futures=True)


def _end(pool: ProcessPoolExecutor, workers: set[BaseProcess]) -> None:
    """Stop a pool whose results are no longer wanted: its workers may be mid-solve. Its
    manager thread is joined too, which shutdown(wait=False) forgets: left running at exit,
    it raced CPython's exit hook for the pool (an OSError traceback, Bad file descriptor,
    after a SIGINT to a sweep in CI)."""
    manager = pool._executor_manager_thread
    with stop_signals_held():
        pool.shutdown(wait=False, cancel_futures=True)
        for process in workers:
            process.terminate()
        for process in workers:
            process.join(5)
            if process.is_alive():
                process.kill()
                process.join()
        if manager is not None:
            manager.join(MANAGER_JOIN_S)


def _dask(fn: Callable, items: list, workers: int | None,
          address: str | None) -> Iterator[tuple[Any, Any]]:
    try:
        from distributed import Client, LocalCluster
        from distributed import as_completed as dask_completed
    except ImportError:
        raise UsageError("--executor dask needs the 'distributed' package: "
                         "pip install 'elk-opt[cluster]'") from None
    cluster = None
    if address is None:
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                               processes=True, dashboard_address=None,
                               preload=["elk_opt.studies.dask_worker"])
    try:
        client = Client(address or cluster, timeout=CONNECT_TIMEOUT_S)
    except (OSError, ValueError, TypeError) as e:
        if cluster is not None:
            cluster.close()
        raise UsageError(f"--address {address}: cannot reach a Dask scheduler within "
                         f"{CONNECT_TIMEOUT_S} s ({e})") from None
    futures = []
    finished = False
    try:
        futures = client.map(fn, items, pure=False)
        index = {f.key: item for f, item in zip(futures, items, strict=True)}
        for future in dask_completed(futures):
            yield index[future.key], future.result()
        finished = True
    finally:
        with stop_signals_held():
            if not finished:
                client.cancel(futures)
                if cluster is not None:  # ours: its workers need not report the cancellation
                    with contextlib.suppress(Exception):
                        client.run(_quiet_dask)
                    _quiet_dask()
            client.close()
            if cluster is not None:
                cluster.close()


def _quiet_dask() -> None:
    logging.getLogger("distributed").setLevel(logging.ERROR)


def _ray(fn: Callable, items: list, workers: int | None,
         address: str | None) -> Iterator[tuple[Any, Any]]:
    try:
        import ray
    except ImportError:
        raise UsageError("--executor ray needs the 'ray' package: pip install ray") from None
    started = not ray.is_initialized()
    if started:
        try:
            ray.init(address=address, num_cpus=None if address else workers,
                     log_to_driver=False)
        except ConnectionError as e:
            raise UsageError(f"--address {address}: cannot reach a Ray cluster ({e})") from None
    try:
        remote = ray.remote(fn)
        refs = {remote.remote(item): item for item in items}
        waiting = list(refs)
        while waiting:
            done, waiting = ray.wait(waiting, num_returns=1)
            yield refs[done[0]], ray.get(done[0])
    finally:
        if started:
            ray.shutdown()
