"""Lowering a plan to the Elk paper's abstract device program (section 4.5).

Every core runs the same call list (SPMD), each on its own tile of every op:

- `preload_async(op)` starts loading the op's data from HBM into the preload layout and returns
  at once; completion sets the op's done tag. A preload of 0 ns moves nothing: it only reserves
  its space and sets its tag when issued.
- `execute(op)` is `wait(done tag)`, then `distribute_data` (the warm-up: preload layout to
  execute layout over the NoC), then `local_execute`; it returns when every core has finished.

Three synchronisation rules give the start rules of docs/spec.md sections 5 and 5b, and the
simulator enforces exactly these: an execute blocks every later call until it returns; preloads
run one at a time in call order (a DMA queue); a preload blocks only its own execute (through
its tag). Release times become `not_before_ns` on the call. The calls carry what section 5b's
port model needs: bytes per core and, when the plan's cost model gave it, `noc_ns` (the port
time a preload or the local execute holds alone; the warm-up is pure redistribution), so the
simulator derives each call's port demand with `elk_opt.noc` on the program's own chip.

The tile-to-core mapping is in order on an all-to-all chip (tile k on core k) and
dimension-ordered on a mesh: tiles fill the rows in boustrophedon order (row 0 left to right,
row 1 right to left, ...), so consecutive tiles sit on neighbouring routers. Cores are numbered
row-major.

Format `elk-device-program/1` (JSON):
```
{"format": "elk-device-program/1", "name": str, "chip": {...as in elk-instance/1...},
 "timing": "separate-noc" | "shared-noc",           # the plan's; optional, absent: separate-noc
 "mapping": {"scheme": "in_order" | "boustrophedon", "tile_to_core": [int]},
 "ops": [{"name": str, "flops": int}],
 "program": [
   {"call": "preload_async", "op": j, "tag": "done<j>", "preload_plan": id, "load_ns": int,
    "hbm_bytes": int, "space_bytes": int, "noc_ns": int, "not_before_ns": int},
   {"call": "execute", "op": i, "wait": "done<i>", "exec_plan": id, "not_before_ns": int,
    "distribute_data": {"ns": int, "bytes_per_core": int},
    "local_execute": {"ns": int, "space_bytes": int, "noc_bytes_per_core": int,
                      "noc_ns": int}}]}
```
`hbm_bytes` is the op's total; `space_bytes` and `*_per_core` are per core. Both `noc_ns` are
optional (written only when the plan has them): absent, the port time is the bytes at the
port's rate (`space_bytes` for a preload, `noc_bytes_per_core` for a local execute).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from elk_opt.errors import InputError, UsageError
from elk_opt.files import save_json
from elk_opt.io import chip_from_dict, chip_to_dict
from elk_opt.json_input import Reader, read_json
from elk_opt.problem import ABSENT_TIMING, TIMINGS, Chip, Choice, Instr, Plan, Timing

DEVICE_FORMAT = "elk-device-program/1"


def check_mesh(chip: Chip) -> None:
    noc = chip.noc
    if noc.topology != "mesh":
        return
    if noc.mesh_rows <= 0 or noc.mesh_cols <= 0 or noc.hbm_ports <= 0:
        raise UsageError(f"chip {chip.name}: a mesh needs positive mesh_rows, mesh_cols and "
                         f"hbm_ports, got {noc.mesh_rows}, {noc.mesh_cols}, {noc.hbm_ports}")
    if noc.mesh_rows * noc.mesh_cols != chip.cores:
        raise UsageError(f"chip {chip.name}: mesh {noc.mesh_rows} x {noc.mesh_cols} does not "
                         f"have {chip.cores} cores")


def tile_to_core(chip: Chip) -> tuple[str, tuple[int, ...]]:
    """The mapping scheme's name and the core of every tile."""
    if chip.noc.topology != "mesh":
        return "in_order", tuple(range(chip.cores))
    check_mesh(chip)
    rows, cols = chip.noc.mesh_rows, chip.noc.mesh_cols
    order = []
    for r in range(rows):
        cs = range(cols) if r % 2 == 0 else range(cols - 1, -1, -1)
        order += [r * cols + c for c in cs]
    return "boustrophedon", tuple(order)


def swap_topology(chip: Chip, other: Chip) -> Chip:
    """`other`'s network and memory bandwidths on `chip`'s cores and SRAM (checked equal)."""
    if other.cores != chip.cores or other.sram_bytes != chip.sram_bytes:
        raise UsageError(f"chip {other.name} has {other.cores} cores of {other.sram_bytes:,} B "
                         f"SRAM; the plan needs {chip.cores} cores of {chip.sram_bytes:,} B")
    check_mesh(other)
    return other


@dataclass(frozen=True)
class PreloadCall:
    op: int
    preload_plan: int
    load_ns: int
    hbm_bytes: int  # the op's total
    space_bytes: int  # per core
    not_before_ns: int = 0
    noc_ns: int | None = None  # port time alone (section 5b); None: space_bytes at the port rate

    @property
    def tag(self) -> str:
        return f"done{self.op}"


@dataclass(frozen=True)
class ExecuteCall:
    op: int
    exec_plan: int
    distribute_ns: int  # the warm-up
    distribute_bytes: int  # per core, the preloaded data redistributed
    local_ns: int
    space_bytes: int  # per core, the execute layout
    noc_bytes: int  # per core
    not_before_ns: int = 0
    noc_ns: int | None = None  # local execute's port time alone; None: noc_bytes at the port rate

    @property
    def wait(self) -> str:
        return f"done{self.op}"


Call = PreloadCall | ExecuteCall


@dataclass(frozen=True)
class DeviceProgram:
    name: str
    chip: Chip
    scheme: str
    tile_to_core: tuple[int, ...]
    op_names: tuple[str, ...]
    op_flops: tuple[int, ...]
    calls: tuple[Call, ...]
    timing: Timing = ABSENT_TIMING  # the plan's: which analytic makespan the program has

    def plan_program(self) -> tuple[Instr, ...]:
        """The plan program this was lowered from."""
        return tuple(("P", c.op) if isinstance(c, PreloadCall) else ("E", c.op)
                     for c in self.calls)

    def choice(self) -> tuple[Choice, ...]:
        execs = {c.op: c.exec_plan for c in self.calls if isinstance(c, ExecuteCall)}
        loads = {c.op: c.preload_plan for c in self.calls if isinstance(c, PreloadCall)}
        return tuple(Choice(exec=execs[i], preload=loads[i]) for i in range(len(self.op_names)))


def lower(plan: Plan, chip: Chip | None = None) -> DeviceProgram:
    """The device program of `plan`, on `chip`'s network when given (same cores and SRAM)."""
    instance = plan.instance
    target = instance.chip if chip is None else swap_topology(instance.chip, chip)
    check_mesh(target)
    _check_structure(plan.program, len(instance.ops), "program")
    calls: list[Call] = []
    for kind, i in plan.program:
        op, c = instance.ops[i], plan.choice[i]
        q, p = op.preload_by_id[c.preload], op.exec_by_id[c.exec]
        if kind == "P":
            calls.append(PreloadCall(op=i, preload_plan=q.id, load_ns=q.load_ns,
                                     hbm_bytes=op.hbm_bytes, space_bytes=q.space_bytes,
                                     not_before_ns=plan.release_ns.get(("P", i), 0),
                                     noc_ns=q.noc_ns))
        else:
            warm = op.warmup_ns.get((q.id, p.id))
            if warm is None:
                raise InputError(f"op {i}: preload plan {q.id} and exec plan {p.id} are not "
                                 "a compatible pair (rule R4)")
            calls.append(ExecuteCall(op=i, exec_plan=p.id, distribute_ns=warm,
                                     distribute_bytes=q.space_bytes if warm else 0,
                                     local_ns=p.time_ns, space_bytes=p.space_bytes,
                                     noc_bytes=p.noc_bytes,
                                     not_before_ns=plan.release_ns.get(("E", i), 0),
                                     noc_ns=p.noc_ns))
    scheme, mapping = tile_to_core(target)
    return DeviceProgram(name=instance.name, chip=target, scheme=scheme, tile_to_core=mapping,
                         op_names=tuple(op.name for op in instance.ops),
                         op_flops=tuple(op.flops for op in instance.ops), calls=tuple(calls),
                         timing=plan.timing)


def retarget(dp: DeviceProgram, chip: Chip) -> DeviceProgram:
    """The same calls on another chip's network (same cores and SRAM), with its mapping."""
    target = swap_topology(dp.chip, chip)
    scheme, mapping = tile_to_core(target)
    return dataclasses.replace(dp, chip=target, scheme=scheme, tile_to_core=mapping)


def _check_structure(program: tuple[Instr, ...], n: int, where: str) -> None:
    """Each op preloaded once and executed once, its preload first (rules R1 and R3)."""
    loaded: set[int] = set()
    executed: set[int] = set()
    for k, (kind, i) in enumerate(program):
        seen = loaded if kind == "P" else executed
        if i in seen:
            raise InputError(f"{where}[{k}]: {kind}{i} appears twice")
        if kind == "E" and i not in loaded:
            raise InputError(f"{where}[{k}]: E{i} comes before P{i}")
        seen.add(i)
    if len(executed) != n or len(loaded) != n:
        missing = sorted(set(range(n)) - executed)
        raise InputError(f"{where}: does not preload and execute every op "
                         f"(first missing E{missing[0] if missing else '?'})")


def device_program_to_dict(dp: DeviceProgram) -> dict[str, Any]:
    program: list[dict[str, Any]] = []
    for c in dp.calls:
        if isinstance(c, PreloadCall):
            program.append(_with_noc_ns({"call": "preload_async", "op": c.op, "tag": c.tag,
                                         "preload_plan": c.preload_plan, "load_ns": c.load_ns,
                                         "hbm_bytes": c.hbm_bytes,
                                         "space_bytes": c.space_bytes,
                                         "not_before_ns": c.not_before_ns}, c.noc_ns))
        else:
            program.append({"call": "execute", "op": c.op, "wait": c.wait,
                            "exec_plan": c.exec_plan, "not_before_ns": c.not_before_ns,
                            "distribute_data": {"ns": c.distribute_ns,
                                                "bytes_per_core": c.distribute_bytes},
                            "local_execute": _with_noc_ns(
                                {"ns": c.local_ns, "space_bytes": c.space_bytes,
                                 "noc_bytes_per_core": c.noc_bytes}, c.noc_ns)})
    return {"format": DEVICE_FORMAT, "name": dp.name, "chip": chip_to_dict(dp.chip),
            "timing": dp.timing,
            "mapping": {"scheme": dp.scheme, "tile_to_core": list(dp.tile_to_core)},
            "ops": [{"name": name, "flops": flops}
                    for name, flops in zip(dp.op_names, dp.op_flops, strict=True)],
            "program": program}


def _with_noc_ns(call: dict[str, Any], noc_ns: int | None) -> dict[str, Any]:
    if noc_ns is not None:
        call["noc_ns"] = noc_ns
    return call


def device_program_from_dict(raw: Any, source: str = "<device program>") -> DeviceProgram:
    r = Reader(source)
    obj = r.obj(raw, "")
    fmt = r.field(obj, "format", "")
    if fmt != DEVICE_FORMAT:
        raise r.fail("format", f"must be {DEVICE_FORMAT!r}, got {fmt!r}")
    chip = chip_from_dict(r.field(obj, "chip", ""), r)
    try:
        check_mesh(chip)
    except UsageError as e:
        raise r.fail("chip.noc", str(e)) from None
    timing = obj.get("timing", ABSENT_TIMING)
    if timing not in TIMINGS:
        raise r.fail("timing", f"must be one of {', '.join(TIMINGS)}, got {timing!r}")
    mapping = r.obj(r.field(obj, "mapping", ""), "mapping")
    scheme = r.string(mapping, "scheme", "mapping")
    tiles = r.array(mapping, "tile_to_core", "mapping")
    if not all(type(t) is int for t in tiles) or sorted(tiles) != list(range(chip.cores)):
        raise r.fail("mapping.tile_to_core", f"must be a permutation of the {chip.cores} cores")
    names, flops = [], []
    for k, raw_op in enumerate(r.array(obj, "ops", "", nonempty=True)):
        op = r.obj(raw_op, f"ops[{k}]")
        names.append(r.string(op, "name", f"ops[{k}]"))
        flops.append(r.nonneg(op, "flops", f"ops[{k}]"))
    n = len(names)
    calls: list[Call] = []
    for k, raw_call in enumerate(r.array(obj, "program", "")):
        where = f"program[{k}]"
        c = r.obj(raw_call, where)
        kind = r.string(c, "call", where)
        op = r.nonneg(c, "op", where)
        if op >= n:
            raise r.fail(f"{where}.op", f"must name one of the {n} ops, got {op}")
        if kind == "preload_async":
            if r.string(c, "tag", where) != f"done{op}":
                raise r.fail(f"{where}.tag", f"must be 'done{op}', the op's own tag")
            calls.append(PreloadCall(op=op, preload_plan=r.nonneg(c, "preload_plan", where),
                                     load_ns=r.nonneg(c, "load_ns", where),
                                     hbm_bytes=r.nonneg(c, "hbm_bytes", where),
                                     space_bytes=r.nonneg(c, "space_bytes", where),
                                     not_before_ns=r.nonneg(c, "not_before_ns", where),
                                     noc_ns=r.optional_nonneg(c, "noc_ns", where)))
        elif kind == "execute":
            if r.string(c, "wait", where) != f"done{op}":
                raise r.fail(f"{where}.wait", f"must be 'done{op}': an execute waits for its "
                                              "own preload only")
            dist = r.obj(r.field(c, "distribute_data", where), f"{where}.distribute_data")
            local = r.obj(r.field(c, "local_execute", where), f"{where}.local_execute")
            calls.append(ExecuteCall(
                op=op, exec_plan=r.nonneg(c, "exec_plan", where),
                distribute_ns=r.nonneg(dist, "ns", f"{where}.distribute_data"),
                distribute_bytes=r.nonneg(dist, "bytes_per_core", f"{where}.distribute_data"),
                local_ns=r.nonneg(local, "ns", f"{where}.local_execute"),
                space_bytes=r.nonneg(local, "space_bytes", f"{where}.local_execute"),
                noc_bytes=r.nonneg(local, "noc_bytes_per_core", f"{where}.local_execute"),
                not_before_ns=r.nonneg(c, "not_before_ns", where),
                noc_ns=r.optional_nonneg(local, "noc_ns", f"{where}.local_execute")))
        else:
            raise r.fail(f"{where}.call", f"must be 'preload_async' or 'execute', got {kind!r}")
    dp = DeviceProgram(name=r.string(obj, "name", ""), chip=chip, scheme=scheme,
                       tile_to_core=tuple(tiles), op_names=tuple(names), op_flops=tuple(flops),
                       calls=tuple(calls), timing=timing)
    try:
        _check_structure(dp.plan_program(), n, "program")
    except InputError as e:
        raise InputError(f"{source}: {e}") from None
    return dp


def load_device_program(path: str) -> DeviceProgram:
    return device_program_from_dict(read_json(path), str(path))


def save_device_program(path: str, dp: DeviceProgram) -> None:
    save_json(path, device_program_to_dict(dp))
