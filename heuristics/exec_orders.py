"""Execution orders other than the instance's for the paper's schedulers under a free order (R2).

Preloads overlap executes, so a program is a two-stage flow shop: each op is loaded (HBM), then
executed (cores). Without memory limits and with loads issued in execution order, Johnson's
rule minimizes the makespan of such a shop: ops whose load is shorter than their execute first,
by increasing load, then the others by decreasing execute. `johnson_order` applies the rule as
a list scheduler over the DAG: among the ready ops (all inputs executed) the one Johnson ranks
first runs next, ties in the instance's order. An op's times are those of its fastest execute
plan that fits SRAM alone, with that plan's fastest preload (Basic's choice); under section 5b
the port's sharing is not estimated, so the order is the same under both timings.
"""

from __future__ import annotations

import heapq

from elk_opt.problem import Instance


def _fastest(instance: Instance) -> list[tuple[int, int]]:
    """(load ns, execute ns incl. warm-up) of each op's fastest pair that fits SRAM alone."""
    sram = instance.chip.sram_bytes
    times = []
    for op in instance.ops:
        pairs = [(p.time_ns + w, q.load_ns, q.id, p.id) for q, p, w in op.pairs()
                 if max(p.space_bytes, q.space_bytes) <= sram] or \
                [(p.time_ns + w, q.load_ns, q.id, p.id) for q, p, w in op.pairs()]
        run, load, _q, _p = min(pairs)
        times.append((load, run))
    return times


def johnson_order(instance: Instance) -> tuple[int, ...]:
    """A topological order of the ops by Johnson's rule over the ready set."""
    n = len(instance.ops)
    times = _fastest(instance)
    users: list[list[int]] = [[] for _ in range(n)]
    waiting = [len(set(op.inputs)) for op in instance.ops]
    for i, op in enumerate(instance.ops):
        for j in set(op.inputs):
            users[j].append(i)

    def rank(i: int) -> tuple[int, int, int]:
        load, run = times[i]
        return (0, load, i) if load < run else (1, -run, i)

    ready = [rank(i) for i in range(n) if waiting[i] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)[2]
        order.append(i)
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, rank(u))
    return tuple(order)
