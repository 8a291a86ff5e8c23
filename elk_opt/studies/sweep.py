"""Design-space sweeps: one chip parameter varied, the model re-planned and simulated per point.

Each cell rebuilds the instance on the varied chip (plans depend on the chip), schedules it
with each method, and simulates the plan with contention; the plan comes back packed, to be
kept beside the figure's CSV (elk_opt.studies.plans). The presets follow the axes of the
Elk paper's design-space exploration (its Figures 19-24): HBM bandwidth, NoC bandwidth,
topology, core count, per-core compute, and a training-like workload.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from elk_opt.errors import UsageError
from elk_opt.problem import Chip, Timing
from elk_opt.studies.plans import Outcome, packed

AXES = ("hbm", "noc", "cores", "compute", "sram")


@dataclass(frozen=True)
class Figure:
    title: str
    axis: str
    values: tuple[float, ...]
    chips: tuple[str, ...] = ("ipu-pod4-hbm3e",)
    modes: tuple[str, ...] = ("decode",)


FIGURES: dict[int, Figure] = {
    19: Figure("Throughput against HBM bandwidth", "hbm", (0.25, 0.5, 1, 2, 4, 8)),
    20: Figure("Throughput against NoC bandwidth", "noc", (0.25, 0.5, 1, 2, 4)),
    21: Figure("All-to-all against 2D mesh as HBM bandwidth grows", "hbm",
               (0.5, 1, 2, 4), chips=("ipu-pod4-hbm3e", "ipu-pod4-mesh")),
    22: Figure("Throughput against core count (same SRAM per core)", "cores",
               (0.25, 0.5, 1, 2)),
    23: Figure("Throughput against per-core compute", "compute", (0.25, 0.5, 1, 2, 4)),
    24: Figure("Training-like forward pass against HBM bandwidth", "hbm",
               (0.25, 0.5, 1, 2, 4), modes=("forward",)),
}


def vary(chip: Chip, axis: str, scale: float) -> Chip:
    """The chip with one parameter scaled; names say what changed."""
    if not (math.isfinite(scale) and scale > 0):
        raise UsageError(f"sweep values must be positive and finite, got {scale}")
    name = f"{chip.name}@{axis}x{scale:g}"
    if axis == "hbm":
        return replace(chip, name=name, hbm_bytes_per_s=_scaled(chip.hbm_bytes_per_s, scale))
    if axis == "noc":
        noc = replace(chip.noc, link_bytes_per_s=_scaled(chip.noc.link_bytes_per_s, scale))
        return replace(chip, name=name, noc=noc)
    if axis == "sram":
        return replace(chip, name=name, sram_bytes=_scaled(chip.sram_bytes, scale))
    if axis == "cores":
        if chip.noc.topology == "mesh":
            raise UsageError(f"axis cores keeps the topology's shape only on all-to-all chips; "
                             f"{chip.name} is a mesh")
        return replace(chip, name=name, cores=_scaled(chip.cores, scale))
    if axis == "compute":
        extra = dict(chip.extra)
        for key in ("flops_per_cycle", "vector_elems_per_cycle"):
            if key not in extra:
                raise UsageError(f"axis compute scales chip extra.{key}, which {chip.name} "
                                 "does not give")
            extra[key] = extra[key] * scale
        return replace(chip, name=name, extra=extra)
    raise UsageError(f"unknown axis {axis!r}; choose one of {', '.join(AXES)}")


def _scaled(value: int, scale: float) -> int:
    return max(1, round(value * scale))


@dataclass(frozen=True)
class SweepCell:
    model: str
    mode: str
    batch: int
    kv_len: int
    layers: int | None
    chip: str
    axis: str
    value: float
    method: str
    timing: Timing

    @property
    def name(self) -> str:
        """The cell's name, unique within a figure (its plan's file name)."""
        layers = "all" if self.layers is None else self.layers
        return (f"{self.model}-{self.mode}-b{self.batch}-kv{self.kv_len}-l{layers}-{self.chip}-"
                f"{self.axis}x{self.value:g}-{self.method}")


@dataclass(frozen=True)
class SweepPoint:
    cell: SweepCell
    ops: int
    makespan_ns: int  # analytic, under the cell's timing
    simulated_ns: int  # with contention
    throughput: float  # samples (decode: tokens) per second, simulated
    hbm_util: float
    noc_util: float
    tflops: float
    solve_s: float
    verified: bool
    plan: str | None = None  # the plan's file, relative to the sweep's folder


def run_sweep_cell(cell: SweepCell) -> Outcome[SweepPoint]:
    from elk_opt.frontend.chips import load_chip
    from elk_opt.frontend.zoo import model_instance
    from elk_opt.io import plan_to_dict
    from elk_opt.methods import solve
    from elk_opt.simulator import simulate
    from elk_opt.solution import SolveOptions
    from verify import check

    chip = vary(load_chip(cell.chip), cell.axis, cell.value)
    instance = model_instance(cell.model, chip, batch=cell.batch, kv_len=cell.kv_len,
                              layers=cell.layers, mode=cell.mode)
    plan = solve(instance, cell.method, SolveOptions(timing=cell.timing))
    sim = simulate(plan, sharing="full")
    assert plan.claims is not None
    point = SweepPoint(cell, len(instance.ops), plan.claims.makespan_ns, sim.makespan_ns,
                       cell.batch / (sim.makespan_ns * 1e-9), sim.hbm_util, sim.noc_util,
                       sim.tflops, round(plan.claims.wall_s, 3),
                       check(plan_to_dict(plan)).valid)
    return Outcome(point, packed(plan))


def sweep_cells(model: str, figure: Figure, methods: Sequence[str], *, batch: int, kv_len: int,
                layers: int | None, timing: Timing) -> list[SweepCell]:
    return [SweepCell(model, mode, batch, kv_len, layers, chip, figure.axis, v, m, timing)
            for mode in figure.modes for chip in figure.chips for m in methods
            for v in figure.values]


def normalised(points: Sequence[SweepPoint]) -> dict[SweepPoint, float]:
    """Throughput over that of the first point's chip and method, in the same mode, at the
    scale closest to 1: one yardstick, so methods and chips (topologies) compare."""
    first = points[0].cell
    out = {}
    for p in points:
        series = [q for q in points if (q.cell.chip, q.cell.mode, q.cell.method)
                  == (first.chip, p.cell.mode, first.method)]
        ref = min(series, key=lambda q: (abs(math.log(q.cell.value)), q.cell.value))
        out[p] = p.throughput / ref.throughput
    return out
