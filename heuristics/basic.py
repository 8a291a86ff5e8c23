"""The paper's Basic baseline: fastest plans, and the space left over preloads the next op only.

Each op executes with its fastest execute plan that fits SRAM on its own (with a compatible
preload plan: rule R5 charges an op the larger of its two layouts at its execute). While op i
executes, op i+1 is preloaded if one of its preload plans compatible with its execute plan fits
beside what op i holds; otherwise op i+1 is loaded after op i finishes. Preload order follows
the execution order, so at most one op is ever pending.
"""

from __future__ import annotations

import time

from elk_opt.bounds.cheap import cheap_bound_by
from elk_opt.deadline import Deadline
from elk_opt.problem import Choice, ExecPlan, Instance, Instr, Op, Plan, PreloadPlan
from elk_opt.solution import SolveOptions, make_plan

Pair = tuple[PreloadPlan, ExecPlan, int]


def _fastest_exec(pairs: list[Pair], sram: int) -> int:
    """Id of the fastest execute plan that fits alone with a compatible preload plan."""
    fitting = [p for q, p, _t in pairs if max(p.space_bytes, q.space_bytes) <= sram]
    if not fitting:
        fitting = [p for _q, p, _t in pairs]  # infeasible anyway: least bad
    return min(fitting, key=lambda p: (p.time_ns, p.space_bytes, p.id)).id


def _best_preload(pairs: list[Pair], exec_id: int, room: int) -> PreloadPlan | None:
    """Cheapest (load + warm-up) compatible preload plan within `room` bytes."""
    options = [(q.load_ns + t, q.space_bytes, q.id, q) for q, p, t in pairs
               if p.id == exec_id and q.space_bytes <= room]
    return min(options, key=lambda o: o[:3])[3] if options else None


def _alone(op: Op, pairs: list[Pair], exec_id: int, sram: int) -> PreloadPlan:
    """The cheapest compatible preload plan that fits beside the op's own execute layout."""
    room = max(sram, op.exec_by_id[exec_id].space_bytes)  # an op too big for SRAM: least bad
    q = _best_preload(pairs, exec_id, room)
    if q is None:  # every compatible layout overflows: the smallest is least bad
        q = min((q for q, p, _t in pairs if p.id == exec_id),
                key=lambda q: (q.space_bytes, q.id))
    return q


def solve(instance: Instance, options: SolveOptions) -> Plan:
    """In the instance's order (the default), or with `exec_order` "free" the best over
    candidate orders (heuristics.free_order)."""
    if options.free_order:
        from heuristics.free_order import best_over_orders  # it falls back on Basic itself

        return best_over_orders(instance, options, "basic", _in_order)
    return _in_order(instance, options)


def _in_order(instance: Instance, options: SolveOptions) -> Plan:
    started = time.perf_counter()
    choice, program, early = decisions(instance)
    return make_plan(instance, choice, program, method="basic", started=started,
                     timing=options.timing,
                     lower_bound_ns=cheap_bound_by(instance, options.timing,
                                                   Deadline.after(options.time_limit_s,
                                                                  started)),
                     params={"exec_order": "instance", "preloaded_early": early})


def decisions(instance: Instance) -> tuple[list[Choice], list[Instr], int]:
    """Basic's choice and program (one linear pass), and how many preloads it issued early:
    also the plan a searching heuristic falls back on when cut before its first schedule."""
    sram = instance.chip.sram_bytes
    ops = instance.ops
    # each op's pairs built once (twice was a third of this pass at 20,000 ops), and not all
    # kept at once: millions of live tuples make the collector walk them
    pairs = ops[0].pairs()
    execs = [_fastest_exec(pairs, sram)]
    preloads = [_alone(ops[0], pairs, execs[0], sram)]
    program: list[Instr] = [("P", 0)]
    early = 0
    for i, op in enumerate(ops[:-1]):
        nxt = i + 1
        pairs = ops[nxt].pairs()
        execs.append(_fastest_exec(pairs, sram))
        held = max(op.exec_by_id[execs[i]].space_bytes, preloads[i].space_bytes)
        q = _best_preload(pairs, execs[nxt], sram - held)
        if q is not None:  # op i+1 is pending while op i executes
            program += [("P", nxt), ("E", i)]
            early += 1
        else:
            q = _alone(ops[nxt], pairs, execs[nxt], sram)
            program += [("E", i), ("P", nxt)]
        preloads.append(q)
    program.append(("E", len(ops) - 1))
    choice = [Choice(exec=e, preload=q.id) for e, q in zip(execs, preloads, strict=True)]
    return choice, program, early
