"""The optimality-gap study: every method on every instance of a suite, against the truth.

A cell is one (instance, method) under one timing (docs/spec.md 5 or 5b). Each finished cell is
written at once to `DIR/cells/`, with the timing and time limit it ran under, so an interrupted
study resumes where it stopped and a finished one re-runs without doing anything. Each plan is
kept beside its cell, gzipped (`DIR/plans/`, the cell's `plan`; elk_opt.studies.plans), so
`verify DIR` re-checks every figure; a cell whose plan file is gone runs again. A cell that
ran out of time (an exact method without a proven optimum, or with no plan at all) is run again
when the study resumes with a longer limit; a cell of another timing is never reused.
Exact methods start from the best heuristic plan of their instance (`elk_opt.warm`) unless the
study is cold; a cell names the start it used. The reference of an instance is its proven
optimum when an exact method proved one, otherwise the best lower bound any method reported;
gaps are makespan / reference - 1. With an execution order asked (`exec_order`, R2), every
method solves in it and each cell records the order it solved in; cells of another order are
never reused.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from elk_opt.errors import InputError, UsageError
from elk_opt.files import ensure_dir, save_json
from elk_opt.interrupts import Terminated
from elk_opt.io import plan_to_dict
from elk_opt.json_input import read_json
from elk_opt.methods import METHODS, solve, solving_in, with_exec_order
from elk_opt.problem import ExecOrder, Instance, Plan, Timing
from elk_opt.progress import report_progress, say
from elk_opt.solution import SolveOptions
from elk_opt.studies.eta import Eta, parallel
from elk_opt.studies.executors import run_all, study_lock
from elk_opt.studies.plans import Outcome, keep, packed
from elk_opt.studies.suites import InstanceSpec
from elk_opt.warm import best_heuristic


@dataclass(frozen=True)
class Cell:
    instance: str
    ops: int
    method: str
    family: str
    status: str  # the plan's status, or "error"
    makespan_ns: int | None  # under `timing`
    lower_bound_ns: int | None
    solve_s: float
    verified: bool
    sim_ns: int | None  # simulated under the plan's timing, exactly (equals makespan_ns)
    sim_contention_ns: int | None
    error: str = ""
    timing: str | None = None  # None: a cell written before studies recorded their timing
    time_limit_s: float | None = None
    warm_start: str | None = None  # the heuristic plan an exact method was started from
    plan: str | None = None  # the plan's file, relative to the study's folder
    exec_order: str | None = None  # the order solved in (R2); None: a cell from before orders

    def reusable(self, timing: Timing, time_limit_s: float, out: Path,
                 exec_order: ExecOrder | None = None) -> bool:
        """Whether a resume under `timing` and `time_limit_s` may keep this cell: same timing,
        same execution order (when one is asked), its plan kept in `out` (when it has one),
        and not a cell that ran out of time under a shorter limit than the one asked now."""
        if self.timing != timing:
            return False
        if exec_order is not None and (self.exec_order or "instance") != exec_order:
            return False
        if self.status != "error" and not (self.plan and (out / self.plan).is_file()):
            return False
        out_of_time = self.family == "exact" and self.status != "optimal"
        return not (out_of_time and (self.time_limit_s or 0) < time_limit_s)


@dataclass(frozen=True)
class CellTask:
    spec: InstanceSpec
    method: str
    time_limit_s: float
    threads: int
    timing: Timing
    cold: bool = False  # exact methods without a warm start
    exec_order: ExecOrder | None = None  # None: each method's own default


def run_cell(task: CellTask) -> Outcome[Cell]:
    """Solve, verify and simulate one cell; failures become a cell with status "error"."""
    from verify import check

    family = METHODS[task.method].family
    started = time.perf_counter()
    ops = 0
    try:
        instance = _build(task.spec)
        ops = len(instance.ops)
        options = with_exec_order(task.method, SolveOptions(
            time_limit_s=task.time_limit_s, threads=task.threads, timing=task.timing,
            exec_order=task.exec_order))
        if family == "exact" and not task.cold:
            options = _warm(task.spec, task.timing, task.method, options)
        plan = solve(instance, task.method, options)
    except Exception as e:  # a study records a failing method and goes on
        return Outcome(Cell(task.spec.key, ops, task.method, family, "error", None, None,
                            round(time.perf_counter() - started, 3), False, None, None,
                            f"{type(e).__name__}: {e}", task.timing, task.time_limit_s,
                            exec_order=task.exec_order), None)
    claims = plan.claims
    assert claims is not None
    verified = check(plan_to_dict(plan)).valid
    sim, sim_contention = _simulate(plan)
    return Outcome(Cell(task.spec.key, ops, task.method, family, claims.status,
                        claims.makespan_ns, claims.lower_bound_ns, round(claims.wall_s, 3),
                        verified, sim, sim_contention, "", task.timing, task.time_limit_s,
                        options.warm_start if family == "exact" else None,
                        exec_order=options.exec_order),
                   packed(plan))


@functools.lru_cache(maxsize=4)
def _build(spec: InstanceSpec) -> Instance:
    """A worker runs an instance's methods one after another: build it once for them."""
    return spec.build()


@functools.lru_cache(maxsize=4)
def _best_heuristic(spec: InstanceSpec, timing: Timing) -> tuple[str, Plan] | None:
    """The instance's best heuristic plan, found once per worker for all its exact cells."""
    return best_heuristic(_build(spec), timing)


def _warm(spec: InstanceSpec, timing: Timing, method: str, options: SolveOptions
          ) -> SolveOptions:
    """The exact cell's options, started from the instance's best heuristic plan."""
    found = _best_heuristic(spec, timing)
    if found is None or METHODS[method].family != "exact":
        return options
    return replace(options, warm_start=found[0], warm_plan=found[1])


def _simulate(plan: Any) -> tuple[int | None, int | None]:
    try:
        from elk_opt.simulator import EXACT_SHARING, simulate
    except ImportError:  # the simulator is optional for a study
        return None, None
    return (simulate(plan, sharing=EXACT_SHARING[plan.timing]).makespan_ns,
            simulate(plan, sharing="full").makespan_ns)


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
              time_limit_s: float, timing: Timing, threads: int = 1, executor: str = "local",
              workers: int | None = None, address: str | None = None,
              progress: bool = False, cold: bool = False,
              exec_order: ExecOrder | None = None) -> list[Cell]:
    """Run every missing cell, then return all cells in suite and method order.
    `progress`: a line per finished cell on stderr (with a bar on a terminal); `cold`: exact
    methods start without the best heuristic plan; `exec_order`: the order every method
    solves in (each must list it; None: each its own default)."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise UsageError(f"unknown methods {', '.join(unknown)}; known: {', '.join(METHODS)}")
    solving_in(methods, exec_order, named=True)
    cells_dir = ensure_dir(out / "cells")
    with study_lock(out, say):
        return _run_study(specs, methods, out, cells_dir, time_limit_s=time_limit_s,
                          timing=timing, threads=threads, executor=executor, workers=workers,
                          address=address, progress=progress, cold=cold,
                          exec_order=exec_order)


def _run_study(specs: Sequence[InstanceSpec], methods: Sequence[str], out: Path,
               cells_dir: Path, *, time_limit_s: float, timing: Timing, threads: int,
               executor: str, workers: int | None, address: str | None,
               progress: bool, cold: bool, exec_order: ExecOrder | None) -> list[Cell]:
    settings = {"instances": [s.key for s in specs], "methods": list(methods),
                "timing": timing, "exact_start": "cold" if cold else "best heuristic"}
    if exec_order is not None:  # absent otherwise: studies from before orders resume
        settings["exec_order"] = exec_order
    _check_settings(out, settings)
    done = {name: cell for name, cell in _read_cells(cells_dir).items()
            if cell.reusable(timing, time_limit_s, out, exec_order)}
    tasks = [CellTask(s, m, time_limit_s, threads, timing, cold, exec_order)
             for s in specs for m in methods if _cell_name(s.key, m) not in done]
    total = len(specs) * len(methods)
    eta = Eta({_cell_name(t.spec.key, t.method): time_limit_s
               if METHODS[t.method].family == "exact" else None for t in tasks},
              parallel(executor, workers, len(tasks)))
    try:
        with report_progress(total, "gap", unit="cell", done=len(done),
                             enabled=progress, eta=eta) as shown, \
                run_all(run_cell, tasks, executor, workers, address) as results:
            if done:
                shown.write(f"resuming: {len(done)} of {total} cells already done")
            for task, outcome in results:
                name = _cell_name(task.spec.key, task.method)
                cell = outcome.cell
                if outcome.plan is not None:  # the plan first: a cell never names a missing file
                    cell = replace(cell, plan=keep(out, name, outcome.plan))
                save_json(cells_dir / f"{name}.json", asdict(cell))
                done[name] = cell
                eta.done(name, cell.solve_s)
                shown.advance(note=f"[{len(done)}/{total}] {cell.instance} {cell.method}: "
                                   f"{_shown(cell)} ({cell.solve_s:.1f} s)"
                                   f"{'' if cell.verified or cell.error else ' VERIFY FAILED'}")
    except (KeyboardInterrupt, Terminated) as e:
        e.add_note(f"{len(done)} of {total} cells done and kept in {cells_dir}; run the same "
                   "command again to resume")
        raise
    return [done[_cell_name(s.key, m)] for s in specs for m in methods]


def _shown(cell: Cell) -> str:
    return f"{cell.makespan_ns:,} ns {cell.status}" if cell.makespan_ns else cell.error


def _read_cells(cells_dir: Path) -> dict[str, Cell]:
    cells = {}
    for path in sorted(cells_dir.glob("*.json")):
        try:
            cells[path.stem] = Cell(**read_json(path))
        except InputError as e:
            raise InputError(f"{e}: not a study cell; delete it to run that cell again") from None
        except TypeError as e:
            raise InputError(f"{path}: not a study cell ({e}); delete it to run that cell "
                             "again") from None
    return cells


def _cell_name(instance: str, method: str) -> str:
    return f"{instance}__{method}"


def _check_settings(out: Path, settings: dict[str, Any]) -> None:
    path = out / "study.json"
    if path.exists():
        before = read_json(path)
        if before != settings:
            changed = [k for k in settings if before.get(k) != settings[k]] or ["format"]
            raise UsageError(f"{out} holds a study with other settings (other "
                             f"{', '.join(changed)}); resume with the same suite, methods, "
                             "timing, start (--cold or not) and --exec-order, or choose "
                             "another -o")
    else:
        save_json(path, settings)
