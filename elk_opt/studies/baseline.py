"""Heuristic regression baselines: recorded makespans on a fixed suite, and the check.

The baseline keeps its instances as files beside it, so a change to the front end or the
synthetic generator cannot move the goalposts: only a change to a heuristic can change what
it scores. A heuristic regresses when it gets worse than its record by more than TOLERANCE;
anything beating a recorded proven optimum is a bug, whatever the tolerance.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from elk_opt.io import load_instance, save_instance, save_json
from elk_opt.methods import METHODS, heuristics, solve
from elk_opt.studies.gap import Cell
from elk_opt.studies.suites import InstanceSpec

DEFAULT_PATH = Path("tests/baselines/heuristics.json")
TOLERANCE = 0.001  # relative; heuristics are deterministic, this only absorbs tie-breaking


def write_baseline(specs: Sequence[InstanceSpec], cells: Sequence[Cell], path: Path) -> None:
    """Record every heuristic's makespan and the proven optimum from a finished study."""
    folder = path.parent / "instances"
    folder.mkdir(parents=True, exist_ok=True)
    entries = {}
    for spec in specs:
        save_instance(folder / f"{spec.key}.json", spec.build())
        mine = [c for c in cells if c.instance == spec.key and c.makespan_ns is not None]
        optima = sorted({c.makespan_ns for c in mine if c.status == "optimal"})
        entries[spec.key] = {
            "file": f"instances/{spec.key}.json",
            "optimum_ns": optima[0] if optima else None,
            "heuristics": {c.method: c.makespan_ns for c in mine if c.family == "heuristic"},
        }
    save_json(path, {"tolerance": TOLERANCE, "instances": entries})


@dataclass(frozen=True)
class Regression:
    instance: str
    method: str
    makespan_ns: int
    message: str


def check_baseline(path: Path) -> tuple[int, list[Regression]]:
    """(cells checked, problems) for every heuristic now registered on every recorded instance."""
    doc = json.loads(path.read_text())
    tolerance = doc["tolerance"]
    problems: list[Regression] = []
    checked = 0
    for key, entry in doc["instances"].items():
        instance = load_instance(path.parent / entry["file"])
        for method in heuristics():
            makespan = solve(instance, method).claims.makespan_ns  # type: ignore[union-attr]
            checked += 1
            record = entry["heuristics"].get(method)
            optimum = entry["optimum_ns"]
            if optimum is not None and makespan < optimum:
                problems.append(Regression(key, method, makespan, f"{makespan:,} ns beats the "
                                           f"proven optimum {optimum:,} ns: a bug"))
            if record is not None and makespan > record * (1 + tolerance):
                problems.append(Regression(key, method, makespan, f"{makespan:,} ns is worse "
                                           f"than the recorded {record:,} ns"))
    return checked, problems


def recorded_methods(path: Path) -> set[str]:
    doc = json.loads(path.read_text())
    return {m for e in doc["instances"].values() for m in e["heuristics"]} & set(METHODS)
