"""The optimality-gap study: every method on every instance of a suite, against the truth.

A cell is one (instance, method). Each finished cell is written at once to `DIR/cells/`, so an
interrupted study resumes where it stopped and a finished one re-runs without doing anything.
The reference of an instance is its proven optimum when an exact method proved one, otherwise
the best lower bound any method reported; gaps are makespan / reference - 1.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from elk_opt.errors import UsageError
from elk_opt.io import plan_to_dict, read_json, save_json
from elk_opt.methods import METHODS, solve
from elk_opt.problem import Instance
from elk_opt.solution import SolveOptions
from elk_opt.studies.executors import run_all
from elk_opt.studies.suites import InstanceSpec


@dataclass(frozen=True)
class Cell:
    instance: str
    ops: int
    method: str
    family: str
    status: str  # the plan's status, or "error"
    makespan_ns: int | None
    lower_bound_ns: int | None
    solve_s: float
    verified: bool
    sim_ns: int | None  # simulated without contention (equals makespan_ns)
    sim_contention_ns: int | None
    error: str = ""


@dataclass(frozen=True)
class CellTask:
    spec: InstanceSpec
    method: str
    time_limit_s: float
    threads: int


def run_cell(task: CellTask) -> Cell:
    """Solve, verify and simulate one cell; failures become a cell with status "error"."""
    from verify import check

    instance = _build(task.spec)
    family = METHODS[task.method].family
    started = time.perf_counter()
    try:
        plan = solve(instance, task.method,
                     SolveOptions(time_limit_s=task.time_limit_s, threads=task.threads))
    except Exception as e:  # a study records a failing method and goes on
        return Cell(task.spec.key, len(instance.ops), task.method, family, "error", None, None,
                    time.perf_counter() - started, False, None, None, f"{type(e).__name__}: {e}")
    claims = plan.claims
    assert claims is not None
    verified = check(plan_to_dict(plan)).valid
    sim, sim_contention = _simulate(plan)
    return Cell(task.spec.key, len(instance.ops), task.method, family, claims.status,
                claims.makespan_ns, claims.lower_bound_ns, round(claims.wall_s, 3), verified,
                sim, sim_contention)


@functools.lru_cache(maxsize=4)
def _build(spec: InstanceSpec) -> Instance:
    """A worker runs an instance's methods one after another: build it once for them."""
    return spec.build()


def _simulate(plan: Any) -> tuple[int | None, int | None]:
    try:
        from elk_opt.simulator import simulate
    except ImportError:  # the simulator is optional for a study
        return None, None
    return (simulate(plan, contention=False).makespan_ns,
            simulate(plan, contention=True).makespan_ns)


@dataclass(frozen=True)
class Row:
    cell: Cell
    reference_ns: int | None
    reference_kind: str  # "optimum", "bound" or "none"
    gap: float | None


def with_gaps(cells: Sequence[Cell]) -> list[Row]:
    """Attach each cell's gap to its instance's reference (proven optimum, else best bound)."""
    by_instance: dict[str, list[Cell]] = {}
    for c in cells:
        by_instance.setdefault(c.instance, []).append(c)
    rows = []
    for group in by_instance.values():
        optima = {c.makespan_ns for c in group if c.status == "optimal"}
        bounds = [c.lower_bound_ns for c in group if c.lower_bound_ns is not None]
        if optima:
            ref, kind = min(optima), "optimum"  # several distinct optima would be a bug: flagged
        elif bounds:
            ref, kind = max(bounds), "bound"
        else:
            ref, kind = None, "none"
        for c in group:
            gap = (c.makespan_ns / ref - 1.0 if ref and c.makespan_ns is not None else None)
            rows.append(Row(c, ref, kind, gap))
    return rows


def conflicts(rows: Sequence[Row]) -> list[str]:
    """Facts that can only be bugs: methods disagreeing on a proven optimum, plans beating it,
    bounds above a plan, plans that fail verification."""
    found = []
    cells = [row.cell for row in rows]
    for row in rows:
        c = row.cell
        if c.status != "error" and not c.verified:
            found.append(f"{c.instance} {c.method}: plan fails verify")
        if row.reference_kind == "optimum" and c.makespan_ns is not None and row.gap < 0:
            found.append(f"{c.instance} {c.method}: {c.makespan_ns} beats the proven optimum "
                         f"{row.reference_ns}")
    optima: dict[str, set[int]] = {}
    best: dict[str, int] = {}
    for c in cells:
        if c.status == "optimal":
            optima.setdefault(c.instance, set()).add(c.makespan_ns)  # type: ignore[arg-type]
        if c.makespan_ns is not None:
            best[c.instance] = min(best.get(c.instance, c.makespan_ns), c.makespan_ns)
    for key, values in optima.items():
        if len(values) > 1:
            found.append(f"{key}: exact methods prove different optima {sorted(values)}")
    for c in cells:
        if c.lower_bound_ns is not None and c.instance in best and \
                c.lower_bound_ns > best[c.instance]:
            found.append(f"{c.instance} {c.method}: bound {c.lower_bound_ns} above the best "
                         f"plan {best[c.instance]}")
    return found


def run_study(specs: Sequence[InstanceSpec], methods: Sequence[str], out: Path, *,
              time_limit_s: float, threads: int = 1, executor: str = "local",
              workers: int | None = None, address: str | None = None) -> list[Cell]:
    """Run every missing cell, then return all cells in suite and method order."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise UsageError(f"unknown methods {', '.join(unknown)}; known: {', '.join(METHODS)}")
    cells_dir = out / "cells"
    cells_dir.mkdir(parents=True, exist_ok=True)
    _check_settings(out, {"instances": [s.key for s in specs], "methods": list(methods),
                          "time_limit_s": time_limit_s})
    done = {p.stem: Cell(**read_json(p)) for p in cells_dir.glob("*.json")}
    tasks = [CellTask(s, m, time_limit_s, threads) for s in specs for m in methods
             if _cell_name(s.key, m) not in done]
    total = len(specs) * len(methods)
    if len(done):
        print(f"resuming: {len(done)} of {total} cells already done", file=sys.stderr)
    for task, cell in run_all(run_cell, tasks, executor, workers, address):
        save_json(cells_dir / f"{_cell_name(task.spec.key, task.method)}.json", asdict(cell))
        done[_cell_name(task.spec.key, task.method)] = cell
        shown = f"{cell.makespan_ns:,} ns {cell.status}" if cell.makespan_ns else cell.error
        print(f"[{len(done)}/{total}] {cell.instance} {cell.method}: {shown} "
              f"({cell.solve_s:.1f} s){'' if cell.verified or cell.error else ' VERIFY FAILED'}",
              file=sys.stderr)
    return [done[_cell_name(s.key, m)] for s in specs for m in methods]


def _cell_name(instance: str, method: str) -> str:
    return f"{instance}__{method}"


def _check_settings(out: Path, settings: dict[str, Any]) -> None:
    path = out / "study.json"
    if path.exists():
        before = read_json(path)
        if before != settings:
            raise UsageError(f"{out} holds a study with other settings (suite, methods or time "
                             "limit); resume with the same ones or choose another -o")
    else:
        save_json(path, settings)
