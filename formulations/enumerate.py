"""Exhaustive search over every program and every pair choice: the third check on tiny instances.

It shares no modelling with the CP-SAT and ILP models: it walks every program (executes in the
instance's order, each `P<j>` anywhere before `E<j>`) depth-first, choosing each op's
(preload, execute) pair from all compatible pairs when its preload is placed, and times the
prefix with section 5's recurrence as it goes. Only prefixes that already end no earlier than
the best complete program are cut (timing never decreases along a program). Exponential: meant
for instances of four or five ops.
"""

from __future__ import annotations

from dataclasses import dataclass

from elk_opt.problem import Choice, Instance, Instr


@dataclass(frozen=True)
class Best:
    makespan_ns: int
    choice: tuple[Choice, ...]
    program: tuple[Instr, ...]


def enumerate_optimum(instance: Instance) -> Best | None:
    """The optimum with the instance's execution order, or None if no program fits R5."""
    ops = instance.ops
    n = len(ops)
    sram = instance.chip.sram_bytes
    options = [[(q.id, p.id, q.load_ns, q.space_bytes, p.time_ns + t, p.space_bytes)
                for q, p, t in op.pairs()] for op in ops]
    best: list[Best | None] = [None]
    chosen: list[tuple | None] = [None] * n
    load_end = [0] * n
    program: list[Instr] = []

    def walk(executed: int, exec_free: int, hbm_free: int, pending: int) -> None:
        incumbent = best[0]
        if incumbent is not None and exec_free >= incumbent.makespan_ns:
            return
        if executed == n:
            best[0] = Best(exec_free, tuple(Choice(exec=c[1], preload=c[0]) for c in chosen),
                           tuple(program))
            return
        nxt = executed
        if chosen[nxt] is not None:  # execute the next op
            a = chosen[nxt]
            if a[5] + pending - a[3] <= sram:
                end = max(exec_free, load_end[nxt]) + a[4]
                program.append(("E", nxt))
                walk(executed + 1, end, hbm_free, pending - a[3])
                program.pop()
        for j in range(nxt, n):  # or preload any op not yet preloaded
            if chosen[j] is not None:
                continue
            for a in options[j]:
                if a[2] == 0:
                    start = end = exec_free
                    hbm = hbm_free
                else:
                    start = max(exec_free, hbm_free)
                    end = hbm = start + a[2]
                chosen[j] = a
                load_end[j] = end
                program.append(("P", j))
                walk(executed, exec_free, hbm, pending + a[3])
                program.pop()
                chosen[j] = None

    walk(0, 0, 0, 0)
    return best[0]
