"""A baseline in the style of XLA's latency-hiding scheduler (LHS).

XLA does not choose partition plans: every op keeps its fastest execute plan that fits SRAM
alone, with the cheapest compatible preload plan. With the execution order free (R2; lhs's
default) the ops are then list-scheduled over the DAG as XLA's scheduler does
(heuristics.lhs_list: bottom-up, ready-set priorities, loads as asynchronous copy start/done
pairs, memory pressure against a limit), so compute moves as well as loads.

With `--exec-order instance` the execution order is kept and each asynchronous load starts as
early as a memory-pressure limit allows: before E<i>, the next loads in order are issued while
op i's execute space plus every pending load fits under the limit.

Either way the memory check is local to the point it is made at, so the program can overflow
SRAM; as XLA does, the scheduler then reruns with the limit lowered (here by the overflow),
until the whole program fits (at worst nothing is loaded ahead, which always fits).

What XLA does that this does not: it schedules HLO instructions and their live buffers (we
track only preload layouts, the R5 bytes), reads latencies from its own estimator (here the
plans' load and execute times; under section 5b the port sharing is not estimated, the plan
is then timed exactly), caps copies in flight per resource (here the HBM
queues any number; memory is the only cap), and has further rules for collectives, send/recv,
scheduling annotations and target-specific hooks, with no counterpart in our programs.
"""

from __future__ import annotations

import time

from elk_opt.bounds.cheap import cheap_bound_by
from elk_opt.problem import Choice, Instance, Instr, Plan, program_from_issue
from elk_opt.solution import SolveOptions, make_plan
from heuristics import lhs_list
from heuristics.ladders import op_classes
from heuristics.limits import deadline_of

MAX_RERUNS = 64  # then fall back to no loads ahead
MAX_LIST_RERUNS = 16  # the same for the list scheduler, whose pass costs more


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
    order = options.exec_order or "free"  # None: lhs's default
    if order == "free":
        program, limit, reruns = _listed(instance, choice, exec_space, pre_space)
    else:
        program, limit, reruns = _in_order(exec_space, pre_space, sram)
    return make_plan(instance, choice, program, method="lhs", started=started,
                     timing=options.timing,
                     lower_bound_ns=cheap_bound_by(instance, options.timing,
                                                   deadline_of(options, started),
                                                   any_order=order == "free"),
                     params={"memory_limit_bytes": limit, "reruns": reruns,
                             "exec_order": order})


def _in_order(exec_space: list[int], pre_space: list[int], sram: int
              ) -> tuple[tuple[Instr, ...], int, int]:
    """The instance's execution order; the program, final limit and reruns."""
    limit, reruns = sram, 0
    issued_before, peak = _issue(exec_space, pre_space, limit)
    while peak > sram and limit > 0:
        reruns += 1
        limit = limit - (peak - sram) if reruns < MAX_RERUNS else 0
        issued_before, peak = _issue(exec_space, pre_space, limit)
    n = len(exec_space)
    return program_from_issue(range(n), issued_before, range(n)), limit, reruns


def _listed(instance: Instance, choice: list[Choice], exec_space: list[int],
            pre_space: list[int]) -> tuple[tuple[Instr, ...], int, int]:
    """XLA's list scheduler over the DAG; the program, final limit and reruns."""
    sram = instance.chip.sram_bytes
    run_ns, load_ns = [], []
    for op, c in zip(instance.ops, choice, strict=True):
        run_ns.append(op.exec_by_id[c.exec].time_ns + op.warmup_ns[(c.preload, c.exec)])
        load_ns.append(op.preload_by_id[c.preload].load_ns)
    costs = lhs_list.Costs(run_ns=tuple(run_ns), load_ns=tuple(load_ns),
                           own_space=tuple(map(max, exec_space, pre_space)),
                           pre_space=tuple(pre_space),
                           inputs=tuple(op.inputs for op in instance.ops))
    limit, reruns = sram, 0
    listed = lhs_list.schedule(costs, limit)
    while listed.peak_bytes > sram and limit > 0:
        reruns += 1
        limit = max(0, limit - (listed.peak_bytes - sram)) if reruns < MAX_LIST_RERUNS else 0
        listed = lhs_list.schedule(costs, limit)
    program = program_from_issue(listed.preload_order, listed.issued_before, listed.exec_order)
    return program, limit, reruns
