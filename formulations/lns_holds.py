"""A `polish` move the windows miss: hold a NoC-heavy execute back while a load has the port.

Under section 5b an execute that starts beside a load, when their port demands add up to more
than the port, halves both. The 5b optimum of the Elk artifact's calibration layer releases
such an execute (the layer's first rmsnorm/Sum, demand 983) 7.4 us late so the qkv_proj load
(demand 990) runs alone first: one release moves Elk-Full's plan from 200,652 to 193,477 ns
(the optimum is 193,466). Heuristics hold loads back (heuristics.delays), never executes.

For each execute that overlaps a contending load (demands adding up to more than the port),
this pass tries releasing it at a few fractions of the way to that load's end, then refines
around the best, each timed exactly on the whole plan; it keeps a release that lowers the
makespan. Releases only delay, so the program and SRAM (R5) are untouched.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from elk_opt.evaluate import Schedule, evaluate
from elk_opt.noc import PORT, exec_use, load_use
from elk_opt.problem import Instance, Instr, Plan

FRACTIONS = (0.25, 0.5, 0.75, 1.0)  # of the way from the execute's start to the load's end


def hold_executes(instance: Instance, plan: Plan, deadline: float | None,
                  stop: Callable[[], bool] = lambda: False) -> tuple[Plan, int]:
    """The plan with executes held back where that pays (under shared-noc), and how many."""
    if plan.timing != "shared-noc":
        return plan, 0
    ops, chip = instance.ops, instance.chip
    run_d = [exec_use(chip, ops[i].exec_by_id[c.exec], ops[i].warmup_ns[c.preload, c.exec]).demand
             for i, c in enumerate(plan.choice)]
    load_d = [load_use(chip, ops[j].preload_by_id[c.preload]).demand
              for j, c in enumerate(plan.choice)]
    release: dict[Instr, int] = dict(plan.release_ns)

    def timed(rel: dict[Instr, int]) -> Schedule:
        return evaluate(instance, plan.choice, plan.program, rel, timing="shared-noc")

    s = timed(release)
    best = s.makespan_ns
    by_start = sorted((j for j in range(len(ops)) if s.load_end[j] > s.load_start[j]),
                      key=lambda j: s.load_start[j])
    held = 0
    for i in range(len(ops)):
        if stop() or (deadline is not None and time.perf_counter() >= deadline):
            break
        start = s.exec_start[i]
        beside = [j for j in by_start if s.load_start[j] < s.exec_end[i]
                  and s.load_end[j] > start and load_d[j] + run_d[i] > PORT]
        if not beside:
            continue
        span = s.load_end[beside[0]] - start
        found = None
        tries = [start + round(f * span) for f in FRACTIONS]
        while tries:
            t = tries.pop(0)
            got = timed({**release, ("E", i): t})
            if got.makespan_ns < best:
                first = found is None
                best, found = got.makespan_ns, (t, got)
                if first:  # refine once around the first gain
                    tries += [t - span // 8, t + span // 8]
        if found is not None:
            release["E", i] = found[0]
            s = found[1]
            held += 1
    if not held:
        return plan, 0
    return Plan(instance=instance, choice=plan.choice, program=plan.program,
                release_ns=release, timing=plan.timing), held
