"""`elk-opt import-solution model.json solution`: a plan from another solver's solution of an
exported model, decoded as the method decodes its own (`formulations.export`).

The sidecar gives the instance, the timing and the variable map; the solution file gives the
values (`formulations.solution_files`). The plan's program is `decode`'s, with `replay_shared`'s
release times under 5b. Its claims are honest: `optimal` only when the file says optimal and
gives a bound (HiGHS writes its objective bound; CBC says "Optimal" only when it proved it;
CP-SAT responses carry their bound) that meets the plan's makespan; else `feasible` with the
better of that bound and the Ideal bound.

Two kinds of refusal: a sidecar or solution that does not fit (a missing variable, a pick
that is not 0/1, an edited instance) is an InputError (exit 2); a solution that fits but is
not a feasible solution of the model (its plan breaks R5, or replays later than the
solution's own objective or times) is a `RejectedSolution` (exit 1): no plan is written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elk_opt.errors import InputError
from elk_opt.evaluate import evaluate
from elk_opt.io import instance_from_dict
from elk_opt.json_input import read_json
from elk_opt.problem import TIMINGS, Instance, Instr, Plan, Timing
from elk_opt.solution import make_plan
from formulations.common import claimed_bound, decode
from formulations.export import SIDECAR_FORMAT, instance_digest
from formulations.model_map import Key, MissingValue, VariableMap
from formulations.replay import replay_shared
from formulations.solution_files import SolutionFile, read_solution_file

PICK_TOLERANCE = 1e-4  # a pick binary's value may be this far from 0 or 1
SOLVER_OF = {"highs": "highs", "cbc": "cbc", "cpsat-response": "cp-sat",
             "name-value": "unknown (a name-value solution file)"}


class RejectedSolution(Exception):
    """The solution file fits the model's variables but is not a feasible solution of it."""


@dataclass(frozen=True)
class Sidecar:
    method: str
    timing: Timing
    instance: Instance
    variables: VariableMap
    params: dict[str, Any]


def read_sidecar(path: str | Path) -> Sidecar:
    """The sidecar of an exported model (InputError naming the file and field)."""
    raw = read_json(path)
    if not isinstance(raw, dict) or raw.get("format") != SIDECAR_FORMAT:
        found = raw.get("format") if isinstance(raw, dict) else type(raw).__name__
        raise InputError(f"{path}: format: expected {SIDECAR_FORMAT!r}, got {found!r}")
    method = raw.get("method")
    if method not in ("ilp", "cpsat"):
        raise InputError(f"{path}: method: expected 'ilp' or 'cpsat', got {method!r}")
    timing = raw.get("timing")
    if timing not in TIMINGS:
        raise InputError(f"{path}: timing: expected one of {', '.join(TIMINGS)}, "
                         f"got {timing!r}")
    if not isinstance(raw.get("instance"), dict):
        raise InputError(f"{path}: instance: expected an elk-instance/1 object")
    if raw.get("instance_sha256") != instance_digest(raw["instance"]):
        raise InputError(f"{path}: instance_sha256: does not match the embedded instance "
                         "(the sidecar was edited since the export)")
    instance = instance_from_dict(raw["instance"], str(path), "instance")
    try:
        variables = VariableMap.from_dict(raw.get("variables"))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise InputError(f"{path}: variables: not a variable map ({e})") from None
    if len(variables.pick) != len(instance.ops):
        raise InputError(f"{path}: variables.pick: {len(variables.pick)} ops, the instance "
                         f"has {len(instance.ops)}")
    params = raw.get("params")
    return Sidecar(method, timing, instance, variables, dict(params or {}))


def import_solution(sidecar_path: str | Path, solution_path: str | Path) -> Plan:
    """The plan of a solver's solution of an exported model, checked and honestly claimed."""
    started = time.perf_counter()
    side = read_sidecar(sidecar_path)
    solution = read_solution_file(solution_path)
    if (side.method == "cpsat") != (solution.format == "cpsat-response"):
        raise InputError(f"{solution_path}: a {solution.format} solution file does not fit "
                         f"the {side.method} model of {sidecar_path}")
    _check_picks(side.variables, solution, str(solution_path))
    try:
        times = side.variables.times(solution.value)
    except MissingValue as e:
        raise InputError(f"{solution_path}: no value for variable {e.args[0]!r} of the "
                         "model") from None
    instance = side.instance
    program = decode(instance, times)
    release: dict[Instr, int] = {}
    if side.timing == "shared-noc":
        try:
            release, _schedule = replay_shared(instance, program, times)
        except AssertionError as e:
            raise RejectedSolution(f"{solution_path}: the solution's times are not a 5b "
                                   f"schedule of its picks ({e})") from None
    schedule = evaluate(instance, times.choice, program, release, timing=side.timing)
    sram = instance.chip.sram_bytes
    if schedule.peak_sram_bytes > sram:
        raise RejectedSolution(f"{solution_path}: its plan breaks R5: "
                               f"{schedule.peak_sram_bytes:,} B of SRAM at its peak, above "
                               f"{sram:,} B")
    makespan = schedule.makespan_ns
    if solution.objective is not None and makespan > round(solution.objective):
        raise RejectedSolution(f"{solution_path}: its plan takes {makespan:,} ns, above the "
                               f"solution's objective {solution.objective:g}: not a "
                               "feasible solution of the model")
    try:
        lower = claimed_bound(instance, solution.bound, makespan)
    except AssertionError:
        raise RejectedSolution(f"{solution_path}: its objective bound {solution.bound:g} is "
                               f"above its plan's makespan {makespan:,} ns") from None
    params = {**side.params, "solver": SOLVER_OF[solution.format], "model_timing": side.timing,
              "solution_file": Path(solution_path).name, "solution_format": solution.format,
              "solver_status": solution.status}
    return make_plan(instance, times.choice, program, method=side.method, started=started,
                     timing=side.timing, status="optimal" if lower == makespan else "feasible",
                     lower_bound_ns=lower, params=params, release_ns=release)


def _check_picks(variables: VariableMap, solution: SolutionFile, source: str) -> None:
    """Each op picks exactly one pair: its pick values are 0 or 1, one of them 1."""
    for j, row in enumerate(variables.pick):
        values: list[tuple[Key, float]] = []
        for p in row:
            value = solution.value(p.var)
            if value is None:
                raise InputError(f"{source}: no value for variable {p.var!r} (a pick of op "
                                 f"{j})")
            values.append((p.var, value))
        off = [(k, v) for k, v in values if min(abs(v), abs(v - 1)) > PICK_TOLERANCE]
        if off:
            raise InputError(f"{source}: {off[0][0]!r}: a pick of op {j} is {off[0][1]:g}, "
                             "not 0 or 1")
        if sum(v > 0.5 for _k, v in values) != 1:
            raise InputError(f"{source}: op {j} picks {sum(v > 0.5 for _k, v in values)} "
                             "pairs, not one")
