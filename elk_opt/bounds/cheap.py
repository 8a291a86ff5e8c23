"""The best lower bound available in linear time, for methods to claim as `lower_bound_ns`.

Which bound holds where (T = the makespan of a plan obeying R5, at any releases and pair
choice):

| bound | module | separate-noc | shared-noc | execution order |
| --- | --- | --- | --- | --- |
| Ideal | elk_opt.bounds.ideal | yes | yes | any |
| HBM cut | elk_opt.bounds.cuts | yes | yes | the instance's |
| port total | elk_opt.bounds.cuts | no | yes | any |
| port cut | elk_opt.bounds.cuts | no | yes | the instance's |
| HBM cut, any order | elk_opt.bounds.cuts | yes | yes | any |
| port cut, any order | elk_opt.bounds.cuts | no | yes | any |

A bound valid for separate-noc holds for shared-noc too (sharing only slows); the port bounds
need the shared port. The default claims the instance-order bounds; `any_order=True` keeps to
the bounds that hold for every order (the any-order cuts are quadratic in the ops). Heavier
bounds (the fluid LP, the ILP's LP relaxation, CP-SAT windows) are in
`formulations/` and `elk-opt bound`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from elk_opt.bounds.cuts import (
    hbm_cut_any_bound,
    hbm_cut_bound,
    port_cut_any_bound,
    port_cut_bound,
    port_total_bound,
)
from elk_opt.bounds.ideal import ideal_bound
from elk_opt.deadline import NO_DEADLINE, Deadline
from elk_opt.problem import Instance, Timing

GRACE_S = 0.1  # past a deadline, the remaining bounds still run if they would take this long


def cheap_bounds(instance: Instance, timing: Timing, *, any_order: bool = False,
                 deadline: Deadline = NO_DEADLINE) -> dict[str, int]:
    """Every linear-time bound that holds for `timing` (and every order if `any_order`); once
    `deadline` passes (a SIGINT passes every deadline), those computed so far, always the
    Ideal, and the rest only while they would end within GRACE_S (each taking as long as the
    slowest so far): microseconds on a small instance, seconds at 20,000 ops."""
    if timing not in ("separate-noc", "shared-noc"):
        raise ValueError(f"unknown timing {timing!r}")
    bounds: list[tuple[str, Callable[[Instance], int]]] = [("ideal", ideal_bound)]
    if instance.ops:
        bounds.append(("hbm-cut-any", hbm_cut_any_bound) if any_order
                      else ("hbm-cut", hbm_cut_bound))
        if timing == "shared-noc":
            bounds.append(("port-total", port_total_bound))
            bounds.append(("port-cut-any", port_cut_any_bound) if any_order
                          else ("port-cut", port_cut_bound))
    out: dict[str, int] = {}
    slowest = 0.0
    for k, (name, bound) in enumerate(bounds):
        if out and deadline.passed() and slowest * (len(bounds) - k) > GRACE_S:
            break
        started = time.perf_counter()
        out[name] = bound(instance)
        slowest = max(slowest, time.perf_counter() - started)
    return out


def best_cheap_bound(instance: Instance, timing: Timing, *, any_order: bool = False) -> int:
    """The largest of `cheap_bounds`: a lower bound on every R5-obeying plan's makespan under
    `timing` (executing in the instance's order unless `any_order`)."""
    return max(cheap_bounds(instance, timing, any_order=any_order).values())


def cheap_bound_by(instance: Instance, timing: Timing, deadline: Deadline, *,
                   any_order: bool = False) -> int | None:
    """`best_cheap_bound` of the bounds computed before `deadline` (None if none was): what a
    method under a time limit claims (a method that may reorder: `any_order`)."""
    return max(cheap_bounds(instance, timing, any_order=any_order, deadline=deadline).values(),
               default=None)
