"""The paper's Basic baseline: fastest plans, and the space left over preloads the next op only.

Each op executes with its fastest execute plan that fits SRAM on its own. While op i executes,
op i+1 is preloaded if one of its preload plans compatible with its execute plan fits beside
op i's execute space; otherwise op i+1 is loaded after op i finishes. Preload order follows the
execution order, so at most one op is ever pending.
"""

from __future__ import annotations

import time

from elk_opt.bounds import ideal_bound
from elk_opt.problem import Choice, Instance, Instr, Op, Plan, PreloadPlan
from elk_opt.solution import SolveOptions, make_plan


def _fastest_exec(op: Op, sram: int) -> int:
    """Id of the fastest execute plan that fits alone and has a compatible preload plan."""
    paired = {w.exec for w in op.warmup}
    fitting = [p for p in op.exec_plans if p.id in paired and p.space_bytes <= sram]
    if not fitting:
        fitting = [p for p in op.exec_plans if p.id in paired]  # infeasible anyway: least bad
    return min(fitting, key=lambda p: (p.time_ns, p.space_bytes, p.id)).id


def _best_preload(op: Op, exec_id: int, room: int | None) -> PreloadPlan | None:
    """Cheapest (load + warm-up) compatible preload plan within `room` bytes (None: any)."""
    options = [(q.load_ns + t, q.space_bytes, q.id, q) for q, p, t in op.pairs()
               if p.id == exec_id and (room is None or q.space_bytes <= room)]
    return min(options, key=lambda o: o[:3])[3] if options else None


def solve(instance: Instance, options: SolveOptions) -> Plan:
    started = time.perf_counter()
    sram = instance.chip.sram_bytes
    ops = instance.ops
    execs = [_fastest_exec(op, sram) for op in ops]
    preloads: list[int] = []
    program: list[Instr] = [("P", 0)]
    early = 0
    for i, op in enumerate(ops[:-1]):
        nxt = i + 1
        room = sram - op.exec_by_id[execs[i]].space_bytes
        q = _best_preload(ops[nxt], execs[nxt], room)
        if q is not None:  # op i+1 is pending while op i executes
            program += [("P", nxt), ("E", i)]
            early += 1
        else:
            q = _best_preload(ops[nxt], execs[nxt], None)
            program += [("E", i), ("P", nxt)]
        preloads.append(q.id)  # type: ignore[union-attr]
    program.append(("E", len(ops) - 1))
    first = _best_preload(ops[0], execs[0], None)
    choice = [Choice(exec=e, preload=q) for e, q in zip(execs, [first.id, *preloads], strict=True)]
    return make_plan(instance, choice, program, method="basic", started=started,
                     timing=options.timing,
                     lower_bound_ns=ideal_bound(instance), params={"preloaded_early": early})
