"""The Python API of elk-opt: what `import elk_opt` offers (docs/api.md).

Each function is a thin pass-through to the library module that does the work, the same code
the command line runs; the analyses return the JSON document their command prints or writes.
Solvers, ONNX, the simulator and numpy load inside the functions that need them, so importing
this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from elk_opt.bounds import limits
from elk_opt.errors import UsageError
from elk_opt.frontend.chips import DEFAULT_CHIP
from elk_opt.problem import DEFAULT_TIMING, TIMINGS, Chip, ExecOrder, Instance, Plan, Timing
from elk_opt.solution import SolveOptions, warm_start_from

if TYPE_CHECKING:
    from elk_opt.attribution import Attribution
    from elk_opt.evaluate import Schedule
    from elk_opt.simulator import SimResult

DEFAULT_METHOD = "elk-full"


# ---------------------------------------------------------------------------- catalogues

def model_names() -> list[str]:
    """The model zoo (`elk-opt models`)."""
    from elk_opt.frontend.zoo import model_names as names

    return names()


def chip_names() -> list[str]:
    """The chip presets (`elk-opt chips`)."""
    from elk_opt.frontend.chips import chip_names as names

    return names()


def method_names() -> list[str]:
    """Every method `solve` accepts (heuristics, exact models, `ideal`)."""
    from elk_opt.methods import METHODS

    return list(METHODS)


# ---------------------------------------------------------------------------- files

def load_instance(path: str | Path) -> Instance:
    """Read an `elk-instance/1` file; an unusable one raises InputError naming the field."""
    from elk_opt.io import load_instance as load

    return load(path)


def save_instance(path: str | Path, instance: Instance) -> None:
    """Write an `elk-instance/1` file atomically (a half-written file never appears)."""
    from elk_opt.io import save_instance as save

    save(path, instance)


def load_plan(path: str | Path) -> Plan:
    """Read an `elk-plan/1` file (its instance embedded); checking its rules is `verify`'s job.

    A plan without `timing` is separate-noc; an unusable file raises InputError."""
    from elk_opt.io import load_plan as load

    return load(path)


def save_plan(path: str | Path, plan: Plan) -> None:
    """Write an `elk-plan/1` file atomically, with its timing and claims."""
    from elk_opt.io import save_plan as save

    save(path, plan)


# ---------------------------------------------------------------------------- instances

def load_chip(name_or_path: str | Path) -> Chip:
    """A chip preset by name, or a chip TOML file by path."""
    from elk_opt.frontend.chips import load_chip as load

    return load(str(name_or_path))


def build_instance(model_or_path: str | Path, chip: Chip | str = DEFAULT_CHIP, *,
                   batch: int = 32, kv_len: int = 2048, layers: int | None = None,
                   mode: str = "decode", dtype: str = "bf16", cost_model: str = "analytic",
                   noc_occupancy: str | None = None, max_plans: int = 8,
                   max_preloads: int = 4, progress: bool = False) -> Instance:
    """An instance from a zoo model name or an ONNX file (`elk-opt instance`).

    `chip`: a preset name, a chip TOML path or a `Chip`. `kv_len`: KV-cache tokens in decode,
    prompt tokens otherwise. `layers`: keep the first N layers (zoo models). `mode`: decode,
    prefill or forward. `dtype`: bf16, fp16, fp32 or fp8 (zoo models). `cost_model`: analytic
    or `table:PATH`. `noc_occupancy`: "bytes" or "bsp", how plans hold the NoC port under
    the shared-noc timing (None: the chip's default). `max_plans`, `max_preloads`: execute and
    preload plans kept per op. `progress`: show the partition search's progress on stderr.
    """
    from elk_opt.frontend import artifact
    from elk_opt.frontend.partition import SearchOptions
    from elk_opt.frontend.sources import instance_from_source

    elsewhere = {"synthetic": "synthetic_instance", artifact.NAME: "artifact_instance"}
    if str(model_or_path) in elsewhere:  # the CLI's sources with parameters of their own
        raise UsageError(f"build_instance builds zoo models and ONNX files; for "
                         f"{str(model_or_path)!r} call elk_opt.{elsewhere[str(model_or_path)]}()")
    if max_plans < 1 or max_preloads < 1:
        raise UsageError(f"max_plans and max_preloads must be at least 1, got {max_plans} "
                         f"and {max_preloads}")
    return instance_from_source(
        model_or_path, chip if isinstance(chip, Chip) else load_chip(chip), batch=batch,
        kv_len=kv_len, layers=layers, mode=mode, dtype=dtype, cost_model=cost_model,
        options=SearchOptions(max_exec=max_plans, max_preload=max_preloads),
        noc_occupancy=noc_occupancy, progress=progress)


def synthetic_instance(ops: int = 48, plans: int = 4, seed: int = 0,
                       tightness: float = 0.5) -> Instance:
    """A seeded synthetic decoder-like instance; `tightness` 0 roomy .. 1 tightest SRAM."""
    from elk_opt.frontend.synthetic import synthetic_instance as synthetic

    try:
        return synthetic(ops, plans, seed, tightness)
    except ValueError as e:
        raise UsageError(str(e)) from None


def artifact_instance(layers: int = 40) -> Instance:
    """The Elk implementation's own plans of its Llama2-13B decode layer (batch 32, KV 2048,
    its chip), repeated `layers` times (1-40; docs/calibration.md)."""
    from elk_opt.frontend.artifact import artifact_instance as artifact

    return artifact(layers)


# ---------------------------------------------------------------------------- solving

def solve(instance: Instance, method: str = DEFAULT_METHOD, options: SolveOptions | None = None,
          *, timing: Timing | None = None, time_limit_s: float | None = None,
          gap: float | None = None, threads: int | None = None, seed: int | None = None,
          warm_start: str | Plan | None = None, params: dict[str, Any] | None = None,
          verbose: bool | None = None) -> Plan:
    """Schedule `instance` with `method` (`method_names()`); the plan's claims hold.

    Keywords given (not None) replace the fields of `options` (default `SolveOptions()`):
    `timing` the plan is optimized and claimed under (default shared-noc), the exact solvers'
    `time_limit_s`, relative `gap` and `threads` (2 when None), `warm_start` (a method name or
    a plan to hint an exact solver with), method-specific `params`.
    """
    from elk_opt.methods import solve as run

    return run(instance, method, _options(options, timing=timing, time_limit_s=time_limit_s,
                                          gap=gap, threads=threads, seed=seed,
                                          warm_start=warm_start, params=params,
                                          verbose=verbose))


def export_model(instance: Instance, path: str | Path, method: str = "ilp",
                 options: SolveOptions | None = None, *, timing: Timing | None = None,
                 warm_start: str | Plan | None = None,
                 params: dict[str, Any] | None = None) -> dict[str, str | None]:
    """Write the exact model `method` ("ilp": .mps or .lp; "cpsat": .pb.txt or binary) would
    solve for `instance`, and its sidecar for `import_solution`; nothing is solved.

    Returns the paths written: `model`, `sidecar`, `start` (the ILP's warm start, or None).
    """
    from elk_opt.methods import with_warm_plan
    from formulations.export import export_model as export

    chosen = with_warm_plan(instance, method, _options(options, timing=timing,
                                                       warm_start=warm_start, params=params))
    done = export(instance, method, chosen, path)
    return {"model": str(done.model), "sidecar": str(done.sidecar),
            "start": None if done.start is None else str(done.start)}


def import_solution(sidecar: str | Path, solution: str | Path) -> Plan:
    """The plan of a solver's solution file of a model `export_model` wrote, claimed honestly.

    Raises `InputError` when the files do not fit each other, `UsageError` when the solution
    is not a feasible solution of the model (the command exits 1 then).
    """
    from formulations.import_solution import RejectedSolution
    from formulations.import_solution import import_solution as read

    try:
        return read(sidecar, solution)
    except RejectedSolution as e:
        raise UsageError(str(e)) from None


def _options(options: SolveOptions | None, *, warm_start: str | Plan | None,
             **fields: Any) -> SolveOptions:
    given = {k: v for k, v in fields.items() if v is not None}
    _check_timing(given.get("timing"))
    if isinstance(warm_start, Plan):
        given.update(warm_start_from(warm_start))
    elif warm_start is not None:
        given.update(warm_start=warm_start, warm_plan=None)
    return replace(options or SolveOptions(), **given)


def tile(instance: Instance, slice_plan: Plan) -> Plan:
    """A plan of `instance` from `slice_plan`, a plan of its first K layers and its tail (the
    instance `build_instance(..., layers=K)` builds): one middle period of the slice repeated
    over the model, the fastest such tiling obeying R5 (claims method `tiled`). A plan of
    anything else is a `UsageError` saying why."""
    from formulations.lns_tiling import NotASlice, tile_onto

    try:
        return tile_onto(instance, slice_plan)
    except NotASlice as e:
        raise UsageError(f"not a slice plan of {instance.name!r}: {e}") from None


def evaluate_plan(plan: Plan, timing: Timing | None = None) -> Schedule:
    """The analytic schedule of `plan` under `timing` (default: the plan's own timing):
    makespan, per-op load and execute times, preload counts and the R5 SRAM figures.

    Raises `ProgramError` (a ValueError) when the program cannot be timed.
    """
    from elk_opt.evaluate import evaluate

    _check_timing(timing)
    return evaluate(plan.instance, plan.choice, plan.program, plan.release_ns,
                    timing=plan.timing if timing is None else timing)


def _check_timing(timing: str | None) -> None:
    if timing is not None and timing not in TIMINGS:
        raise UsageError(f"unknown timing {timing!r}; choose one of {', '.join(TIMINGS)}")


# ---------------------------------------------------------------------------- checking

def verify(plan: Plan | dict[str, Any] | str | Path) -> dict[str, Any]:
    """The independent checker's report, exactly as `verify --json` prints it.

    `plan`: a plan file's path, a parsed `elk-plan/1` document, or a `Plan` (then `file` is
    null). Keys: file, valid, ops, makespan_ns, peak_sram_bytes, peak_at, sram_bytes,
    unchecked, violations (rule, message, op, instruction, numbers); an unreadable plan gives
    file, valid (false) and malformed.
    """
    from verify import json_report

    if isinstance(plan, Plan):
        from elk_opt.io import plan_to_dict

        return json_report(plan_to_dict(plan))
    return json_report(plan)


def simulate(plan: Plan, *, sharing: str = "full", chip: Chip | str | None = None
             ) -> SimResult:
    """Replay `plan` in the event simulator (`elk-opt simulate`). `sharing`: "full" (shared
    HBM, NoC and SRAM ports), "port" (only the NoC port: section 5b exactly) or "none"
    (section 5 exactly). `chip`: replay on another network with the same cores and SRAM.
    `result.summary()` is what `simulate --json` prints."""
    from elk_opt.simulator import simulate as run

    return run(plan, sharing=sharing, chip=load_chip(chip) if isinstance(chip, str) else chip)


def profile(plan: Plan, *, timing: Timing | None = None, by: str = "layer") -> Attribution:
    """Where the plan's makespan goes under `timing` (default the plan's own), per run of a
    layer's executes (`by="layer"`) or per op (`by="op"`), as `elk-opt profile` prints it:
    the executes at their fastest pairs, what the chosen pairs add, the port's stretch, the
    waits for loads and releases, and the HBM's busy time; `result.summary()` is what
    `profile --json` prints."""
    from elk_opt.attribution import attribute

    _check_timing(timing)
    if by not in ("layer", "op"):
        raise UsageError(f"unknown grouping {by!r}; choose layer or op")
    return attribute(plan, timing, by)


def bound(instance: Instance, *, timing: Timing = DEFAULT_TIMING,
          fluid_max_ops: int = limits.FLUID_MAX_OPS, fluid_time_s: float = limits.FLUID_TIME_S,
          fluid_sram_max_ops: int = limits.FLUID_SRAM_MAX_OPS,
          fluid_milp_max_ops: int = limits.FLUID_MILP_MAX_OPS,
          fluid_contiguous_max_ops: int = limits.FLUID_CONTIGUOUS_MAX_OPS,
          fluid_split_max_ops: int = limits.FLUID_SPLIT_MAX_OPS,
          window: int = limits.WINDOW_OPS, window_time_s: float = limits.WINDOW_TIME_S,
          layers: int = limits.LAYERS, layers_time_s: float = limits.LAYERS_TIME_S,
          layers_mip_time_s: float = limits.LAYERS_MIP_TIME_S,
          lp_max_ops: int = limits.LP_MAX_OPS, lp_time_s: float = limits.LP_TIME_S,
          threads: int = 2, progress: bool = False,
          exec_order: ExecOrder = "instance", whole_ns: bool = False,
          plan_ns: int | None = None) -> dict[str, Any]:
    """Lower bounds on every plan's makespan under `timing`, as `elk-opt bound -o` writes them:
    `{"instance", "ops", "timing", "bounds": [{"bound", "ns", "wall_s", "timings", "order",
    "note"}], "best"}`.

    Ideal (any execution order), the HBM and port cuts (linear), the fluid LP (up to
    `fluid_max_ops` ops, `fluid_time_s`), the fluid LP with SRAM (up to `fluid_sram_max_ops`
    ops, the same time) and its MIP, pairs and pending loads whole (up to
    `fluid_milp_max_ops` ops, the same time) and that MIP with one load running at each
    execute start (up to `fluid_contiguous_max_ops` ops, the same time), that MIP split over
    repeated layers at the LP's duals (up to `fluid_split_max_ops` ops counted as for the LP
    with SRAM, the same time per block), the LP relaxation
    (up to `lp_max_ops` ops, `lp_time_s`), the window bound (`window` ops per window, 0 to
    skip; `window_time_s` of CP-SAT each) and the layer windows under `timing` (`layers`
    decoder layers each, 0 to skip; `layers_time_s` of CP-SAT per distinct window, then
    `layers_mip_time_s` of the fluid MIP with loads run whole on each CP-SAT did not prove);
    each row says for which timings and execution orders it holds. `progress`: say on stderr
    which bound runs, and each window's.
    `exec_order="free"`: only the bounds that hold for every execution order (R2).
    `whole_ns`: also that MIP with every interval a whole number of ns, after it finished, in
    at most four times its time (`fluid-whole-ns`, the last ns); given `plan_ns` (a plan's
    makespan), only where that lies within a ns per interval above it, all it can add.
    """
    from elk_opt.bounds.run_all import lower_bounds

    return lower_bounds(instance, timing=timing, fluid_max_ops=fluid_max_ops,
                        fluid_time_s=fluid_time_s, fluid_sram_max_ops=fluid_sram_max_ops,
                        fluid_milp_max_ops=fluid_milp_max_ops,
                        fluid_contiguous_max_ops=fluid_contiguous_max_ops,
                        fluid_split_max_ops=fluid_split_max_ops, window=window,
                        window_time_s=window_time_s, layers=layers, layers_time_s=layers_time_s,
                        layers_mip_time_s=layers_mip_time_s,
                        lp_max_ops=lp_max_ops, lp_time_s=lp_time_s, threads=threads,
                        progress=progress, exec_order=exec_order, whole_ns=whole_ns,
                        plan_ns=plan_ns)


def certify(instance_or_plan: Instance | Plan | dict[str, Any], *, timing: Timing | None = None,
            time_limit_s: float = 600.0, threads: int = 2, progress: bool = False,
            starts: Sequence[Plan] = ()) -> dict[str, Any]:
    """An `elk-certificate/1` document, as `elk-opt certify -o` writes it: the best plan and
    lower bound found within `time_limit_s` seconds of wall clock (or the given plan, kept,
    with a faster one found on the way under `better_plan`). Given a certificate (a parsed
    document), its search goes on from its plan and bounds, and the result is never worse.

    `timing`: default a plan's own, else shared-noc; a plan or certificate with another
    timing is a UsageError, and so is a plan that fails `verify` or a certificate that does
    not hold. `progress`: the running best plan, bound and gap on stderr. `starts`: plans of
    the same instance from other tools, searched from as well and certified if the fastest
    (`elk-opt certify --start`; each must pass `verify`). The search stops early when a
    bound meets the best plan.
    """
    from elk_opt.certification.run import certify as run

    named = [(f"start {i + 1}", plan) for i, plan in enumerate(starts)]
    return run(instance_or_plan, timing=timing, time_limit_s=time_limit_s, threads=threads,
               progress=progress, starts=named)


def check_certificate(certificate: dict[str, Any] | str | Path, *,
                      max_recompute_s: float = 30.0) -> list[str]:
    """What is wrong with a certificate (a parsed document or a path), one line each; empty
    when it holds: its plan passes `verify`, makespan, bound and gap agree with the plan and
    the bounds, every bound holds for its timing and the plan's execution order, and each bound
    found within `max_recompute_s` seconds comes out no lower when computed again. A document
    that is not a readable certificate raises InputError."""
    from elk_opt.certification.check import check
    from elk_opt.json_input import read_json

    if isinstance(certificate, str | Path):
        return check(read_json(certificate), str(certificate),
                     max_recompute_s=max_recompute_s).problems
    return check(certificate, max_recompute_s=max_recompute_s).problems


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a format: "instance", "plan" or "certificate"
    (`elk-opt schema NAME`). The plan schema refers to "instance.schema.json" and the
    certificate schema to "plan.schema.json" by file name."""
    from elk_opt.schemas import schema as load

    return load(name)


def compare(instance: Instance, methods: list[str] | None = None,
            options: SolveOptions | None = None, *, timing: Timing | None = None,
            time_limit_s: float | None = None, threads: int | None = None,
            cold: bool = False) -> dict[str, Any]:
    """Every method (default: the heuristics) on `instance`, each plan verified, as
    `elk-opt compare --json` writes it: `{"instance", "rows"}`, the Ideal bound's row first.

    Keywords given replace the fields of `options`, as in `solve`. Exact methods start from
    the best heuristic plan unless `cold`.
    """
    from elk_opt.comparison import compare as run
    from elk_opt.methods import heuristics

    rows = run(instance, heuristics() if methods is None else list(methods),
               _options(options, timing=timing, time_limit_s=time_limit_s, threads=threads,
                        warm_start=None), cold=cold)
    return {"instance": instance.name, "rows": rows}
