"""Where study cells run: a local process pool, or an existing Ray or Dask cluster.

Every executor yields `(item, result)` as cells finish, so callers can record each result at
once (resumable studies) and show progress. `fn` must be a picklable top-level function.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from elk_opt.errors import UsageError

EXECUTORS = ("local", "serial", "dask", "ray")


def run_all(fn: Callable[[Any], Any], items: Iterable[Any], executor: str = "local",
            workers: int | None = None, address: str | None = None) -> Iterator[tuple[Any, Any]]:
    items = list(items)
    if not items:
        return iter(())
    if executor == "serial":
        return ((item, fn(item)) for item in items)
    if executor == "local":
        return _local(fn, items, workers or os.cpu_count() or 1)
    if executor == "dask":
        return _dask(fn, items, workers, address)
    if executor == "ray":
        return _ray(fn, items, workers, address)
    raise UsageError(f"unknown executor {executor!r}; choose one of {', '.join(EXECUTORS)}")


def _local(fn: Callable, items: list, workers: int) -> Iterator[tuple[Any, Any]]:
    # spawn, not fork: forking a process whose solver threads hold locks can deadlock
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(items)), mp_context=context) as pool:
        futures = {pool.submit(fn, item): item for item in items}
        for future in as_completed(futures):
            yield futures[future], future.result()


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
                               processes=True, dashboard_address=None)
    client = Client(address or cluster)
    try:
        futures = client.map(fn, items, pure=False)
        index = {f.key: item for f, item in zip(futures, items, strict=True)}
        for future in dask_completed(futures):
            yield index[future.key], future.result()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _ray(fn: Callable, items: list, workers: int | None,
         address: str | None) -> Iterator[tuple[Any, Any]]:
    try:
        import ray
    except ImportError:
        raise UsageError("--executor ray needs the 'ray' package: pip install ray") from None
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, num_cpus=None if address else workers, log_to_driver=False)
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
