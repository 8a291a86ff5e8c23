"""A baseline in the style of XLA's latency-hiding scheduler (LHS).

XLA does not choose partition plans: every op keeps its fastest execute plan that fits SRAM
alone, with the cheapest compatible preload plan. It then list-schedules in execution order,
starting each asynchronous load as early as a memory-pressure limit allows: before E<i>, the
next loads in order are issued while op i's execute space plus every pending load fits under
the limit. The check is local to the issue point, so loads held across a later, larger execute
can overflow SRAM; as XLA does, the scheduler then reruns with the limit lowered by the
overflow, until the whole program fits (at worst nothing is loaded ahead, which always fits).
"""

from __future__ import annotations

import time

from elk_opt.bounds.cheap import cheap_bound_by
from elk_opt.problem import Choice, Instance, Instr, Plan, program_from_issue
from elk_opt.solution import SolveOptions, make_plan
from heuristics.ladders import op_classes
from heuristics.limits import deadline_of

MAX_RERUNS = 64  # then fall back to no loads ahead


def _issue(exec_space: list[int], pre_space: list[int], limit: int) -> tuple[list[int], int]:
    """Issue points under `limit`, and the resulting peak SRAM (R5 left side)."""
    n = len(exec_space)
    issued_before = [0] * n
    reach = pending = peak = 0
    for i in range(n):
        if reach <= i:
            issued_before[i], reach, pending = i, i + 1, 0
        else:
            pending -= pre_space[i]
        while reach < n and exec_space[i] + pending + pre_space[reach] <= limit:
            issued_before[reach], pending, reach = i, pending + pre_space[reach], reach + 1
        peak = max(peak, exec_space[i] + pending)
    return issued_before, peak


def solve(instance: Instance, options: SolveOptions) -> Plan:
    started = time.perf_counter()
    sram = instance.chip.sram_bytes
    of_op, classes = op_classes(instance)
    picks = []
    for c in classes:
        e = next((r for r, s in enumerate(c.execute.space) if s <= sram),
                 len(c.execute.space) - 1)
        lad = c.execute.preloads[e]
        picks.append((Choice(exec=c.execute.ids[e], preload=lad.ids[0]),
                      c.execute.space[e], lad.space[0]))
    choice = [picks[k][0] for k in of_op]
    exec_space = [picks[k][1] for k in of_op]
    pre_space = [picks[k][2] for k in of_op]
    limit, reruns = sram, 0
    issued_before, peak = _issue(exec_space, pre_space, limit)
    while peak > sram and limit > 0:
        reruns += 1
        limit = limit - (peak - sram) if reruns < MAX_RERUNS else 0
        issued_before, peak = _issue(exec_space, pre_space, limit)
    n = len(instance.ops)
    program: tuple[Instr, ...] = program_from_issue(range(n), issued_before, range(n))
    return make_plan(instance, choice, program, method="lhs", started=started,
                     timing=options.timing,
                     lower_bound_ns=cheap_bound_by(instance, options.timing,
                                                   deadline_of(options, started)),
                     params={"memory_limit_bytes": limit, "reruns": reruns})
