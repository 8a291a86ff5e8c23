"""Elk-Dyn: the paper's inductive operator scheduling with preload order = execution order."""

from __future__ import annotations

import time

from elk_opt.bounds import ideal_bound
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions, make_plan
from heuristics.inductive import schedule_best, weighted_ladders


def solve(instance: Instance, options: SolveOptions) -> Plan:
    started = time.perf_counter()
    found = schedule_best(instance, range(len(instance.ops)), weighted_ladders(instance),
                          options.timing)
    assert found is not None  # the identity order never forces a pending preload
    decisions, _timed, weight = found
    counts = decisions.preload_counts
    return make_plan(instance, decisions.choice, decisions.program, method="elk-dyn",
                     started=started, timing=options.timing, lower_bound_ns=ideal_bound(instance),
                     params={"load_weight": weight, "max_preload_count": max(counts, default=0),
                             "mean_preload_count": round(sum(counts) / max(1, len(counts)), 3)})
