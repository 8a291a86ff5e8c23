"""Elk-Dyn: the paper's inductive operator scheduling with preload order = execution order.

Under shared-noc its allocation and scores see the NoC port and its loads are then held back
where they would slow a NoC-heavy execute more than waiting costs (heuristics.inductive,
heuristics.delays), the preload order kept; last, the chosen schedule's loads are issued
sooner where that pays (heuristics.advances), each with the queue before it. Knobs
(SolveOptions.params, 0 or 1, default 1), for ablations: port_prices, port_score, hold_loads,
preload_region, issue_sooner (heuristics.inductive_best.PortAware); with all five 0 it is the
paper's Elk-Dyn, scored under 5b.
The time limit (or a SIGINT under `elk-opt solve`) ends the search with the best schedule so
far (`stopped` in the params); cut before its first schedule, it returns Basic's plan.
"""

from __future__ import annotations

import time

from elk_opt.bounds.cheap import cheap_bound_by
from elk_opt.errors import UsageError
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions, make_plan
from heuristics.free_order import best_over_orders
from heuristics.inductive_best import (
    PortAware,
    issued_sooner,
    ladder_sets,
    preload_counts,
    preload_regions,
    schedule_best,
)
from heuristics.limits import basic_instead, deadline_of, fallback_for, stopped_params

KNOBS = {"port_prices": "prices", "port_score": "score", "hold_loads": "hold",
         "preload_region": "region", "issue_sooner": "advance"}


def port_aware(options: SolveOptions) -> PortAware:
    for key, value in options.params.items():
        if key not in KNOBS:
            raise UsageError(f"elk-dyn: unknown parameter {key!r}; known: {', '.join(KNOBS)}")
        if value not in (0, 1) or isinstance(value, float):
            raise UsageError(f"elk-dyn: parameter {key} must be 0 or 1, got {value!r}")
    return PortAware(**{KNOBS[k]: bool(v) for k, v in options.params.items()})


def solve(instance: Instance, options: SolveOptions) -> Plan:
    """In the instance's order (the paper's problem, the default), or with `exec_order`
    "free" the best over candidate orders (heuristics.free_order)."""
    if options.free_order:
        return best_over_orders(instance, options, "elk-dyn", _in_order)
    return _in_order(instance, options)


def _in_order(instance: Instance, options: SolveOptions) -> Plan:
    started = time.perf_counter()
    deadline = deadline_of(options, started)
    fallback = fallback_for(instance, options)
    aware = port_aware(options)
    found = schedule_best(instance, range(len(instance.ops)),
                          ladder_sets(instance, options.timing, aware, deadline),
                          options.timing, reorder=False, aware=aware,
                          regions=preload_regions(instance, options.timing, aware, deadline),
                          deadline=deadline)
    if found is None:  # the identity order never forces a pending preload: cut by the limit
        return basic_instead(instance, options, "elk-dyn", started, fallback)
    found = issued_sooner(instance, found, options.timing, reorder=False, aware=aware,
                          deadline=deadline)
    counts = preload_counts(found.program)
    return make_plan(instance, found.choice, found.program, method="elk-dyn",
                     started=started, timing=options.timing,
                     lower_bound_ns=cheap_bound_by(instance, options.timing, deadline),
                     params={"exec_order": "instance", **dict(options.params),
                             **stopped_params(found.stopped),
                             "load_weight": found.load_weight,
                             "port_priced": found.port_priced, "preload_region": found.region,
                             "loads_held_back": found.held_back,
                             "loads_issued_sooner": found.advanced,
                             "max_preload_count": max(counts, default=0),
                             "mean_preload_count": round(sum(counts) / max(1, len(counts)), 3)})
