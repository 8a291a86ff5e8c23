"""`ideal`: the paper's Ideal roofline, which is a bound, not a schedule.

The Ideal lets execution and preloading each use all of SRAM and the NoC, so no program of our
semantics attains it in general. This method therefore returns the best schedule we have (the
Elk-Full plan, re-labelled) with `lower_bound_ns` = the Ideal bound (elk_opt.bounds.ideal), status
"heuristic", and params saying so: its makespan is Elk-Full's, and the number it stands for is
the bound. `elk-opt compare` shows the bound alone in its Ideal row.
"""

from __future__ import annotations

import dataclasses
import time

from elk_opt.bounds.ideal import ideal_bound
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions
from heuristics import elk_full


def solve(instance: Instance, options: SolveOptions) -> Plan:
    started = time.perf_counter()
    plan = elk_full.solve(instance, options)
    assert plan.claims is not None
    claims = dataclasses.replace(
        plan.claims, method="ideal", lower_bound_ns=ideal_bound(instance),
        wall_s=time.perf_counter() - started,
        params={"bound_only": True, "schedule_from": "elk-full",
                "note": "the Ideal is lower_bound_ns; the program is Elk-Full's"})
    return dataclasses.replace(plan, claims=claims)
