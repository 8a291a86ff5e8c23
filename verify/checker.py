"""The independent checker of DESIGN.md section 4.

It reads the plan's raw JSON itself and recomputes the timing of the plan's `timing` (section 5
or 5b) in its own code (`verify.timing`), so a bug in the project's loader or evaluator cannot
hide behind itself. It collects every broken
rule rather than stopping at the first. Structural problems that leave nothing to check (bad
JSON, missing keys, wrong types, negative sizes, unknown plan ids in `warmup`, inputs that
point forward) raise `Malformed`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from verify.timing import Step, port_demand, port_work_ns, separate_makespan, shared_makespan

PLAN_FORMAT = "elk-plan/1"
INSTANCE_FORMAT = "elk-instance/1"
_INSTR = re.compile(r"^([PE])(0|[1-9][0-9]*)$")
TIMINGS = ("separate-noc", "shared-noc")
ABSENT_TIMING = "separate-noc"  # a plan written before section 5b


class Malformed(Exception):
    """The input cannot be checked; the message names the field and the value."""


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


# ----------------------------------------------------------------------- structure

def _int(value: Any, where: str, minimum: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        kind = "positive" if minimum == 1 else "non-negative"
        raise Malformed(f"{where}: must be a {kind} integer, got {value!r}")
    return value


def _get(obj: Any, key: str, where: str) -> Any:
    if not isinstance(obj, dict):
        raise Malformed(f"{where}: must be an object, got {type(obj).__name__}")
    if key not in obj:
        raise Malformed(f"{where}.{key}: missing" if where else f"{key}: missing")
    return obj[key]


def _list(obj: Any, key: str, where: str) -> list:
    value = _get(obj, key, where)
    if not isinstance(value, list):
        raise Malformed(f"{where}.{key}: must be a list, got {type(value).__name__}")
    return value


class _Exec(NamedTuple):
    time_ns: int
    space_bytes: int
    noc_bytes: int
    noc_ns: int | None


class _Preload(NamedTuple):
    load_ns: int
    space_bytes: int
    noc_ns: int | None


def _optional_int(plan: dict, key: str, where: str) -> int | None:
    return _int(plan[key], f"{where}.{key}") if key in plan else None


@dataclass(frozen=True)
class _Op:
    name: str
    inputs: list[int]
    execs: dict[int, _Exec]
    preloads: dict[int, _Preload]
    warmup: dict[tuple[int, int], int]  # (preload, exec) -> ns


def _read_op(raw: Any, index: int) -> _Op:
    where = f"instance.ops[{index}]"
    name = _get(raw, "name", where)
    if not isinstance(name, str):
        raise Malformed(f"{where}.name: must be a string, got {name!r}")
    for key in ("kind",):
        if not isinstance(_get(raw, key, where), str):
            raise Malformed(f"{where}.{key}: must be a string")
    layer = _get(raw, "layer", where)
    if layer is not None and (not isinstance(layer, int) or isinstance(layer, bool)):
        raise Malformed(f"{where}.layer: must be an integer or null, got {layer!r}")
    _int(_get(raw, "hbm_bytes", where), f"{where}.hbm_bytes")
    _int(_get(raw, "flops", where), f"{where}.flops")
    inputs = []
    for k, producer in enumerate(_list(raw, "inputs", where)):
        _int(producer, f"{where}.inputs[{k}]")
        if producer >= index:
            raise Malformed(f"{where}.inputs[{k}]: input {producer} does not come before op "
                            f"{index}")
        inputs.append(producer)
    execs: dict[int, _Exec] = {}
    for k, plan in enumerate(_list(raw, "exec_plans", where)):
        w = f"{where}.exec_plans[{k}]"
        pid = _int(_get(plan, "id", w), f"{w}.id")
        if pid in execs:
            raise Malformed(f"{w}.id: duplicate exec plan id {pid}")
        execs[pid] = _Exec(_int(_get(plan, "time_ns", w), f"{w}.time_ns"),
                           _int(_get(plan, "space_bytes", w), f"{w}.space_bytes"),
                           _int(_get(plan, "noc_bytes", w), f"{w}.noc_bytes"),
                           _optional_int(plan, "noc_ns", w))
    preloads: dict[int, _Preload] = {}
    for k, plan in enumerate(_list(raw, "preload_plans", where)):
        w = f"{where}.preload_plans[{k}]"
        pid = _int(_get(plan, "id", w), f"{w}.id")
        if pid in preloads:
            raise Malformed(f"{w}.id: duplicate preload plan id {pid}")
        preloads[pid] = _Preload(_int(_get(plan, "load_ns", w), f"{w}.load_ns"),
                                 _int(_get(plan, "space_bytes", w), f"{w}.space_bytes"),
                                 _optional_int(plan, "noc_ns", w))
    if not execs or not preloads:
        raise Malformed(f"{where}: needs at least one exec plan and one preload plan")
    warmup: dict[tuple[int, int], int] = {}
    for k, pair in enumerate(_list(raw, "warmup", where)):
        w = f"{where}.warmup[{k}]"
        q = _int(_get(pair, "preload", w), f"{w}.preload")
        p = _int(_get(pair, "exec", w), f"{w}.exec")
        if q not in preloads:
            raise Malformed(f"{w}.preload: unknown preload plan id {q}")
        if p not in execs:
            raise Malformed(f"{w}.exec: unknown exec plan id {p}")
        if (q, p) in warmup:
            raise Malformed(f"{w}: pair (preload {q}, exec {p}) listed twice")
        warmup[(q, p)] = _int(_get(pair, "time_ns", w), f"{w}.time_ns")
    return _Op(name=name, inputs=inputs, execs=execs, preloads=preloads, warmup=warmup)


class _Chip(NamedTuple):
    sram_bytes: int
    link_bytes_per_s: int


def _read_chip(instance: Any) -> _Chip:
    chip = _get(instance, "chip", "instance")
    for key in ("cores", "hbm_bytes_per_s", "clock_hz"):
        _int(_get(chip, key, "instance.chip"), f"instance.chip.{key}", minimum=1)
    noc = _get(chip, "noc", "instance.chip")
    if _get(noc, "topology", "instance.chip.noc") not in ("all_to_all", "mesh"):
        raise Malformed(f"instance.chip.noc.topology: must be all_to_all or mesh, got "
                        f"{noc['topology']!r}")
    link = _int(_get(noc, "link_bytes_per_s", "instance.chip.noc"),
                "instance.chip.noc.link_bytes_per_s", minimum=1)
    return _Chip(_int(_get(chip, "sram_bytes", "instance.chip"), "instance.chip.sram_bytes", 1),
                 link)


def _read_timing(raw: dict) -> str:
    timing = raw.get("timing", ABSENT_TIMING)
    if timing not in TIMINGS:
        raise Malformed(f"timing: must be one of {', '.join(TIMINGS)}, got {timing!r}")
    return timing


# ----------------------------------------------------------------------- rules

def check(raw: Any) -> Report:
    """Check a parsed plan document against rules R1-R6."""
    if not isinstance(raw, dict):
        raise Malformed(f"plan: must be a JSON object, got {type(raw).__name__}")
    if raw.get("format") != PLAN_FORMAT:
        raise Malformed(f"format: must be {PLAN_FORMAT!r}, got {raw.get('format')!r}")
    instance = _get(raw, "instance", "")
    if _get(instance, "format", "instance") != INSTANCE_FORMAT:
        raise Malformed(f"instance.format: must be {INSTANCE_FORMAT!r}, "
                        f"got {instance['format']!r}")
    timing = _read_timing(raw)
    chip = _read_chip(instance)
    sram = chip.sram_bytes
    ops = [_read_op(o, i) for i, o in enumerate(_list(instance, "ops", "instance"))]
    n = len(ops)
    choice = _list(raw, "choice", "")
    if len(choice) != n:
        raise Malformed(f"choice: must have one entry per op ({n}), got {len(choice)}")
    chosen = [(_int(_get(c, "preload", f"choice[{i}]"), f"choice[{i}].preload"),
               _int(_get(c, "exec", f"choice[{i}]"), f"choice[{i}].exec"))
              for i, c in enumerate(choice)]
    program = _list(raw, "program", "")
    release = raw.get("release_ns", {})
    if not isinstance(release, dict):
        raise Malformed("release_ns: must be an object")
    for key, value in release.items():
        _int(value, f"release_ns.{key}")
    claims = raw.get("claims")
    if claims is not None and not isinstance(claims, dict):
        raise Malformed("claims: must be an object")

    violations: list[Violation] = []
    positions = _check_program(program, n, violations)
    for key in release:
        if key not in positions:
            violations.append(Violation("R1", f"R1 program: release_ns names {key}, which is "
                                              "not an instruction of the program",
                                        instruction=key))
    _check_choice(ops, chosen, violations)
    if not any(v.rule == "R1" for v in violations):  # every instruction has one position
        _check_dependencies(ops, positions, violations)
        _check_preload_first(n, positions, violations)
    timable = not any(v.rule in ("R1", "R3", "R4") for v in violations)
    makespan = peak = None
    peak_at = None
    if timable:
        peak, peak_at = _check_memory(ops, chosen, program, sram, violations)
        makespan = _makespan(ops, chosen, program, release, chip, timing)
    if claims is not None:
        _check_claims(claims, makespan, timing, violations)
    return Report(ops=n, violations=tuple(violations), makespan_ns=makespan,
                  peak_sram_bytes=peak, peak_at=peak_at, sram_bytes=sram, claims=claims,
                  timing=timing, unchecked=() if timable else ("R5", "R6"))


def _check_program(program: list, n: int, out: list[Violation]) -> dict[str, int]:
    """R1; returns each well-formed instruction's first position."""
    positions: dict[str, int] = {}
    counts: dict[str, int] = {}
    for pos, text in enumerate(program):
        m = _INSTR.match(text) if isinstance(text, str) else None
        if m is None or int(m.group(2)) >= n:
            out.append(Violation("R1", f"R1 program: entry {pos} is {text!r}, not P<op> or "
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


def _check_choice(ops: list[_Op], chosen: list[tuple[int, int]], out: list[Violation]) -> None:
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


def _check_dependencies(ops: list[_Op], positions: dict[str, int], out: list[Violation]) -> None:
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


def _check_memory(ops: list[_Op], chosen: list[tuple[int, int]], program: list, sram: int,
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


def _makespan(ops: list[_Op], chosen: list[tuple[int, int]], program: list,
              release: dict[str, int], chip: _Chip, timing: str) -> int:
    """The analytic makespan of a sound program under `timing`."""
    steps = []
    for op, (q, p) in zip(ops, chosen, strict=True):
        load, run, warm = op.preloads[q], op.execs[p], op.warmup[(q, p)]
        run_ns = run.time_ns + warm
        if timing == "shared-noc":
            load_work = port_work_ns(load.noc_ns, load.space_bytes, chip.link_bytes_per_s)
            run_work = port_work_ns(run.noc_ns, run.noc_bytes, chip.link_bytes_per_s) + warm
            steps.append(Step(load.load_ns, port_demand(load.load_ns, load_work),
                              run_ns, port_demand(run_ns, run_work)))
        else:
            steps.append(Step(load.load_ns, 0, run_ns, 0))
    instructions = [(text[0], int(text[1:])) for text in program]
    released = {(key[0], int(key[1:])): value for key, value in release.items()}
    walk = shared_makespan if timing == "shared-noc" else separate_makespan
    return walk(steps, instructions, released)


def _check_claims(claims: dict[str, Any], makespan: int | None, timing: str,
                  out: list[Violation]) -> None:
    status = claims.get("status")
    claimed = claims.get("makespan_ns")
    bound = claims.get("lower_bound_ns")
    if status not in ("optimal", "feasible", "heuristic"):
        out.append(Violation("R6", f"R6 claims: status {status!r} is not optimal, feasible or "
                                   "heuristic"))
    for key, value in (("makespan_ns", claimed), ("lower_bound_ns", bound)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                  or value < 0):
            out.append(Violation("R6", f"R6 claims: {key} {value!r} is not a non-negative "
                                       "integer"))
            return
    if makespan is None:  # the program cannot be timed: reported as unchecked, not guessed
        return
    if claimed is None:
        out.append(Violation("R6", "R6 claims: makespan_ns missing"))
    elif claimed != makespan:
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
