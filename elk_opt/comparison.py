"""Every method on one instance, each plan verified, as rows of plain data.

The logic of `elk-opt compare` (which prints these rows) and of `elk_opt.compare`. The Ideal
roofline comes first, as a row of its own: it is a lower bound, not a schedule. Exact methods
start from the best heuristic plan (`elk_opt.warm`; the heuristics already run are reused)
unless `cold`. Every method solves in `options.exec_order` (each must list it; None: each its
own default, recorded per row).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from elk_opt.bounds.ideal import ideal_bound
from elk_opt.errors import UsageError
from elk_opt.evaluate import evaluate_plan
from elk_opt.interrupts import sigint_restored
from elk_opt.io import plan_to_dict
from elk_opt.methods import METHODS, solve, solving_in, with_exec_order
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions
from elk_opt.warm import warm_options
from verify import check


def compare(instance: Instance, methods: list[str], options: SolveOptions,
            progress: bool = False, cold: bool = False) -> list[dict[str, Any]]:
    """One row per method (plus the Ideal row first), as plain data."""
    return compare_plans(instance, methods, options, progress, cold)[0]


def compare_plans(instance: Instance, methods: list[str], options: SolveOptions,
                  progress: bool = False,
                  cold: bool = False) -> tuple[list[dict[str, Any]], dict[str, Plan]]:
    """The rows of `compare`, and the plan behind each method's row (for `compare -o`)."""
    for m in methods:  # before anything runs: a bad name late in the list wastes no solving
        if m not in METHODS:
            raise UsageError(f"unknown method {m!r}; choose from {', '.join(METHODS)}")
        if METHODS[m].family == "bound":
            raise UsageError(f"{m} is a bound, always shown as the Ideal row")
    solving_in(methods, options.exec_order, named=True)
    started = time.perf_counter()
    bound = ideal_bound(instance)
    rows = [{"method": "ideal", "makespan_ns": bound, "valid": None, "wall_s":
             round(time.perf_counter() - started, 3), "bound": True}]
    plans: dict[str, Plan] = {}
    for m in methods:
        if progress:
            print(f"  {m}...", file=sys.stderr, flush=True)
        with sigint_restored():
            chosen = warm_options(instance, m, with_exec_order(m, options), cold=cold,
                                  plans=plans)
            plan = solve(instance, m, chosen)
        assert plan.claims is not None
        plans[m] = plan
        report = check(plan_to_dict(plan))
        schedule = evaluate_plan(plan)
        counts = schedule.preload_count
        rows.append({"method": m, "makespan_ns": plan.claims.makespan_ns,
                     "status": plan.claims.status, "exec_order": chosen.exec_order,
                     "valid": report.valid,
                     "mean_preload_count": round(sum(counts) / max(1, len(counts)), 3),
                     "max_preload_count": max(counts, default=0),
                     "peak_sram_bytes": schedule.peak_sram_bytes,
                     "wall_s": round(plan.claims.wall_s, 3), "bound": False,
                     "warm_start": chosen.warm_start if METHODS[m].family == "exact"
                     else None})
    best = min((r["makespan_ns"] for r in rows if not r["bound"]), default=None)
    for r in rows:
        r["vs_best"] = round(r["makespan_ns"] / best, 4) if best else None
        r["ideal_fraction"] = round(bound / r["makespan_ns"], 4) if r["makespan_ns"] else 1.0
    return rows, plans
