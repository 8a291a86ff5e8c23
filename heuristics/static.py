"""The paper's Static baseline (T10 extended): one execute-space budget for the whole model.

For a budget X every op executes with its fastest plan that needs at most X bytes (what rule
R5 charges it at its execute: its execute layout, or its preload layout if larger), and the
remaining SRAM - X bytes are a fixed preload region: each op takes its cheapest preload plan
that fits the region, and preloads are issued in execution order as far ahead as the region
holds them. X sweeps every distinct value at which some op's execute or preload choice changes
(execute-plan sizes, and SRAM minus preload-plan sizes), not a fixed step; the best makespan
under the timing asked for wins (ties: the smaller budget).
"""

from __future__ import annotations

import time

from elk_opt.bounds.cheap import cheap_bound_by
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions, make_plan
from heuristics.budgets import best_budget
from heuristics.free_order import best_over_orders
from heuristics.limits import deadline_of, stopped_params


def solve(instance: Instance, options: SolveOptions) -> Plan:
    """In the instance's order (the default), or with `exec_order` "free" the best over
    candidate orders (heuristics.free_order)."""
    if options.free_order:
        return best_over_orders(instance, options, "static", _in_order)
    return _in_order(instance, options)


def _in_order(instance: Instance, options: SolveOptions) -> Plan:
    started = time.perf_counter()
    deadline = deadline_of(options, started)
    _m, x, choice, program, tried = best_budget(instance, options.timing, deadline)
    stopped = deadline.passed()
    return make_plan(instance, choice, program, method="static", started=started,
                     timing=options.timing,
                     lower_bound_ns=cheap_bound_by(instance, options.timing, deadline),
                     params={"exec_order": "instance", "exec_budget_bytes": x,
                             "budgets_tried": tried, **stopped_params(stopped)})
