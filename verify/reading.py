"""What makes a plan file readable, checked on the raw JSON (docs/spec.md sections 2-4).

The project's loader (`elk_opt.io`) implements the same definition separately; a test feeds
both the same malformed files. Everything here is structure: a file that fails it has nothing
to check and raises `Malformed`, naming the field path and the value. What the rules judge
(the program, which plan ids are chosen, the claims' numbers) is read but not judged here.

Numbers stay where float64 is exact: every integer is at most 2**53 - 1, and the times an
instance can add up to (with release times) stay below 2**51, so that every time either
timing computes, and every SRAM sum of rule R5, is below 2**53.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, NamedTuple

PLAN_FORMAT = "elk-plan/1"
INSTANCE_FORMAT = "elk-instance/1"
TIMINGS = ("separate-noc", "shared-noc")
ABSENT_TIMING = "separate-noc"  # a plan written before section 5b
STATUSES = ("optimal", "feasible", "heuristic")
TOPOLOGIES = ("all_to_all", "mesh")
MAX_INT = 2**53 - 1  # the largest integer float64 holds exactly, with all below it
TIME_LIMIT_NS = 2**51  # see docs/spec.md section 7
MAX_METADATA_DEPTH = 64  # nesting of a value under a key the format does not define

PLAN_KEYS = frozenset({"format", "instance", "timing", "choice", "program", "release_ns",
                       "claims"})
INSTANCE_KEYS = frozenset({"format", "name", "chip", "ops"})
CHIP_KEYS = frozenset({"name", "cores", "sram_bytes", "hbm_bytes_per_s", "clock_hz", "noc"})
NOC_KEYS = frozenset({"topology", "link_bytes_per_s", "mesh_rows", "mesh_cols", "hbm_ports"})
OP_KEYS = frozenset({"name", "kind", "layer", "inputs", "hbm_bytes", "flops", "exec_plans",
                     "preload_plans", "warmup"})
EXEC_KEYS = frozenset({"id", "time_ns", "space_bytes", "noc_bytes", "noc_ns"})
PRELOAD_KEYS = frozenset({"id", "space_bytes", "load_ns", "noc_ns"})
WARMUP_KEYS = frozenset({"preload", "exec", "time_ns"})
CHOICE_KEYS = frozenset({"exec", "preload"})
CLAIMS_KEYS = frozenset({"method", "status", "makespan_ns", "lower_bound_ns", "wall_s",
                         "params"})


class Malformed(Exception):
    """The input cannot be checked; the message names the field and the value."""


class ExecPlan(NamedTuple):
    time_ns: int
    space_bytes: int
    noc_bytes: int
    noc_ns: int | None


class PreloadPlan(NamedTuple):
    load_ns: int
    space_bytes: int
    noc_ns: int | None


@dataclass(frozen=True)
class Op:
    name: str
    inputs: list[int]
    execs: dict[int, ExecPlan]
    preloads: dict[int, PreloadPlan]
    warmup: dict[tuple[int, int], int]  # (preload, exec) -> ns
    longest_ns: int  # its longest load plus its longest execute with warm-up
    largest_bytes: int  # its largest space_bytes, execute or preload


@dataclass(frozen=True)
class Document:
    """A readable plan: sound structure; the program and the choice are still to be judged."""

    ops: list[Op]
    sram_bytes: int
    link_bytes_per_s: int
    timing: str
    choice: list[tuple[int, int]]  # (preload, exec) ids as written, per op
    program: list[Any]  # entries as written
    release: dict[str, int]
    claims: dict[str, Any] | None


# ----------------------------------------------------------------------- values

@contextmanager
def gc_paused() -> Iterator[None]:
    """Build millions of acyclic objects without the cycle collector rescanning them all.

    A 100,000-op plan is millions of lists and dicts; CPython's collector otherwise walks the
    growing heap again and again and doubles the time to parse and read it.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()



def path(*parts: str | int) -> str:
    """("instance.ops", 3, "name") -> "instance.ops[3].name"; built only for a message."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def show(value: Any) -> str:
    """A short rendering of any JSON value, safe for huge or deeply nested ones."""
    if isinstance(value, str):
        text = repr(value)
        return text if len(text) <= 60 else text[:56] + "...'"
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, int):
        return str(value) if abs(value) < 10**60 else "an integer of more than 60 digits"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        return f"a list of {len(value)} item{'' if len(value) == 1 else 's'}"
    return f"an object with {len(value)} key{'' if len(value) == 1 else 's'}"


def _fail(where: str, message: str) -> Malformed:
    return Malformed(f"{where}: {message}" if where else message)


def _field(obj: Any, key: str, *where: str | int) -> Any:
    if not isinstance(obj, dict):
        raise _fail(path(*where), f"must be an object, got {show(obj)}")
    if key not in obj:
        raise _fail(path(*where, key), "missing")
    return obj[key]


def _natural(value: Any, *where: str | int, minimum: int = 0, maximum: int = MAX_INT) -> int:
    if type(value) is int and minimum <= value <= maximum:
        return value
    kind = "positive" if minimum == 1 else "non-negative"
    if type(value) is int and value > maximum:
        limit = "2**51" if maximum == TIME_LIMIT_NS else "2**53 - 1"
        raise _fail(path(*where), f"must be at most {limit} ({maximum:,}), got {show(value)}")
    raise _fail(path(*where), f"must be a {kind} integer, got {show(value)}")


def _naturals(obj: Any, keys: tuple[str, ...], *where: str | int) -> list[int]:
    """The values of `keys`, each an integer in [0, 2**53 - 1]."""
    return [_natural(_field(obj, key, *where), *where, key) for key in keys]


def _is_natural(value: Any) -> bool:
    return type(value) is int and 0 <= value <= MAX_INT


# Hot loops read fields with these and fall back to `_naturals` only to word the error.
_EXEC_FIELDS = ("id", "time_ns", "space_bytes", "noc_bytes")
_PRELOAD_FIELDS = ("id", "space_bytes", "load_ns")
_WARMUP_FIELDS = ("preload", "exec", "time_ns")
_get_exec = itemgetter(*_EXEC_FIELDS)
_get_preload = itemgetter(*_PRELOAD_FIELDS)
_get_warmup = itemgetter(*_WARMUP_FIELDS)


def _optional_natural(obj: dict, key: str, *where: str | int) -> int | None:
    return _natural(obj[key], *where, key) if key in obj else None


def _string(obj: Any, key: str, *where: str | int) -> str:
    value = _field(obj, key, *where)
    if not isinstance(value, str):
        raise _fail(path(*where, key), f"must be a string, got {show(value)}")
    return value


def _list(obj: Any, key: str, *where: str | int, nonempty: bool = False) -> list:
    value = _field(obj, key, *where)
    if not isinstance(value, list):
        raise _fail(path(*where, key), f"must be a list, got {show(value)}")
    if nonempty and not value:
        raise _fail(path(*where, key), "must not be empty")
    return value


def _object(value: Any, *where: str | int) -> dict:
    if not isinstance(value, dict):
        raise _fail(path(*where), f"must be an object, got {show(value)}")
    return value


def _metadata(obj: dict, known: frozenset[str], *where: str | int) -> None:
    """Keys the format does not define are allowed, nested at most MAX_METADATA_DEPTH deep."""
    for key in obj.keys() - known:
        _shallow(obj[key], *where, key)


def _shallow(value: Any, *where: str | int) -> None:
    """At most MAX_METADATA_DEPTH lists and objects inside one another (walked, not recursed)."""
    stack = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        item, depth = stack.pop()
        if depth > MAX_METADATA_DEPTH:
            raise _fail(path(*where), f"nested more than {MAX_METADATA_DEPTH} levels deep")
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, dict | list))


# ----------------------------------------------------------------------- instance

def _read_chip(instance: dict) -> tuple[int, int]:
    """(sram_bytes, link_bytes_per_s) of a sound chip."""
    chip = _object(_field(instance, "chip", "instance"), "instance.chip")
    _string(chip, "name", "instance.chip")
    cores, sram, hbm, clock = (_natural(_field(chip, key, "instance.chip"), "instance.chip", key,
                                        minimum=1)
                               for key in ("cores", "sram_bytes", "hbm_bytes_per_s", "clock_hz"))
    noc = _object(_field(chip, "noc", "instance.chip"), "instance.chip.noc")
    topology = _string(noc, "topology", "instance.chip.noc")
    if topology not in TOPOLOGIES:
        raise _fail("instance.chip.noc.topology",
                    f"must be one of {', '.join(TOPOLOGIES)}, got {show(topology)}")
    link = _natural(_field(noc, "link_bytes_per_s", "instance.chip.noc"), "instance.chip.noc",
                    "link_bytes_per_s", minimum=1)
    for key in ("mesh_rows", "mesh_cols", "hbm_ports"):
        if topology == "mesh":
            _natural(_field(noc, key, "instance.chip.noc"), "instance.chip.noc", key, minimum=1)
        else:
            _optional_natural(noc, key, "instance.chip.noc")
    _metadata(chip, CHIP_KEYS, "instance.chip")
    _metadata(noc, NOC_KEYS, "instance.chip.noc")
    return sram, link


def _read_op(raw: Any, index: int) -> Op:
    where = ("instance.ops", index)
    op = _object(raw, *where)
    name = _string(op, "name", *where)
    _string(op, "kind", *where)
    layer = _field(op, "layer", *where)
    if layer is not None and (type(layer) is not int or abs(layer) > MAX_INT):
        raise _fail(path(*where, "layer"), "must be an integer or null (magnitude at most "
                                           f"2**53 - 1), got {show(layer)}")
    _naturals(op, ("hbm_bytes", "flops"), *where)
    inputs = _list(op, "inputs", *where)
    for k, producer in enumerate(inputs):
        _natural(producer, *where, "inputs", k)
        if producer >= index:
            raise _fail(path(*where, "inputs", k), f"input {producer} does not come before op "
                                                   f"{index} (ops are in a topological order)")
    execs: dict[int, ExecPlan] = {}
    for k, plan in enumerate(_list(op, "exec_plans", *where, nonempty=True)):
        try:
            pid, time_ns, space, noc_bytes = _get_exec(plan)
        except (KeyError, TypeError):
            pid = time_ns = space = noc_bytes = None
        if not (_is_natural(pid) and _is_natural(time_ns) and _is_natural(space)
                and _is_natural(noc_bytes)):
            _naturals(plan, _EXEC_FIELDS, *where, "exec_plans", k)
        if pid in execs:
            raise _fail(path(*where, "exec_plans", k, "id"), f"duplicate exec plan id {pid}")
        noc_ns = _optional_natural(plan, "noc_ns", *where, "exec_plans", k)
        if len(plan) > 4 + (noc_ns is not None):
            _metadata(plan, EXEC_KEYS, *where, "exec_plans", k)
        execs[pid] = ExecPlan(time_ns, space, noc_bytes, noc_ns)
    preloads: dict[int, PreloadPlan] = {}
    for k, plan in enumerate(_list(op, "preload_plans", *where, nonempty=True)):
        try:
            pid, space, load_ns = _get_preload(plan)
        except (KeyError, TypeError):
            pid = space = load_ns = None
        if not (_is_natural(pid) and _is_natural(space) and _is_natural(load_ns)):
            _naturals(plan, _PRELOAD_FIELDS, *where, "preload_plans", k)
        if pid in preloads:
            raise _fail(path(*where, "preload_plans", k, "id"),
                        f"duplicate preload plan id {pid}")
        noc_ns = _optional_natural(plan, "noc_ns", *where, "preload_plans", k)
        if len(plan) > 3 + (noc_ns is not None):
            _metadata(plan, PRELOAD_KEYS, *where, "preload_plans", k)
        preloads[pid] = PreloadPlan(load_ns, space, noc_ns)
    warmup: dict[tuple[int, int], int] = {}
    longest_run = 0
    for k, pair in enumerate(_list(op, "warmup", *where, nonempty=True)):
        try:
            q, p, time_ns = _get_warmup(pair)
        except (KeyError, TypeError):
            q = p = time_ns = None
        if not (_is_natural(q) and _is_natural(p) and _is_natural(time_ns)):
            _naturals(pair, _WARMUP_FIELDS, *where, "warmup", k)
        if q not in preloads:
            raise _fail(path(*where, "warmup", k, "preload"), f"unknown preload plan id {q}")
        run = execs.get(p)
        if run is None:
            raise _fail(path(*where, "warmup", k, "exec"), f"unknown exec plan id {p}")
        if (q, p) in warmup:
            raise _fail(path(*where, "warmup", k), f"pair (preload {q}, exec {p}) listed twice")
        if len(pair) > 3:
            _metadata(pair, WARMUP_KEYS, *where, "warmup", k)
        warmup[(q, p)] = time_ns
        longest_run = max(longest_run, run.time_ns + time_ns)
    if len(op) > len(OP_KEYS):
        _metadata(op, OP_KEYS, *where)
    longest_load = max(plan.load_ns for plan in preloads.values())
    largest = max(max(plan.space_bytes for plan in execs.values()),
                  max(plan.space_bytes for plan in preloads.values()))
    return Op(name=name, inputs=inputs, execs=execs, preloads=preloads, warmup=warmup,
              longest_ns=longest_load + longest_run, largest_bytes=largest)


def _check_totals(ops: list[Op]) -> None:
    """The sums the timings can form stay below 2**53 (docs/spec.md section 7)."""
    time_total = sum(op.longest_ns for op in ops)
    space_total = sum(op.largest_bytes for op in ops)
    if time_total > TIME_LIMIT_NS:
        raise _fail("instance.ops", "the longest load plus the longest execute with warm-up, "
                                    f"summed over ops, is {time_total:,} ns, above 2**51 "
                                    f"({TIME_LIMIT_NS:,}) ns")
    if space_total > MAX_INT:
        raise _fail("instance.ops", "the largest space_bytes of each op, summed over ops, is "
                                    f"{space_total:,} B, above 2**53 - 1 ({MAX_INT:,}) B")


# ----------------------------------------------------------------------- plan

def read_plan(raw: Any) -> Document:
    """The plan's content, or Malformed naming the first structural problem."""
    if not isinstance(raw, dict):
        raise Malformed(f"plan: must be a JSON object, got {show(raw)}")
    fmt = _field(raw, "format")
    if fmt != PLAN_FORMAT:
        raise _fail("format", f"must be {PLAN_FORMAT!r}, got {show(fmt)}")
    timing = raw.get("timing", ABSENT_TIMING)
    if timing not in TIMINGS:
        raise _fail("timing", f"must be one of {', '.join(TIMINGS)}, got {show(timing)}")
    instance = _object(_field(raw, "instance"), "instance")
    fmt = _field(instance, "format", "instance")
    if fmt != INSTANCE_FORMAT:
        raise _fail("instance.format", f"must be {INSTANCE_FORMAT!r}, got {show(fmt)}")
    _string(instance, "name", "instance")
    sram, link = _read_chip(instance)
    ops = [_read_op(o, i) for i, o in enumerate(_list(instance, "ops", "instance",
                                                      nonempty=True))]
    _check_totals(ops)
    _metadata(instance, INSTANCE_KEYS, "instance")
    n = len(ops)
    choice = _list(raw, "choice")
    if len(choice) != n:
        raise _fail("choice", f"must have one entry per op ({n}), got {len(choice)}")
    chosen = []
    for i, entry in enumerate(choice):
        q, p = _naturals(entry, ("preload", "exec"), "choice", i)
        if len(entry) > 2:
            _metadata(entry, CHOICE_KEYS, "choice", i)
        chosen.append((q, p))
    program = _list(raw, "program")
    for k, entry in enumerate(program):
        if not isinstance(entry, str):
            raise _fail(f"program[{k}]", f"must be a string, got {show(entry)}")
    release = _object(raw.get("release_ns", {}), "release_ns")
    for key, value in release.items():
        _natural(value, "release_ns", key, maximum=TIME_LIMIT_NS)
    claims = _read_claims(raw["claims"]) if "claims" in raw else None
    _metadata(raw, PLAN_KEYS)
    return Document(ops=ops, sram_bytes=sram, link_bytes_per_s=link, timing=timing,
                    choice=chosen, program=program, release=release, claims=claims)


def _read_claims(raw: Any) -> dict[str, Any]:
    claims = _object(raw, "claims")
    _string(claims, "method", "claims")
    status = _field(claims, "status", "claims")
    if status not in STATUSES:
        raise _fail("claims.status", f"must be one of {', '.join(STATUSES)}, got {show(status)}")
    _natural(_field(claims, "makespan_ns", "claims"), "claims", "makespan_ns")
    if claims.get("lower_bound_ns") is not None:
        _natural(claims["lower_bound_ns"], "claims", "lower_bound_ns")
    wall = claims.get("wall_s", 0)  # NaN and infinities fail the range test
    if not isinstance(wall, int | float) or isinstance(wall, bool) or not 0 <= wall <= MAX_INT:
        raise _fail("claims.wall_s", "must be a non-negative number at most 2**53 - 1, got "
                                     f"{show(wall)}")
    _shallow(_object(claims.get("params", {}), "claims", "params"), "claims", "params")
    _metadata(claims, CLAIMS_KEYS, "claims")
    return claims
