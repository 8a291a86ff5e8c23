"""`elk-opt solve --export FILE`: the exact model a method would solve, for any solver.

The model is built by the method's own code (`ilp.prepare`, `cpsat_prepare.prepare`), restrictions,
timing and warm start included, and written as:
- ilp: MPS (`.mps`) or CPLEX LP (`.lp`) through PuLP. MPS and LP carry no start, so a warm
  start goes beside it as a HiGHS solution file (`FILE.start.sol`: `highs
  --read_solution_file`, `Highs.readSolution`).
- cpsat: the `CpModelProto` with its hints, as text (`.pb.txt`, `.pbtxt`) or binary (other
  suffixes), which OR-Tools' `solve` binary and `CpModel.Proto()` parsing accept. CP-SAT's
  solver parameters are not part of the model; the sidecar lists the method's.
Beside it, the sidecar `FILE.json` (format `elk-model-map/1`): the instance itself, the
timing, the restrictions, and the variables that decode a solution into a plan
(`formulations.model_map`), so `elk-opt import-solution FILE.json SOLUTION` needs nothing else.
The sidecar is written last: it exists only beside a complete model.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elk_opt.errors import UsageError
from elk_opt.files import save_json, write_atomic
from elk_opt.io import instance_to_dict
from elk_opt.problem import Instance
from elk_opt.solution import SolveOptions

SIDECAR_FORMAT = "elk-model-map/1"
ILP_FORMATS = {".mps": "mps", ".lp": "lp"}
CPSAT_TEXT = (".pb.txt", ".pbtxt")
DECODE = ("the pairs picked and each load's start and end and each execute's start and end "
          "give the program (formulations.common.decode_program); under shared-noc every "
          "load and execute is released at its start and the non-binding releases dropped "
          "(formulations.replay.replay_shared)")


@dataclass(frozen=True)
class Exported:
    model: Path
    sidecar: Path
    start: Path | None  # the warm start beside an MPS/LP model, if any
    variables: int
    constraints: int


def sidecar_path(model: str | Path) -> Path:
    return Path(f"{model}.json")


def model_format(method: str, path: str | Path) -> str:
    """The file format the model is written in, by method and suffix (UsageError if none)."""
    name = str(path)
    if method == "ilp":
        fmt = ILP_FORMATS.get(Path(name).suffix.lower())
        if fmt is None:
            raise UsageError(f"--export {name}: the ilp model is written as .mps or .lp")
        return fmt
    if method == "cpsat":
        return "cp-model-text" if name.lower().endswith(CPSAT_TEXT) else "cp-model-binary"
    raise UsageError(f"--export works with --method ilp or cpsat, not {method!r}")


def instance_digest(raw: dict[str, Any]) -> str:
    """A hash of the instance as the sidecar holds it (sorted keys, compact JSON)."""
    text = json.dumps(raw, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def export_model(instance: Instance, method: str, options: SolveOptions,
                 path: str | Path) -> Exported:
    """Build the method's model for `instance` under `options` and write it with its
    sidecar (and warm start); the method's options are checked as a solve checks them."""
    if options.free_order:
        raise UsageError("exported models keep the instance's execution order, not free")
    fmt = model_format(method, path)
    model, sidecar = Path(path), sidecar_path(path)
    if method == "ilp":
        from formulations import ilp

        how = ilp.setup(instance, options)
        im, warm = ilp.prepare(instance, options, how.restrict)
        _write_pulp(im.prob, fmt, model)
        start = Path(f"{path}.start.sol") if warm and _all_set(im.prob) else None
        if start is not None:
            _write_start(im.prob, start)
        variables = ilp.variable_map(im).to_dict()
        params, solver = how.claims, None
        size = (len(im.prob.variables()), len(im.prob.constraints))
        warm_file = None if start is None else {"file": start.name, "format": "highs"}
        hinted = options.warm_plan
    else:
        from formulations import cpsat, cpsat_prepare

        ready = cpsat_prepare.prepare(instance, options)
        proto = ready.cm.model
        _write_proto(proto, model, fmt)
        variables = cpsat.variable_map(ready.cm).to_dict()
        params, solver, start = ready.params, ready.solver_parameters, None
        size = (len(proto.proto.variables), len(proto.proto.constraints))
        warm_file = {"file": model.name, "format": "solution_hint in the model"} \
            if ready.cm.hinted else None
        # under 5b the hint is the better of the re-timed warm start and section-5 plan
        hinted = ready.best if options.timing == "shared-noc" else options.warm_plan
    raw = instance_to_dict(instance)
    save_json(sidecar, {
        "format": SIDECAR_FORMAT, "method": method,
        "model": {"file": model.name, "format": fmt, "sense": "minimize",
                  "objective": "the makespan: the last execute's end"},
        "timing": options.timing, "params": params,
        "warm_start": None if warm_file is None else
        {**warm_file, "method": params.get("warm_start", "the method's own start plan"),
         "makespan_ns": hinted.claims.makespan_ns
         if hinted is not None and hinted.claims else None},
        "solver_parameters": solver,
        "decode": DECODE, "variables": variables,
        "instance_sha256": instance_digest(raw), "instance": raw})
    return Exported(model, sidecar, start, *size)


def _write_proto(model: Any, path: Path, fmt: str) -> None:
    """OR-Tools writes to a file name (text when it ends in "txt"); write beside the target
    first, then rename."""
    target = path.resolve()
    suffix = ".pb.txt" if fmt == "cp-model-text" else ".pb"
    fd, scratch = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
    os.close(fd)
    try:
        if not model.export_to_file(scratch):
            raise UsageError(f"--export {path}: OR-Tools could not write the model")
        os.replace(scratch, target)
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)


def _write_pulp(prob: Any, fmt: str, path: Path) -> None:
    """PuLP writes to a file name; write there first, then move the text in atomically."""
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp) / f"model.{fmt}"
        if fmt == "mps":
            prob.writeMPS(str(scratch))
        else:
            prob.writeLP(str(scratch))
        text = scratch.read_text()
    write_atomic(path, lambda f: f.write(text))


def _all_set(prob: Any) -> bool:
    """Every variable has a start value (the in-process HiGHS starts only from those)."""
    return all(v.varValue is not None for v in prob.variables())


def _write_start(prob: Any, path: Path) -> None:
    """The variables' initial values as a HiGHS solution file (HiGHS reads it by name)."""
    columns = [(v.name, v.varValue) for v in prob.variables()]
    objective = sum(c * (v.varValue or 0.0) for v, c in prob.objective.items())
    lines = ["Model status", "Unknown", "", "# Primal solution values", "Feasible",
             f"Objective {objective:.17g}", f"# Columns {len(columns)}"]
    lines += [f"{name} {value:.17g}" for name, value in columns]
    write_atomic(path, lambda f: f.write("\n".join(lines) + "\n"))
