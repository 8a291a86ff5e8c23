"""Static's execute budgets: one execute-space budget X for the whole model, the rest of SRAM a
fixed preload region (heuristics.static). Shared so the inductive scheduler can try the best
budget's region as a cap on the preloads' lead (heuristics.inductive_best.preload_regions).
"""

from __future__ import annotations

from elk_opt.deadline import NO_DEADLINE, Deadline
from elk_opt.evaluate import evaluate
from elk_opt.problem import Choice, Instance, Instr, Timing, program_from_issue
from heuristics.ladders import Ladder, OpLadders, op_classes


def _first_within(lad: Ladder, room: int) -> int | None:
    """Fastest rung needing at most `room` bytes."""
    return next((r for r, s in enumerate(lad.space) if s <= room), None)


def _budgets(classes: list[OpLadders], sram: int) -> list[int]:
    least = max(c.execute.space[-1] for c in classes)
    values = {s for c in classes for s in c.execute.space}
    values |= {sram - s for c in classes for lad in c.execute.preloads for s in lad.space}
    return sorted(x for x in values | {least} if least <= x <= sram)


def plan_for_budget(instance: Instance, budget: int, ladders: tuple[list[int], list[OpLadders]]
                    ) -> tuple[list[Choice], tuple[Instr, ...]]:
    sram = instance.chip.sram_bytes
    of_op, classes = ladders
    region = sram - budget
    per_class: list[tuple[Choice, int, bool]] = []  # choice, preload space, fits the region
    for c in classes:
        e = _first_within(c.execute, budget)
        if e is None:
            e = len(c.execute.space) - 1
        pid = c.execute.ids[e]
        lad = c.execute.preloads[e]
        q = _first_within(lad, region)
        fits = q is not None
        q = q if q is not None else len(lad.space) - 1
        per_class.append((Choice(exec=pid, preload=lad.ids[q]), lad.space[q], fits))
    n = len(of_op)
    choice = [per_class[k][0] for k in of_op]
    issued_before = [0] * n
    reach, used = 0, 0  # ops 0..reach-1 issued; `used` bytes of region pending after op i
    for i in range(n):
        if reach <= i:
            issued_before[i], reach, used = i, i + 1, 0
        else:
            used -= per_class[of_op[i]][1]
        while reach < n:
            _c, space, fits = per_class[of_op[reach]]
            if not fits or used + space > region:
                break
            issued_before[reach], used, reach = i, used + space, reach + 1
    return choice, program_from_issue(range(n), issued_before, range(n))


def best_budget(instance: Instance, timing: Timing, deadline: Deadline = NO_DEADLINE
                ) -> tuple[int, int, list[Choice], tuple[Instr, ...], int]:
    """(makespan, budget, choice, program, budgets tried) of the best budget under `timing`;
    once `deadline` passes, of the budgets tried so far (at least one, the largest first: it
    executes every op with its fastest plan that fits)."""
    ladders = op_classes(instance)
    budgets = _budgets(ladders[1], instance.chip.sram_bytes)
    budgets = budgets[-1:] + budgets[:-1]
    best = None
    tried = 0
    for x in budgets:
        if tried and deadline.passed():
            break
        tried += 1
        choice, program = plan_for_budget(instance, x, ladders)
        makespan = evaluate(instance, choice, program, timing=timing).makespan_ns
        if best is None or (makespan, x) < best[:2]:
            best = (makespan, x, choice, program)
    assert best is not None
    return (*best, tried)
