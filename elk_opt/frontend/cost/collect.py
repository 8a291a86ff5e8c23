"""Measure a cost table on this machine: GEMM with numpy's BLAS, memory copies with numpy.

The GEMM grid covers (batch, m, n, k) for float32 and float64 up to 2 x 512^3 flop (larger
products saturate, and the table extrapolates at the saturated throughput); copies cover sizes
from 1 KiB to 64 MiB with one and two threads copying at once (`devices`). Each point is the
best of several timed repetitions lasting at least `min_s` seconds in all.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from elk_opt.frontend.cost.table import NOC_KIND, TABLE_FORMAT

FULL = {"sizes": (16, 64, 256, 1024), "batches": (1, 8), "copy_exp": range(10, 27, 2),
        "min_s": 0.01, "max_flops": 2 * 512**3}
QUICK = {"sizes": (16, 128), "batches": (1,), "copy_exp": range(10, 19, 4), "min_s": 0.002,
         "max_flops": 2 * 128**3}


def _best_time(fn: Callable[[], Any], min_s: float) -> float:
    fn()  # warm up
    best, spent, runs = float("inf"), 0.0, 0
    while spent < min_s or runs < 3:
        t = time.perf_counter()
        fn()
        dt = time.perf_counter() - t
        best, spent, runs = min(best, dt), spent + dt, runs + 1
    return max(best, 1e-9)


def collect(quick: bool = False, progress: bool = True) -> dict[str, Any]:
    grid = QUICK if quick else FULL
    rng = np.random.default_rng(0)
    gemm = []
    for dtype, name in ((np.float32, "fp32"), (np.float64, "fp64")):
        for batch in grid["batches"]:
            for m in grid["sizes"]:
                for n in grid["sizes"]:
                    for k in grid["sizes"]:
                        if 2 * batch * m * n * k > grid["max_flops"]:
                            continue
                        a = rng.standard_normal((batch, m, k)).astype(dtype)
                        b = rng.standard_normal((batch, k, n)).astype(dtype)
                        out = np.empty((batch, m, n), dtype=dtype)
                        dt = _best_time(lambda a=a, b=b, out=out: np.matmul(a, b, out=out),
                                        grid["min_s"])
                        gemm.append({"dtype": name, "batch": batch, "m": m, "n": n, "k": k,
                                     "flops_per_s": 2.0 * batch * m * n * k / dt})
        if progress:
            print(f"  gemm {name}: {len(gemm)} points", file=sys.stderr)
    collectives = []
    for exp in grid["copy_exp"]:
        size = 2 ** exp
        for devices in (1, 2):
            srcs = [np.ones(size, dtype=np.uint8) for _ in range(devices)]
            dsts = [np.empty(size, dtype=np.uint8) for _ in range(devices)]
            with ThreadPoolExecutor(devices) as pool:
                def copy_all(srcs=srcs, dsts=dsts, pool=pool) -> None:
                    list(pool.map(np.copyto, dsts, srcs))
                dt = _best_time(copy_all, grid["min_s"])
            collectives.append({"kind": NOC_KIND, "scheme": "memcpy", "bytes": size,
                                "devices": devices, "bytes_per_s": size / dt})
    if progress:
        print(f"  copies: {len(collectives)} points", file=sys.stderr)
    return {"format": TABLE_FORMAT,
            "machine": {"node": platform.node(), "processor": platform.processor(),
                        "machine": platform.machine(), "cpus": os.cpu_count(),
                        "numpy": np.__version__, "quick": quick,
                        "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
            "gemm": gemm, "collectives": collectives}
