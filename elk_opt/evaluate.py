"""The analytic timing of DESIGN.md section 5 and the static SRAM use of rule R5.

One pass over the program, linear in its length. Every method's claimed makespan is this
function's makespan; the simulator without contention must reproduce it to the nanosecond.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from elk_opt.problem import Choice, Instance, Instr, Plan


class ProgramError(ValueError):
    """The program cannot be timed: an op is missing, repeated, or executed before its load."""


@dataclass(frozen=True)
class Schedule:
    makespan_ns: int
    load_start: tuple[int, ...]  # per op
    load_end: tuple[int, ...]
    exec_start: tuple[int, ...]
    exec_end: tuple[int, ...]  # includes the warm-up
    preload_count: tuple[int, ...]  # ops pending while op i executes
    sram_bytes: tuple[int, ...]  # R5 left-hand side at E<i>

    @property
    def peak_sram_bytes(self) -> int:
        return max(self.sram_bytes, default=0)


def evaluate(
    instance: Instance,
    choice: Sequence[Choice],
    program: Sequence[Instr],
    release_ns: Mapping[Instr, int] | None = None,
) -> Schedule:
    n = len(instance.ops)
    if len(choice) != n:
        raise ProgramError(f"{len(choice)} choices for {n} ops")
    load_ns = [0] * n
    load_space = [0] * n
    run_ns = [0] * n
    run_space = [0] * n
    for i, (op, c) in enumerate(zip(instance.ops, choice, strict=True)):
        q = op.preload_by_id[c.preload]
        p = op.exec_by_id[c.exec]
        load_ns[i] = q.load_ns
        load_space[i] = q.space_bytes
        run_ns[i] = p.time_ns + op.warmup_ns[(c.preload, c.exec)]
        run_space[i] = p.space_bytes
    release = release_ns or {}

    load_start = [-1] * n
    load_end = [-1] * n
    exec_start = [-1] * n
    exec_end = [-1] * n
    count = [0] * n
    sram = [0] * n
    exec_free = hbm_free = 0
    pending = pending_space = 0
    for kind, j in program:
        if not 0 <= j < n:
            raise ProgramError(f"{kind}{j} names no op")
        if kind == "P":
            if load_start[j] >= 0:
                raise ProgramError(f"P{j} appears twice")
            if load_ns[j] == 0:
                start = end = max(exec_free, release.get(("P", j), 0))
            else:
                start = max(exec_free, hbm_free, release.get(("P", j), 0))
                end = hbm_free = start + load_ns[j]
            load_start[j], load_end[j] = start, end
            pending += 1
            pending_space += load_space[j]
        else:
            if load_start[j] < 0:
                raise ProgramError(f"E{j} comes before P{j}")
            if exec_start[j] >= 0:
                raise ProgramError(f"E{j} appears twice")
            pending -= 1
            pending_space -= load_space[j]
            count[j] = pending
            sram[j] = run_space[j] + pending_space
            start = max(exec_free, load_end[j], release.get(("E", j), 0))
            exec_start[j] = start
            exec_end[j] = exec_free = start + run_ns[j]
    if len(program) != 2 * n or min(exec_start, default=0) < 0:
        missing = [f"E{i}" for i in range(n) if exec_start[i] < 0]
        raise ProgramError(f"program does not execute every op (missing {', '.join(missing[:5])})")
    return Schedule(makespan_ns=exec_free, load_start=tuple(load_start),
                    load_end=tuple(load_end), exec_start=tuple(exec_start),
                    exec_end=tuple(exec_end), preload_count=tuple(count),
                    sram_bytes=tuple(sram))


def evaluate_plan(plan: Plan) -> Schedule:
    return evaluate(plan.instance, plan.choice, plan.program, plan.release_ns)


def fits_memory(instance: Instance, schedule: Schedule) -> bool:
    """Rule R5 for every op."""
    return schedule.peak_sram_bytes <= instance.chip.sram_bytes
