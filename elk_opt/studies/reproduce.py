"""`elk-opt reproduce`: the paper's Figures 17-18 grid, run under our cost models and timings.

A cell is (model, batch, KV length, layers, cost model, setting, method); a setting is a timing
with the NoC occupancy its instance is built with. One task builds a configuration's instance
once and runs all its missing methods on it (as a gap-study worker does), verifying every plan
and simulating it twice: with the sharing that reproduces the plan's timing exactly (the
Figure-18 breakdown and utilisations) and with full contention (for reference). "ideal" is
the Ideal roofline bound (`elk_opt.bounds.ideal_bound`), not a schedule: its cell holds the
bound and what the model's traffic and work would give at that makespan.

Finished cells are written to `DIR/cells/` at once, so an interrupted study resumes where it
stopped, and every plan beside them, gzipped (`DIR/plans/`, the cell's `plan`;
elk_opt.studies.plans), so `verify DIR` re-checks every figure; a cell whose plan file is gone
runs again. A cell whose cost model this build does not know is reported as unavailable and not
stored, so it runs once the cost model exists.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from elk_opt.errors import UsageError
from elk_opt.files import save_json
from elk_opt.io import plan_to_dict
from elk_opt.methods import METHODS, solve, solving_in, with_exec_order
from elk_opt.problem import ExecOrder, Instance, Plan, Timing
from elk_opt.progress import report_progress, say
from elk_opt.solution import SolveOptions
from elk_opt.studies import paper
from elk_opt.studies.eta import Eta, parallel
from elk_opt.studies.executors import run_all, study_lock
from elk_opt.studies.plans import Outcome, keep, packed
from elk_opt.warm import warm_options


@dataclass(frozen=True)
class Setting:
    timing: Timing
    noc_occupancy: str | None  # None: the chip's default (separate-noc never reads the port)
    label: str


SETTINGS: dict[str, Setting] = {
    "separate-noc": Setting("separate-noc", None, "separate NoC (section 5, the paper's Ideal "
                                                  "assumption)"),
    "shared-bytes": Setting("shared-noc", "bytes", "shared NoC port, bytes occupancy"),
    "shared-bsp": Setting("shared-noc", "bsp", "shared NoC port, BSP occupancy (the Elk "
                                               "artifact's reading)"),
}
COST_MODELS = ("analytic", "elk-paper")
DEFAULT_METHODS = ("basic", "static", "elk-dyn", "elk-full", "lhs", "ideal")
IDEAL = "ideal"


@dataclass(frozen=True)
class Config:
    """One instance of the study: what to build and the timing to plan it under."""

    model: str
    batch: int
    kv_len: int
    layers: int
    cost_model: str
    setting: str
    chip: str

    @property
    def key(self) -> str:
        return (f"{self.model}-b{self.batch}-kv{self.kv_len}-l{self.layers}-{self.cost_model}-"
                f"{self.setting}")

    def build(self) -> Instance:
        from elk_opt.frontend.zoo import model_instance

        return model_instance(self.model, self.chip, batch=self.batch, kv_len=self.kv_len,
                              layers=self.layers, cost_model=self.cost_model,
                              noc_occupancy=SETTINGS[self.setting].noc_occupancy)


@dataclass(frozen=True)
class Cell:
    model: str
    batch: int
    kv_len: int
    layers: int
    cost_model: str
    setting: str
    timing: str
    method: str
    family: str  # heuristic, exact or bound
    status: str  # the plan's status; "bound" for ideal; "error" or "unavailable"
    ops: int | None = None
    noc_occupancy: str | None = None  # as the instance was built
    makespan_ns: int | None = None  # claimed (and verified); None for ideal
    lower_bound_ns: int | None = None
    model_timing: str | None = None  # the timing an exact model optimized, when it says
    solve_s: float | None = None
    verified: bool = False
    sim_ns: int | None = None  # exact replay under the plan's timing (equals makespan_ns)
    overlapped_ns: int | None = None  # Figure 18's breakdown, from the exact replay
    exec_only_ns: int | None = None
    preload_only_ns: int | None = None
    stall_ns: int | None = None
    hbm_util: float | None = None
    noc_util: float | None = None
    tflops: float | None = None
    full_ns: int | None = None  # full-contention replay, for reference
    full_hbm_util: float | None = None
    full_noc_util: float | None = None
    full_tflops: float | None = None
    error: str = ""
    time_limit_s: float | None = None  # an exact method's limit
    warm_start: str | None = None  # the heuristic plan an exact method was started from
    cold: bool | None = None  # exact cells: started without a warm start (None: not exact)
    plan: str | None = None  # the plan's file, relative to the study's folder
    exec_order: str | None = None  # the order solved in (R2); None: a cell from before orders

    def reusable(self, time_limit_s: float, out: Path, cold: bool = False,
                 exec_order: ExecOrder | None = None) -> bool:
        """Whether a resume may keep this cell: its plan kept in `out` (when it has one), not
        an exact solve that ran out of time under a shorter limit than the one asked now, nor
        one started otherwise (cold or warm), nor one of another execution order (when one
        is asked)."""
        if self.family != "bound" and self.ok and not (self.plan and (out / self.plan).is_file()):
            return False
        if (exec_order is not None and self.family != "bound"
                and (self.exec_order or "instance") != exec_order):
            return False
        if self.family == "exact" and bool(self.cold) != cold:
            return False
        out_of_time = self.family == "exact" and self.status != "optimal"
        return not (out_of_time and (self.time_limit_s or 0) < time_limit_s)

    @property
    def config_key(self) -> str:
        """Its configuration's `Config.key`."""
        return Config(self.model, self.batch, self.kv_len, self.layers, self.cost_model,
                      self.setting, chip="").key

    @property
    def time_ns(self) -> int | None:
        """The figure's time: a plan's makespan, the Ideal bound for ideal."""
        return self.lower_bound_ns if self.method == IDEAL else self.makespan_ns

    @property
    def ok(self) -> bool:
        return self.status not in ("error", "unavailable") and self.time_ns is not None


def cell_from_dict(data: dict[str, Any]) -> Cell:
    known = {f.name for f in fields(Cell)}
    return Cell(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class Grid:
    """What to run: the Figure 17 grid (whole models unless `layers`) and the exact slices."""

    models: tuple[str, ...] = paper.MODELS
    batches: tuple[int, ...] = paper.BATCHES
    kv_lens: tuple[int, ...] = paper.KV_LENS
    layers: int | None = None  # None: the whole model
    cost_models: tuple[str, ...] = COST_MODELS
    settings: tuple[str, ...] = tuple(SETTINGS)
    methods: tuple[str, ...] = DEFAULT_METHODS
    exact_layers: tuple[int, ...] = (1, 2)
    exact_methods: tuple[str, ...] = ("cpsat",)
    time_limit_s: float = 30.0
    threads: int = 1
    chip: str = "ipu-pod4-hbm3e"
    cold: bool = False  # exact methods start without the best heuristic plan
    exec_order: ExecOrder | None = None  # the order every method solves in; None: its own

    def figure_configs(self) -> list[Config]:
        return [self._config(m, b, kv, self._layers(m), c, s) for c in self.cost_models
                for s in self.settings for m in self.models for b in self.batches
                for kv in self.kv_lens]

    def exact_configs(self) -> list[Config]:
        return [self._config(m, b, kv, n, c, s) for c in self.cost_models
                for s in self.settings for m in self.models for b in self.batches
                for kv in self.kv_lens for n in self.exact_layers]

    def _config(self, model: str, batch: int, kv: int, layers: int, cost: str,
                setting: str) -> Config:
        return Config(model, batch, kv, layers, cost, setting, self.chip)

    def _layers(self, model: str) -> int:
        from elk_opt.frontend.zoo import model_config

        whole = model_config(model).layers
        return whole if self.layers is None else min(self.layers, whole)

    def validate(self) -> None:
        from elk_opt.frontend.zoo import model_config

        for m in self.models:
            whole = model_config(m).layers  # raises UsageError naming the zoo
            if any(n > whole for n in self.exact_layers):
                raise UsageError(f"--exact-layers: {m} has {whole} layers, got "
                                 f"{list(self.exact_layers)}")
        for name, values, known in (("settings", self.settings, tuple(SETTINGS)),
                                    ("cost models", self.cost_models, COST_MODELS)):
            bad = [v for v in values if v not in known]
            if bad:
                raise UsageError(f"unknown {name} {', '.join(bad)}; known: {', '.join(known)}")
        for values, family in ((self.methods, "heuristic"), (self.exact_methods, "exact")):
            allowed = [m for m, info in METHODS.items() if info.family == family]
            allowed += [IDEAL] if family == "heuristic" else []
            bad = [v for v in values if v not in allowed]
            if bad:
                raise UsageError(f"not {family} methods: {', '.join(bad)}; choose from "
                                 f"{', '.join(allowed)}")
            solving_in(values, self.exec_order, named=True)
        for name, values in (("batches", self.batches), ("KV lengths", self.kv_lens),
                             ("exact layers", self.exact_layers)):
            if any(v < 1 for v in values):
                raise UsageError(f"{name} must be positive, got {list(values)}")
        if self.layers is not None and self.layers < 1:
            raise UsageError(f"--layers must be positive, got {self.layers}")
        if not (math.isfinite(self.time_limit_s) and self.time_limit_s > 0):
            raise UsageError(f"--time-limit must be a positive number, got {self.time_limit_s}")
        if self.threads < 1:
            raise UsageError(f"--threads must be positive, got {self.threads}")


QUICK = Grid(models=("llama2-13b",), batches=(32,), kv_lens=(2048,), layers=2,
             exact_layers=(1,), time_limit_s=10.0)


@dataclass(frozen=True)
class Task:
    config: Config
    methods: tuple[str, ...]  # the cells still missing, heuristics before exact methods
    time_limit_s: float
    threads: int
    cold: bool = False
    exec_order: ExecOrder | None = None


def unavailable_reason(cost_model: str, chip_name: str) -> str:
    """Why this build cannot price with `cost_model` ("" when it can)."""
    from elk_opt.frontend.chips import load_chip
    from elk_opt.frontend.cost import get_cost_model

    try:
        get_cost_model(cost_model, load_chip(chip_name))
    except UsageError as e:
        return f"cost model unavailable in this build: {e}"
    return ""


def run_task(task: Task) -> list[Outcome[Cell]]:
    """Build the configuration's instance once and run every missing method on it; each cell
    comes back with its plan packed."""
    config = task.config
    setting = SETTINGS[config.setting]
    base = dict(model=config.model, batch=config.batch, kv_len=config.kv_len,
                layers=config.layers, cost_model=config.cost_model, setting=config.setting,
                timing=setting.timing)

    def family(method: str) -> str:
        return "bound" if method == IDEAL else METHODS[method].family

    reason = unavailable_reason(config.cost_model, config.chip)
    if reason:
        return [Outcome(Cell(**base, method=m, family=family(m), status="unavailable",
                             error=reason), None) for m in task.methods]
    try:
        instance = config.build()
    except Exception as e:  # a study records a configuration that cannot be built, and goes on
        return [Outcome(Cell(**base, method=m, family=family(m), status="error",
                             error=f"building: {type(e).__name__}: {e}"), None)
                for m in task.methods]
    occupancy = instance.extra.get("cost_model", {}).get("noc_occupancy")
    base.update(ops=len(instance.ops), noc_occupancy=occupancy)
    cells: list[Outcome[Cell]] = []
    plans: dict[str, Plan] = {}
    for m in task.methods:
        if m == IDEAL:
            cells.append(Outcome(_ideal_cell(instance, Cell(**base, method=m, family="bound",
                                                            status="bound")), None))
            continue
        options = with_exec_order(m, SolveOptions(time_limit_s=task.time_limit_s,
                                                  threads=task.threads, timing=setting.timing,
                                                  exec_order=task.exec_order))
        exact = METHODS[m].family == "exact"
        blank = Cell(**base, method=m, family=family(m), status="",
                     time_limit_s=task.time_limit_s if exact else None,
                     cold=task.cold if exact else None, exec_order=options.exec_order)
        started = time.perf_counter()
        try:
            if exact:  # from the best heuristic plan (those run above are reused)
                options = warm_options(instance, m, options, cold=task.cold, plans=plans)
                blank = replace(blank, warm_start=options.warm_start)
            plan = solve(instance, m, options)
        except Exception as e:  # a study records a failing method and goes on
            cells.append(Outcome(replace(blank, status="error",
                                         solve_s=round(time.perf_counter() - started, 3),
                                         error=f"{type(e).__name__}: {e}"), None))
            continue
        plans[m] = plan
        cells.append(Outcome(_plan_cell(plan, blank), packed(plan)))
    return cells


def _plan_cell(plan: Plan, cell: Cell) -> Cell:
    """Verify and simulate a plan; the cell carries its claims and Figure-18 metrics."""
    from elk_opt.simulator import EXACT_SHARING, simulate
    from verify import check

    claims = plan.claims
    assert claims is not None
    report = check(plan_to_dict(plan))
    problems = "; ".join(f"{v.rule}: {v.message}" for v in report.violations[:3])
    exact = simulate(plan, sharing=EXACT_SHARING[plan.timing])
    full = simulate(plan, sharing="full")
    b = exact.breakdown
    return replace(cell, status=claims.status, makespan_ns=claims.makespan_ns,
                   lower_bound_ns=claims.lower_bound_ns,

                   model_timing=claims.params.get("model_timing"),
                   solve_s=round(claims.wall_s, 3), verified=report.valid,
                   sim_ns=exact.makespan_ns, overlapped_ns=round(b.overlapped_ns),
                   exec_only_ns=round(b.exec_only_ns), preload_only_ns=round(b.preload_only_ns),
                   stall_ns=round(b.stall_ns), hbm_util=exact.hbm_util,
                   noc_util=exact.noc_util, tflops=exact.tflops, full_ns=full.makespan_ns,
                   full_hbm_util=full.hbm_util, full_noc_util=full.noc_util,
                   full_tflops=full.tflops,
                   error=f"verify: {problems}" if not report.valid else "")


def _ideal_cell(instance: Instance, cell: Cell) -> Cell:
    """The Ideal roofline: the bound, and the model's HBM traffic and work over it."""
    from elk_opt.bounds.ideal import ideal_bound

    started = time.perf_counter()
    bound = ideal_bound(instance)
    seconds = bound * 1e-9
    hbm = sum(op.hbm_bytes for op in instance.ops)
    flops = sum(op.flops for op in instance.ops)
    return replace(cell, lower_bound_ns=bound, solve_s=round(time.perf_counter() - started, 3),
                   hbm_util=hbm / (seconds * instance.chip.hbm_bytes_per_s) if bound else None,
                   tflops=flops / seconds / 1e12 if bound else None)


def cell_name(config: Config, method: str) -> str:
    return f"{config.key}__{method}"


def run_reproduction(grid: Grid, out: Path, *, executor: str = "local",
                     workers: int | None = None, address: str | None = None,
                     progress: bool = False) -> tuple[list[Cell], list[Cell]]:
    """Run every missing cell; return the figure cells and the exact-slice cells, in order.
    `progress`: a line per finished cell on stderr (with a bar on a terminal)."""
    grid.validate()
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a directory")
    cells_dir = out / "cells"
    cells_dir.mkdir(parents=True, exist_ok=True)
    with study_lock(out, say):
        return _reproduce(grid, out, cells_dir, executor, workers, address, progress)


def _reproduce(grid: Grid, out: Path, cells_dir: Path, executor: str, workers: int | None,
               address: str | None, progress: bool) -> tuple[list[Cell], list[Cell]]:
    settings: dict[str, Any] = {"chip": grid.chip}
    if grid.exec_order is not None:  # absent otherwise: reproductions from before orders resume
        settings["exec_order"] = grid.exec_order
    _check_settings(out, settings)
    done = {p.stem: cell_from_dict(json.loads(p.read_text())) for p in cells_dir.glob("*.json")}
    done = {name: c for name, c in done.items()
            if c.reusable(grid.time_limit_s, out, grid.cold, grid.exec_order)}
    wanted = _wanted(grid)
    missing: dict[Config, list[str]] = {}
    for config, method in wanted:
        if cell_name(config, method) not in done:
            missing.setdefault(config, []).append(method)
    tasks = [Task(c, tuple(ms), grid.time_limit_s, grid.threads, grid.cold, grid.exec_order)
             for c, ms in missing.items()]
    total = len(wanted)
    finished = total - sum(map(len, missing.values()))
    unavailable: dict[str, Cell] = {}
    eta = Eta({cell_name(c, m): grid.time_limit_s if _is_exact(m) else None
               for c, ms in missing.items() for m in ms},
              parallel(executor, workers, len(tasks)))
    with report_progress(total, "reproduce", unit="cell", done=finished,
                         enabled=progress, eta=eta) as shown, \
            run_all(run_task, tasks, executor, workers, address) as finished_tasks:
        if done:
            shown.write(f"resuming: {finished} of {total} cells already done")
        for task, outcomes in finished_tasks:
            cells = [o.cell for o in outcomes]
            for c in cells:
                eta.done(cell_name(task.config, c.method), c.solve_s)
            if all(c.status == "unavailable" for c in cells):
                unavailable.update((cell_name(task.config, c.method), c) for c in cells)
                finished += len(cells)
                shown.advance(len(cells), note=f"[{finished}/{total}] {task.config.key}: "
                                               f"{len(cells)} cells unavailable "
                                               f"({cells[0].error})")
                continue
            for outcome in outcomes:
                cell = outcome.cell
                name = cell_name(task.config, cell.method)
                if outcome.plan is not None:  # the plan first: a cell never names a missing file
                    cell = replace(cell, plan=keep(out, name, outcome.plan))
                save_json(cells_dir / f"{name}.json", asdict(cell))
                done[name] = cell
                finished += 1
                shown.advance(note=f"[{finished}/{total}] {task.config.key} {cell.method}: "
                                   f"{_shown(cell)}")
    results = {**done, **unavailable}
    figure = [results[cell_name(c, m)] for c in grid.figure_configs() for m in grid.methods]
    exact = [results[cell_name(c, m)] for c in grid.exact_configs()
             for m in (*grid.methods, *grid.exact_methods)]
    return figure, exact


def _is_exact(method: str) -> bool:
    return method != IDEAL and METHODS[method].family == "exact"


def _wanted(grid: Grid) -> list[tuple[Config, str]]:
    """Every (configuration, method) the grid asks for, each once; heuristics run first."""
    wanted = [(c, m) for c in grid.figure_configs() for m in grid.methods]
    wanted += [(c, m) for c in grid.exact_configs()
               for m in (*grid.methods, *grid.exact_methods)]
    return list(dict.fromkeys(wanted))


def _shown(cell: Cell) -> str:
    if cell.status == "error":
        return f"error: {cell.error}"
    text = f"{cell.time_ns:,} ns {cell.status}"
    if cell.method != IDEAL and not cell.verified:
        text += " VERIFY FAILED"
    return text


def _check_settings(out: Path, settings: dict[str, Any]) -> None:
    path = out / "study.json"
    if path.exists():
        before = json.loads(path.read_text())
        if before != settings:
            raise UsageError(f"{out} holds a reproduction with other settings ({before}); "
                             "resume with the same --chip and --exec-order or choose another "
                             "-o")
    else:
        save_json(path, settings)
