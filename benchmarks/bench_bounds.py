"""Memory and time of the Ideal bound and of Basic (which reports it) at training scale.

PYTHONPATH=. python benchmarks/bench_bounds.py [--sizes 20000,100000]
                                              [--dense-sizes 2000,5000] [--repeats 3]

Synthetic decoder instances (elk_opt.synthetic, 4 plans per op). Peak memory is tracemalloc's
peak during the call (numpy's buffers included), above what the instance already holds; times
are medians. The baseline, in the same run, is the first implementation of the Ideal (an n x n
descendant matrix, kept as tests.test_bounds.dense_ideal), at sizes where it still fits.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc
from collections.abc import Callable
from functools import partial

from elk_opt.bounds import ideal_bound
from elk_opt.methods import solve
from elk_opt.synthetic import synthetic_instance
from tests.test_bounds import dense_ideal


def measure(call: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(median seconds, peak MiB) of `call`."""
    call()  # warm the instance's cached lookups, as a method's second call would find them
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    tracemalloc.start()
    call()
    _now, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return statistics.median(times), peak / 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="20000,100000")
    ap.add_argument("--dense-sizes", default="2000,5000")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print("| ops | what | median s | peak MiB |")
    print("| --- | --- | --- | --- |")
    dense = [int(x) for x in args.dense_sizes.split(",") if x]
    sizes = [int(x) for x in args.sizes.split(",") if x]
    for n in sorted(set(dense) | set(sizes)):
        instance = synthetic_instance(ops=n, plans=4, seed=0)
        rows = [("ideal_bound", partial(ideal_bound, instance))]
        if n in dense:
            assert dense_ideal(instance) == ideal_bound(instance)
            rows.append(("dense reference (baseline)", partial(dense_ideal, instance)))
        if n in sizes:
            rows.append(("solve basic (reports the bound)", partial(solve, instance, "basic")))
        for what, call in rows:
            seconds, mib = measure(call, args.repeats)
            print(f"| {n:,} | {what} | {seconds:.3f} | {mib:,.1f} |", flush=True)


if __name__ == "__main__":
    main()
