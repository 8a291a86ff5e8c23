"""Elk-Dyn: the paper's inductive operator scheduling with preload order = execution order.

Under shared-noc its loads are then held back where they would slow a NoC-heavy execute more
than waiting costs (heuristics.delays), the preload order kept.
"""

from __future__ import annotations

import time

from elk_opt.bounds import ideal_bound
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions, make_plan
from heuristics.inductive import preload_counts, schedule_best, weighted_ladders


def solve(instance: Instance, options: SolveOptions) -> Plan:
    started = time.perf_counter()
    found = schedule_best(instance, range(len(instance.ops)),
                          weighted_ladders(instance, options.timing), options.timing,
                          reorder=False)
    assert found is not None  # the identity order never forces a pending preload
    counts = preload_counts(found.program)
    return make_plan(instance, found.choice, found.program, method="elk-dyn",
                     started=started, timing=options.timing, lower_bound_ns=ideal_bound(instance),
                     params={"load_weight": found.load_weight, "loads_held_back": found.held_back,
                             "max_preload_count": max(counts, default=0),
                             "mean_preload_count": round(sum(counts) / max(1, len(counts)), 3)})
