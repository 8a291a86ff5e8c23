"""The paper's schedulers under a free execution order (R2): the same scheduler run on the
instance renumbered into each candidate order (elk_opt.reorder), the best plan kept.

The candidates are the instance's order and Johnson's list order (heuristics.exec_orders), so a
free plan is never worse than the instance-order plan; ties keep the instance's order. A
costly scheduler (Elk-Full) may give a cheap one to screen with (Elk-Dyn): another order is
then scheduled only where the screen's plan in it beats the screen's plan in the instance's
order, so an order that does not pay costs one cheap run, not a second costly one. Each run
gets the time the ones before it left; one the limit leaves no time for is not made. The
claimed bound is one that holds for every order.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from elk_opt.bounds.cheap import cheap_bound_by
from elk_opt.deadline import Deadline
from elk_opt.problem import Instance, Plan
from elk_opt.reorder import reorder, restore
from elk_opt.solution import SolveOptions, make_plan
from heuristics.exec_orders import johnson_order

InOrder = Callable[[Instance, SolveOptions], Plan]


def candidates(instance: Instance) -> list[tuple[str, tuple[int, ...]]]:
    """(name, order) of each distinct candidate execution order, the instance's first."""
    identity = tuple(range(len(instance.ops)))
    out = [("instance", identity)]
    johnson = johnson_order(instance)
    if johnson != identity:
        out.append(("johnson", johnson))
    return out


def best_over_orders(instance: Instance, options: SolveOptions, method: str,
                     solve_in_order: InOrder, screen: InOrder | None = None) -> Plan:
    """`solve_in_order` (a scheduler of the instance's order) over every candidate order,
    those other than the instance's only where `screen` (if given) finds them better."""
    started = time.perf_counter()
    deadline = Deadline.after(options.time_limit_s, started)  # not limits: it imports Basic

    def in_order(run: InOrder, order: tuple[int, ...]) -> Plan:
        left = None if options.time_limit_s is None else \
            max(0.0, options.time_limit_s - (time.perf_counter() - started))
        return run(reorder(instance, order),
                   replace(options, exec_order="instance", time_limit_s=left))

    orders = candidates(instance)
    if screen is not None and len(orders) > 1:
        screened = [in_order(screen, order).claims.makespan_ns  # type: ignore[union-attr]
                    for _name, order in orders]
        orders = [orders[0]] + [o for o, m in zip(orders[1:], screened[1:], strict=True)
                                if m < screened[0]]
    best: tuple[int, str, Plan] | None = None
    tried = 0
    for name, order in orders:
        if best is not None and deadline.passed():
            break
        sub = in_order(solve_in_order, order)
        tried += 1
        choice, program, release = restore(order, sub.choice, sub.program, sub.release_ns)
        makespan = sub.claims.makespan_ns  # type: ignore[union-attr]
        if best is None or makespan < best[0]:
            best = (makespan, name, replace(sub, choice=choice, program=program,
                                                release_ns=release))
    assert best is not None
    _m, name, plan = best
    params = {**dict(plan.claims.params), "exec_order": "free",  # type: ignore[union-attr]
              "order_used": name, "orders_tried": tried}
    return make_plan(instance, plan.choice, plan.program, method=method, started=started,
                     timing=options.timing,
                     lower_bound_ns=cheap_bound_by(instance, options.timing, deadline,
                                                   any_order=True),
                     params=params)
