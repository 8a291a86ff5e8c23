"""Every lower bound the project computes for an instance, and the best of them.

The logic of `elk-opt bound` (which prints and saves this report) and of `elk_opt.bound`:
- ideal: the paper's Ideal roofline (elk_opt.bounds), instant, valid for every plan;
- lp: the LP relaxation of the ILP model (HiGHS), quadratic in the ops;
- window: consecutive windows of ops, each relaxation bounded by CP-SAT
  (formulations.window_bound); sees SRAM sharing, which the other two ignore.
The LP and window bounds hold for plans that execute in the instance's order (the exact
models' search space); a plan executing in another topological order is bounded by Ideal only.
The solvers load only when their bound is asked for.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from elk_opt.bounds import ideal_bound
from elk_opt.errors import UsageError
from elk_opt.problem import Instance


def lower_bounds(instance: Instance, *, window: int = 12, window_time_s: float = 2.0,
                 lp_max_ops: int = 400, lp_time_s: float = 120.0, threads: int = 2,
                 progress: bool = False) -> dict[str, Any]:
    """`{"instance", "ops", "bounds": [{"bound", "ns", "wall_s", "note"}], "best"}`.

    `window` ops per window (0 skips the window bound), `window_time_s` of CP-SAT per window;
    the LP relaxation runs up to `lp_max_ops` ops, for at most `lp_time_s`. A bound that did
    not finish in time has `ns` None.
    """
    if window < 0 or window_time_s <= 0 or lp_time_s <= 0 or threads < 1:
        raise UsageError("window must be >= 0 and window_time_s, lp_time_s, threads positive")
    n = len(instance.ops)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    rows.append({"bound": "ideal", "ns": ideal_bound(instance),
                 "wall_s": time.perf_counter() - started, "note": "roofline, any execution order"})
    if n <= lp_max_ops:
        from formulations.ilp import lp_bound
        if progress:
            print(f"LP relaxation of {n} ops...", file=sys.stderr)
        started = time.perf_counter()
        value = lp_bound(instance, lp_time_s)
        rows.append({"bound": "lp", "ns": value, "wall_s": time.perf_counter() - started,
                     "note": "LP relaxation of the ILP (instance order)" if value is not None
                     else f"not finished in {lp_time_s:g} s"})
    if window:
        from formulations.window_bound import window_bound
        if progress:
            print(f"window bound, {window} ops per window...", file=sys.stderr)
        wb = window_bound(instance, window, window_time_s, threads, progress=progress)
        rows.append({"bound": f"window{window}", "ns": wb.bound_ns, "wall_s": wb.wall_s,
                     "note": f"{wb.windows} windows, {wb.proven} solved to optimality "
                             "(instance order)"})
    best = max(rows, key=lambda r: r["ns"] if r["ns"] is not None else -1)
    return {"instance": instance.name, "ops": n, "bounds": rows,
            "best": {"bound": best["bound"], "ns": best["ns"]}}
