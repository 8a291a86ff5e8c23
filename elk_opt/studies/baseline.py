"""Heuristic regression baselines: recorded makespans on a fixed suite, and the check.

The baseline keeps its instances as files beside it, so a change to the front end or the
synthetic generator cannot move the goalposts: only a change to a heuristic can change what
it scores. Records are kept per timing (docs/spec.md 5 "separate-noc", 5b "shared-noc"), each
checked under its own timing; refreshing one timing keeps the others' records for every
instance whose file did not change, and a study of some methods only adds or replaces their
records, keeping the others' (so a new heuristic gets its records without the rest being
run again). A heuristic regresses when it gets worse than its record
by more than TOLERANCE; anything beating a recorded proven optimum is a bug, whatever the
tolerance.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from elk_opt.errors import InputError
from elk_opt.files import ensure_dir, save_json
from elk_opt.io import instance_to_dict, load_instance, save_instance
from elk_opt.json_input import read_json
from elk_opt.methods import METHODS, heuristics, solve
from elk_opt.problem import TIMINGS, Timing
from elk_opt.solution import SolveOptions
from elk_opt.studies.gap import Cell
from elk_opt.studies.suites import InstanceSpec

DEFAULT_PATH = Path("tests/baselines/heuristics.json")
TOLERANCE = 0.001  # relative; heuristics are deterministic, this only absorbs tie-breaking


def write_baseline(specs: Sequence[InstanceSpec], cells: Sequence[Cell], path: Path,
                   timing: Timing) -> list[str]:
    """Record every heuristic's makespan and the proven optimum under `timing` from a finished
    study; returns the instances whose records under other timings were dropped because
    their instance changed."""
    folder = ensure_dir(path.parent / "instances")
    entries = read_baseline(path)["instances"] if path.exists() else {}
    dropped = []
    for spec in specs:
        instance = spec.build()
        file = folder / f"{spec.key}.json"
        entry = entries.setdefault(spec.key, {"file": f"instances/{spec.key}.json",
                                              "timings": {}})
        changed = file.exists() and json.loads(file.read_text()) != instance_to_dict(instance)
        if changed and set(entry["timings"]) - {timing}:
            dropped.append(spec.key)
            entry["timings"] = {}
        save_instance(file, instance)
        mine = [c for c in cells if c.instance == spec.key and c.makespan_ns is not None]
        optima = sorted({c.makespan_ns for c in mine if c.status == "optimal"})
        # a study of some methods only (a heuristic added) keeps the others' records and a
        # proven optimum it did not prove again
        old = {} if changed else entry["timings"].get(timing, {})
        entry["timings"][timing] = {
            "optimum_ns": optima[0] if optima else old.get("optimum_ns"),
            "heuristics": {**old.get("heuristics", {}),
                           **{c.method: c.makespan_ns for c in mine if c.family == "heuristic"}},
        }
    save_json(path, {"tolerance": TOLERANCE, "instances": entries})
    return dropped


def read_baseline(path: Path) -> dict[str, Any]:
    """The baseline file, its structure checked (InputError naming the field)."""
    doc = read_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("instances"), dict):
        raise InputError(f"{path}: instances: must be an object of recorded instances")
    tolerance = doc.get("tolerance")
    if (not isinstance(tolerance, int | float) or isinstance(tolerance, bool)
            or not 0 <= tolerance < 1):
        raise InputError(f"{path}: tolerance: must be a number in [0, 1), got {tolerance!r}")
    for key, entry in doc["instances"].items():
        where = f"{path}: instances.{key}"
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
            raise InputError(f"{where}.file: must name the instance file beside the baseline")
        if "timings" not in entry:
            raise InputError(f"{where}.timings: missing (a baseline from before records were "
                             "kept per timing)")
        if not isinstance(entry["timings"], dict):
            raise InputError(f"{where}.timings: must be an object, got {entry['timings']!r}")
        unknown = set(entry["timings"]) - set(TIMINGS)
        if unknown:
            raise InputError(f"{where}.timings: unknown timing {sorted(unknown)[0]!r}; known: "
                             f"{', '.join(TIMINGS)}")
        for timing, record in entry["timings"].items():
            if (not isinstance(record, dict) or not isinstance(record.get("heuristics"), dict)
                    or "optimum_ns" not in record):
                raise InputError(f"{where}.timings.{timing}: must hold optimum_ns and "
                                 "heuristics")
    return doc


@dataclass(frozen=True)
class Regression:
    instance: str
    timing: str
    method: str
    makespan_ns: int
    message: str


def check_baseline(path: Path) -> tuple[int, list[Regression]]:
    """(cells checked, problems) for every heuristic now registered on every recorded instance,
    under every timing recorded for it."""
    doc = read_baseline(path)
    tolerance = doc["tolerance"]
    problems: list[Regression] = []
    checked = 0
    for key, entry in doc["instances"].items():
        instance = load_instance(path.parent / entry["file"])
        for timing, record in entry["timings"].items():
            optimum = record["optimum_ns"]
            for method in heuristics():
                plan = solve(instance, method, SolveOptions(timing=timing, exec_order="instance"))
                makespan = plan.claims.makespan_ns  # type: ignore[union-attr]
                checked += 1
                recorded = record["heuristics"].get(method)
                if optimum is not None and makespan < optimum:
                    problems.append(Regression(key, timing, method, makespan,
                                               f"{makespan:,} ns beats the proven optimum "
                                               f"{optimum:,} ns: a bug"))
                if recorded is not None and makespan > recorded * (1 + tolerance):
                    problems.append(Regression(key, timing, method, makespan,
                                               f"{makespan:,} ns is worse than the recorded "
                                               f"{recorded:,} ns"))
    return checked, problems


def recorded_methods(path: Path, timing: Timing) -> set[str]:
    doc = read_baseline(path)
    return {m for e in doc["instances"].values() for m in e["timings"].get(timing, {})
            .get("heuristics", {})} & set(METHODS)
