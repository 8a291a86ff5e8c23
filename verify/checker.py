"""The independent checker of docs/spec.md section 4.

It reads the plan's raw JSON itself (`verify.reading`) and recomputes the timing of the plan's
`timing` (section 5 or 5b) in its own code (`verify.timing`), so a bug in the project's loader
or evaluator cannot hide behind itself. It collects every broken rule rather than stopping at
the first. A file that is not structurally sound raises `Malformed` (exit 2); the program and
the chosen plan ids are judged by the rules (R1-R4, exit 1), see docs/spec.md section 4.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from verify.reading import Document, Op, gc_paused, read_plan, show
from verify.timing import Step, port_demand, port_work_ns, separate_makespan, shared_makespan

_INSTR = re.compile(r"([PE])(0|[1-9][0-9]*)")  # whole entries only: fullmatch

@dataclass(frozen=True)
class Violation:
    rule: str  # "R1".."R6"
    message: str
    op: int | None = None
    instruction: str | None = None
    numbers: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Report:
    ops: int
    violations: tuple[Violation, ...]
    makespan_ns: int | None  # None when the program is too broken to time
    peak_sram_bytes: int | None
    peak_at: str | None
    sram_bytes: int
    claims: dict[str, Any] | None
    timing: str  # the semantics R6 checked the claims under
    unchecked: tuple[str, ...] = ()  # rules that need a timable program (R1, R3, R4 hold)

    @property
    def valid(self) -> bool:
        return not self.violations


def check(raw: Any) -> Report:
    """Check a parsed plan document against rules R1-R6."""
    with gc_paused():
        return _check(read_plan(raw))


def _check(doc: Document) -> Report:
    ops, chosen, program, release = doc.ops, doc.choice, doc.program, doc.release
    n = len(ops)
    violations: list[Violation] = []
    positions = _check_program(program, n, violations)
    for key in release:
        if key not in positions:
            violations.append(Violation("R1", f"R1 program: release_ns names {show(key)}, which "
                                              "is not an instruction of the program",
                                        instruction=key))
    _check_choice(ops, chosen, violations)
    if not any(v.rule == "R1" for v in violations):  # every instruction has one position
        _check_dependencies(ops, positions, violations)
        _check_preload_first(n, positions, violations)
    timable = not any(v.rule in ("R1", "R3", "R4") for v in violations)
    makespan = peak = None
    peak_at = None
    if timable:
        peak, peak_at = _check_memory(ops, chosen, program, doc.sram_bytes, violations)
        makespan = _makespan(doc)
    if doc.claims is not None:
        _check_claims(doc.claims, makespan, doc.timing, violations)
    return Report(ops=n, violations=tuple(violations), makespan_ns=makespan,
                  peak_sram_bytes=peak, peak_at=peak_at, sram_bytes=doc.sram_bytes,
                  claims=doc.claims, timing=doc.timing,
                  unchecked=() if timable else ("R5", "R6"))


def _check_program(program: list, n: int, out: list[Violation]) -> dict[str, int]:
    """R1; returns each well-formed instruction's first position."""
    positions: dict[str, int] = {}
    counts: dict[str, int] = {}
    for pos, text in enumerate(program):
        m = _INSTR.fullmatch(text) if isinstance(text, str) else None
        if m is None or int(m.group(2)) >= n:
            out.append(Violation("R1", f"R1 program: entry {pos} is {show(text)}, not P<op> or "
                                       f"E<op> with op < {n}", numbers={"position": pos}))
            continue
        counts[text] = counts.get(text, 0) + 1
        positions.setdefault(text, pos)
    for i in range(n):
        for kind in "PE":
            name = f"{kind}{i}"
            seen = counts.get(name, 0)
            if seen != 1:
                what = "is missing" if seen == 0 else f"appears {seen} times"
                out.append(Violation("R1", f"R1 program: {name} {what}", op=i, instruction=name,
                                     numbers={"count": seen}))
    return positions


def _check_choice(ops: list[Op], chosen: list[tuple[int, int]], out: list[Violation]) -> None:
    for i, (op, (q, p)) in enumerate(zip(ops, chosen, strict=True)):
        where = f"op {i} ({op.name})"
        if p not in op.execs:
            out.append(Violation("R4", f"R4 choice: {where} chooses exec plan {p}, which does "
                                       f"not exist (ids {sorted(op.execs)})", op=i))
        if q not in op.preloads:
            out.append(Violation("R4", f"R4 choice: {where} chooses preload plan {q}, which "
                                       f"does not exist (ids {sorted(op.preloads)})", op=i))
        if p in op.execs and q in op.preloads and (q, p) not in op.warmup:
            out.append(Violation("R4", f"R4 choice: {where} pairs preload {q} with exec {p}, "
                                       "which is not a compatible pair in warmup", op=i))


def _check_dependencies(ops: list[Op], positions: dict[str, int], out: list[Violation]) -> None:
    for i, op in enumerate(ops):
        mine = positions[f"E{i}"]
        for producer in op.inputs:
            theirs = positions[f"E{producer}"]
            if theirs > mine:
                out.append(Violation(
                    "R2", f"R2 dependency at E{i}: input E{producer} ({ops[producer].name}) is at "
                          f"position {theirs}, after E{i} at position {mine}",
                    op=i, instruction=f"E{i}",
                    numbers={"producer": producer, "producer_position": theirs,
                             "position": mine}))


def _check_preload_first(n: int, positions: dict[str, int], out: list[Violation]) -> None:
    for i in range(n):
        load, run = positions[f"P{i}"], positions[f"E{i}"]
        if load > run:
            out.append(Violation("R3", f"R3 order: P{i} at position {load} comes after E{i} at "
                                       f"position {run}", op=i, instruction=f"P{i}",
                                 numbers={"preload_position": load, "exec_position": run}))


def _check_memory(ops: list[Op], chosen: list[tuple[int, int]], program: list, sram: int,
                  out: list[Violation]) -> tuple[int, str | None]:
    """R5 at every E<i> of a program already known to be sound; returns the peak and where."""
    pending: dict[int, int] = {}  # op -> preload space, in issue order
    pending_bytes = 0
    peak, peak_at = -1, None
    for text in program:
        j = int(text[1:])
        q, p = chosen[j]
        load_space = ops[j].preloads[q].space_bytes
        if text[0] == "P":
            pending[j] = load_space
            pending_bytes += load_space
            continue
        pending_bytes -= pending.pop(j)
        run_space = ops[j].execs[p].space_bytes
        own = max(run_space, load_space)  # op j holds the larger layout while it warms up
        total = own + pending_bytes
        if total > peak:
            peak, peak_at = total, text
        if total > sram:
            parts = " + ".join(f"P{k} {b:,} B" for k, b in list(pending.items())[:8])
            if len(pending) > 8:
                parts += f" + {len(pending) - 8} more"
            listed = f" + pending {parts}" if pending else ""
            out.append(Violation(
                "R5", f"R5 memory at {text}: max(exec {run_space:,} B, preload {load_space:,} B)"
                      f"{listed} = {total:,} B > sram {sram:,} B", op=j, instruction=text,
                numbers={"exec_bytes": run_space, "preload_bytes": load_space,
                         "pending": dict(pending), "total": total, "sram_bytes": sram}))
    return peak, peak_at


def _makespan(doc: Document) -> int:
    """The analytic makespan of a sound program under the plan's timing."""
    shared = doc.timing == "shared-noc"
    steps = []
    for op, (q, p) in zip(doc.ops, doc.choice, strict=True):
        load, run, warm = op.preloads[q], op.execs[p], op.warmup[(q, p)]
        run_ns = run.time_ns + warm
        if shared:
            load_work = port_work_ns(load.noc_ns, load.space_bytes, doc.link_bytes_per_s)
            run_work = port_work_ns(run.noc_ns, run.noc_bytes, doc.link_bytes_per_s) + warm
            steps.append(Step(load.load_ns, port_demand(load.load_ns, load_work),
                              run_ns, port_demand(run_ns, run_work)))
        else:
            steps.append(Step(load.load_ns, 0, run_ns, 0))
    instructions = [(text[0], int(text[1:])) for text in doc.program]
    released = {(key[0], int(key[1:])): value for key, value in doc.release.items()}
    walk = shared_makespan if shared else separate_makespan
    return walk(steps, instructions, released)


def _check_claims(claims: dict[str, Any], makespan: int | None, timing: str,
                  out: list[Violation]) -> None:
    """R6 on claims whose types `read_plan` has checked."""
    if makespan is None:  # the program cannot be timed: reported as unchecked, not guessed
        return
    status, claimed = claims["status"], claims["makespan_ns"]
    bound = claims.get("lower_bound_ns")
    if claimed != makespan:
        out.append(Violation("R6", f"R6 claims: makespan_ns {claimed:,} != analytic makespan "
                                   f"{makespan:,} ({timing} timing)",
                             numbers={"claimed": claimed, "analytic": makespan}))
    if bound is not None and bound > makespan:
        out.append(Violation("R6", f"R6 claims: lower_bound_ns {bound:,} > analytic makespan "
                                   f"{makespan:,} ({timing} timing)",
                             numbers={"bound": bound, "analytic": makespan}))
    if status == "optimal" and bound != makespan:
        out.append(Violation("R6", f"R6 claims: status optimal but lower_bound_ns {bound} != "
                                   f"makespan {makespan:,}", numbers={"bound": bound,
                                                                      "analytic": makespan}))
