"""The problem of docs/spec.md sections 1-3 as immutable data.

Everything that builds, solves or scores a plan speaks these types; JSON lives in `elk_opt.io`.
Times are integer nanoseconds and sizes integer bytes, as in the file formats.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

Topology = Literal["all_to_all", "mesh"]
Status = Literal["optimal", "feasible", "heuristic"]
Timing = Literal["separate-noc", "shared-noc"]
# R2: "instance" executes the ops in the instance's order; "free" may run any topological order
ExecOrder = Literal["instance", "free"]
EXEC_ORDERS: tuple[str, ...] = ("instance", "free")
STATUSES: tuple[str, ...] = ("optimal", "feasible", "heuristic")
TOPOLOGIES: tuple[str, ...] = ("all_to_all", "mesh")
TIMINGS: tuple[str, ...] = ("separate-noc", "shared-noc")
DEFAULT_TIMING: Timing = "shared-noc"  # what new plans use (docs/spec.md section 5b)
ABSENT_TIMING: Timing = "separate-noc"  # what a plan file without "timing" means


@dataclass(frozen=True)
class Noc:
    topology: Topology
    link_bytes_per_s: int
    mesh_rows: int = 0
    mesh_cols: int = 0
    hbm_ports: int = 0


@dataclass(frozen=True)
class Chip:
    name: str
    cores: int
    sram_bytes: int  # per core
    hbm_bytes_per_s: int
    clock_hz: int
    noc: Noc
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class ExecPlan:
    id: int
    time_ns: int
    space_bytes: int  # per core, while executing
    noc_bytes: int  # per core
    noc_ns: int | None = None  # exclusive port time (section 5b); None: derived from noc_bytes


@dataclass(frozen=True)
class PreloadPlan:
    id: int
    space_bytes: int  # per core, while waiting to execute
    load_ns: int
    noc_ns: int | None = None  # exclusive port time (section 5b); None: derived from space_bytes


@dataclass(frozen=True)
class Warmup:
    preload: int
    exec: int
    time_ns: int


@dataclass(frozen=True)
class Op:
    name: str
    kind: str
    layer: int | None
    inputs: tuple[int, ...]
    hbm_bytes: int
    flops: int
    exec_plans: tuple[ExecPlan, ...]
    preload_plans: tuple[PreloadPlan, ...]
    warmup: tuple[Warmup, ...]
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @cached_property
    def exec_by_id(self) -> dict[int, ExecPlan]:
        return {p.id: p for p in self.exec_plans}

    @cached_property
    def preload_by_id(self) -> dict[int, PreloadPlan]:
        return {q.id: q for q in self.preload_plans}

    @cached_property
    def warmup_ns(self) -> dict[tuple[int, int], int]:
        """Warm-up time keyed by (preload id, exec id); only compatible pairs are keys."""
        return {(w.preload, w.exec): w.time_ns for w in self.warmup}

    def pairs(self) -> list[tuple[PreloadPlan, ExecPlan, int]]:
        """Every compatible (preload plan, exec plan, warm-up ns) triple."""
        return [(self.preload_by_id[w.preload], self.exec_by_id[w.exec], w.time_ns)
                for w in self.warmup]


@dataclass(frozen=True)
class Instance:
    name: str
    chip: Chip
    ops: tuple[Op, ...]
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __len__(self) -> int:
        return len(self.ops)

    def twin_key(self, first: int, stop: int) -> tuple:
        """What ops [first, stop) are to every model: their plans and warm-ups, op by op
        (names, inputs and metadata aside). Runs with equal keys are twins."""
        return tuple((op.exec_plans, op.preload_plans, op.warmup) for op in self.ops[first:stop])


@dataclass(frozen=True)
class Choice:
    exec: int
    preload: int


@dataclass(frozen=True)
class Claims:
    method: str
    status: Status
    makespan_ns: int
    lower_bound_ns: int | None = None
    wall_s: float = 0.0
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # a plan file with it would not load again (elk_opt.io); a negative time means the
        # method's `started` came from another clock than time.perf_counter()
        if not (math.isfinite(self.wall_s) and self.wall_s >= 0):
            raise ValueError(f"claims.wall_s must be a finite time >= 0, got {self.wall_s!r}")


Kind = Literal["P", "E"]
Instr = tuple[Kind, int]
"""One program instruction: ("P", j) preloads op j, ("E", i) executes op i."""


def instr_name(instr: Instr) -> str:
    return f"{instr[0]}{instr[1]}"


def is_count(value: Any) -> bool:
    """A non-negative integer (not a bool): a count, or a time in whole ns."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@dataclass(frozen=True)
class Plan:
    instance: Instance
    choice: tuple[Choice, ...]
    program: tuple[Instr, ...]
    release_ns: Mapping[Instr, int] = field(default_factory=dict)
    claims: Claims | None = None
    timing: Timing = ABSENT_TIMING


def program_from_issue(
    preload_order: Sequence[int], issued_before: Sequence[int], exec_order: Sequence[int]
) -> tuple[Instr, ...]:
    """Build a program from a preload order and, per preload, the execute position it precedes.

    `issued_before[k]` is the index in `exec_order` of the first execute that comes after the
    k-th preload of `preload_order`; it must be non-decreasing along the order (preloads are
    issued in order) and not later than the position of the preloaded op's own execute.
    """
    program: list[Instr] = []
    k = 0
    for pos, op in enumerate(exec_order):
        while k < len(preload_order) and issued_before[k] <= pos:
            program.append(("P", preload_order[k]))
            k += 1
        program.append(("E", op))
    if k != len(preload_order):
        raise ValueError("a preload is issued after the last execute")
    return tuple(program)
