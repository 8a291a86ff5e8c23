"""The analytic timing of docs/spec.md sections 5 and 5b, and the static SRAM use of rule R5.

One pass over the program, linear in its length. Every method's claimed makespan is this
function's makespan for the plan's timing; the simulator must reproduce it to the nanosecond
(without contention for "separate-noc", with only the NoC port shared for "shared-noc").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from elk_opt.noc import exec_use, load_use, shares
from elk_opt.problem import Choice, Instance, Instr, Plan, Timing


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


@dataclass(frozen=True)
class _Walk:
    """What the program fixes whatever the timing: dependencies, pending sets, R5."""

    gate: tuple[int, ...]  # per op: the execute listed last before P<j>, or -1
    loads: tuple[int, ...]  # ops whose preload moves data, in program order
    execs: tuple[int, ...]  # ops in execution order
    preload_count: tuple[int, ...]
    sram_bytes: tuple[int, ...]


def _walk(n: int, load_ns: list[int], load_space: list[int], run_space: list[int],
          program: Sequence[Instr]) -> _Walk:
    gate = [-1] * n
    issued = [False] * n
    executed = [False] * n
    loads: list[int] = []
    execs: list[int] = []
    count = [0] * n
    sram = [0] * n
    last = -1
    pending = pending_space = 0
    for kind, j in program:
        if not 0 <= j < n:
            raise ProgramError(f"{kind}{j} names no op")
        if kind == "P":
            if issued[j]:
                raise ProgramError(f"P{j} appears twice")
            issued[j] = True
            gate[j] = last
            if load_ns[j]:
                loads.append(j)
            pending += 1
            pending_space += load_space[j]
        else:
            if not issued[j]:
                raise ProgramError(f"E{j} comes before P{j}")
            if executed[j]:
                raise ProgramError(f"E{j} appears twice")
            executed[j] = True
            pending -= 1
            pending_space -= load_space[j]
            count[j] = pending
            sram[j] = max(run_space[j], load_space[j]) + pending_space
            execs.append(j)
            last = j
    if len(program) != 2 * n or len(execs) != n:
        missing = [f"E{i}" for i in range(n) if not executed[i]]
        raise ProgramError(f"program does not execute every op (missing {', '.join(missing[:5])})")
    return _Walk(tuple(gate), tuple(loads), tuple(execs), tuple(count), tuple(sram))


def evaluate(
    instance: Instance,
    choice: Sequence[Choice],
    program: Sequence[Instr],
    release_ns: Mapping[Instr, int] | None = None,
    *,
    timing: Timing,
) -> Schedule:
    """Time a program under `timing` ("separate-noc": section 5, "shared-noc": section 5b)."""
    n = len(instance.ops)
    if len(choice) != n:
        raise ProgramError(f"{len(choice)} choices for {n} ops")
    chip = instance.chip
    load_ns = [0] * n
    load_space = [0] * n
    load_d = [0] * n
    run_ns = [0] * n
    run_space = [0] * n
    run_d = [0] * n
    for i, (op, c) in enumerate(zip(instance.ops, choice, strict=True)):
        q = op.preload_by_id[c.preload]
        p = op.exec_by_id[c.exec]
        warm = op.warmup_ns[(c.preload, c.exec)]
        load_ns[i] = q.load_ns
        load_space[i] = q.space_bytes
        run_ns[i] = p.time_ns + warm
        run_space[i] = p.space_bytes
        if timing == "shared-noc":
            load_d[i] = load_use(chip, q).demand
            run_d[i] = exec_use(chip, p, warm).demand
    walk = _walk(n, load_ns, load_space, run_space, program)
    release = release_ns or {}
    p_release = [release.get(("P", j), 0) for j in range(n)]
    e_release = [release.get(("E", i), 0) for i in range(n)]
    if timing == "separate-noc":
        times = _separate(walk, program, load_ns, run_ns, p_release, e_release)
    elif timing == "shared-noc":
        times = _shared(walk, load_ns, load_d, run_ns, run_d, p_release, e_release)
    else:
        raise ValueError(f"unknown timing {timing!r}")
    load_start, load_end, exec_start, exec_end = times
    return Schedule(makespan_ns=exec_end[walk.execs[-1]] if n else 0,
                    load_start=tuple(load_start), load_end=tuple(load_end),
                    exec_start=tuple(exec_start), exec_end=tuple(exec_end),
                    preload_count=walk.preload_count, sram_bytes=walk.sram_bytes)


Times = tuple[list[int], list[int], list[int], list[int]]


def _separate(walk: _Walk, program: Sequence[Instr], load_ns: list[int], run_ns: list[int],
              p_release: list[int], e_release: list[int]) -> Times:
    """Section 5: every instruction takes its own duration; a max-plus recurrence."""
    n = len(load_ns)
    load_start, load_end = [0] * n, [0] * n
    exec_start, exec_end = [0] * n, [0] * n
    exec_free = hbm_free = 0
    for kind, j in program:
        if kind == "P":
            if load_ns[j] == 0:
                start = end = max(exec_free, p_release[j])
            else:
                start = max(exec_free, hbm_free, p_release[j])
                end = hbm_free = start + load_ns[j]
            load_start[j], load_end[j] = start, end
        else:
            start = max(exec_free, load_end[j], e_release[j])
            exec_start[j] = start
            exec_end[j] = exec_free = start + run_ns[j]
    return load_start, load_end, exec_start, exec_end


NEVER = 1 << 62


def _shared(walk: _Walk, load_ns: list[int], load_d: list[int], run_ns: list[int],
            run_d: list[int], p_release: list[int], e_release: list[int]) -> Times:
    """Section 5b: the same start rules, durations from the shared port, event by event.

    At most one data load (the HBM is serial) and one execute are active. Between events the
    shares are constant; each active instruction keeps its work left in permille-ns units.
    """
    n = len(load_ns)
    load_start, load_end = [-1] * n, [-1] * n
    exec_start, exec_end = [-1] * n, [-1] * n
    loads, execs, gate = walk.loads, walk.execs, walk.gate
    next_load = next_exec = 0
    hbm_free = exec_free = 0
    t = 0
    lop = eop = -1  # the active load's and execute's op, -1 when none
    l_left = e_left = 0  # units left
    while True:
        soonest = NEVER  # the next start that waits for a release
        moved = True
        while moved:  # start (and end, if instantaneous) all that can happen at t
            moved = False
            if lop < 0 and next_load < len(loads):
                j = loads[next_load]
                g = gate[j]
                if g < 0 or exec_end[g] >= 0:
                    start = max(exec_end[g] if g >= 0 else 0, hbm_free, p_release[j])
                    if start <= t:
                        lop, next_load, moved = j, next_load + 1, True
                        load_start[j] = t
                        l_left = load_ns[j] * (load_d[j] or 1)
                    else:
                        soonest = min(soonest, start)
            if eop < 0 and next_exec < n:
                i = execs[next_exec]
                if load_ns[i] == 0 and load_end[i] < 0:  # reserves space only: no port, no HBM
                    g = gate[i]
                    load_start[i] = load_end[i] = max(exec_end[g] if g >= 0 else 0,
                                                      p_release[i])
                if load_end[i] >= 0:
                    start = max(exec_free, load_end[i], e_release[i])
                    if start <= t:
                        next_exec, moved = next_exec + 1, True
                        exec_start[i] = t
                        if run_ns[i] == 0:
                            exec_end[i] = exec_free = t
                        else:
                            eop, e_left = i, run_ns[i] * (run_d[i] or 1)
                    else:
                        soonest = min(soonest, start)
        if lop < 0 and eop < 0:
            if soonest == NEVER:
                break
            t = soonest
            continue
        gl = ge = 1
        if lop >= 0:
            gl = load_d[lop] or 1
        if eop >= 0:
            ge = run_d[eop] or 1
            if lop >= 0 and load_d[lop] and run_d[eop]:
                gl, ge = shares(load_d[lop], run_d[eop])
        l_at = t - (-l_left // gl) if lop >= 0 else NEVER
        e_at = t - (-e_left // ge) if eop >= 0 else NEVER
        nxt = min(l_at, e_at, soonest)
        step = nxt - t
        if lop >= 0:
            if l_at == nxt:
                load_end[lop] = hbm_free = nxt
                lop = -1
            else:
                l_left -= gl * step
        if eop >= 0:
            if e_at == nxt:
                exec_end[eop] = exec_free = nxt
                eop = -1
            else:
                e_left -= ge * step
        t = nxt
    if next_exec < n:  # cannot happen for a sound program
        raise ProgramError("program cannot be timed (an instruction never starts)")
    return load_start, load_end, exec_start, exec_end


def evaluate_plan(plan: Plan) -> Schedule:
    """The plan's schedule under its own timing."""
    return evaluate(plan.instance, plan.choice, plan.program, plan.release_ns,
                    timing=plan.timing)


def fits_memory(instance: Instance, schedule: Schedule) -> bool:
    """Rule R5 for every op."""
    return schedule.peak_sram_bytes <= instance.chip.sram_bytes
