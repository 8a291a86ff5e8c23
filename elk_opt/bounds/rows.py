"""One report row per bound that needs a solver: how each is run within the limits it is
given, and what its row says (value, status, note, and the params that reproduce it).

`run_all.lower_bounds` calls the adapters of HEAVY in turn with its limits capped by what is
left of a budget; `recompute` reproduces a row from its params. Each adapter returns None when
its bound does not apply (too many ops, or switched off).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from elk_opt.bounds import limits
from elk_opt.bounds.whole_ns import within_reach
from elk_opt.problem import Instance, Timing

if TYPE_CHECKING:  # the solvers load only when a bound needs them
    from elk_opt.bounds.fluid import FluidBound

BOTH = "separate-noc, shared-noc"


MIN_SOLVER_S = 0.05  # below this much budget a solver-backed bound is not started
LP_RESERVE = 0.25  # of the budget left at the layer windows, kept from their MIPs
CARRY_SHARE = 0.6  # of the budget left at the carrying windows, for them
SPLIT_SHARE = 0.5  # of the budget left at the split fluid MIP, for it
# fluid-whole-ns gets at most this many times fluid-contiguous's time: it took 1.7-3.1 times
# as long on three of four one-layer slices (BENCHMARKS.md, "Intervals of whole ns")
WHOLE_NS_TIME_FACTOR = 4.0


@dataclass(frozen=True)
class Limits:
    """The limits every solver-backed bound runs within (`lower_bounds`' arguments)."""

    timing: Timing
    fluid_max_ops: int
    fluid_time_s: float
    fluid_sram_max_ops: int
    fluid_milp_max_ops: int
    fluid_contiguous_max_ops: int
    fluid_split_max_ops: int
    window: int
    window_time_s: float
    layers: int
    layers_time_s: float
    lp_max_ops: int
    lp_time_s: float
    threads: int
    progress: bool
    ends: float | None = None  # perf_counter time the budget ends (None: no budget)
    layers_mip_time_s: float = limits.LAYERS_MIP_TIME_S
    replay: bool = False  # read a plan from the fluid-contiguous MIP's solution too
    whole_ns: bool = False  # fluid-whole-ns after a finished fluid-contiguous
    plan_ns: int | None = None  # and then only within reach below this plan's makespan
    contiguous_done: tuple[int, float] | None = None  # a finished fluid-contiguous's ns and s

    def say(self, text: str) -> None:
        if self.progress:
            print(text, file=sys.stderr)


def report_row(name: str, started: float, ns: int | None, timings: str, order: str,
               note: str, *, status: str = "complete",
               params: dict[str, Any] | None = None) -> dict[str, Any]:
    """One report row. `status`: complete (the value is the bound), time-limit (stopped by its
    limit: the value, if any, is still a bound), interrupted, or skipped; `params` are the
    keyword arguments of `recompute` that reproduce the value."""
    return {"bound": name, "ns": ns, "wall_s": time.perf_counter() - started,
            "timings": timings, "order": order, "note": note, "status": status,
            "params": params or {}}


def _fluid(instance: Instance, lim: Limits) -> dict[str, Any] | None:
    n = len(instance.ops)
    if n > lim.fluid_max_ops:
        return None
    from elk_opt.bounds.fluid import fluid_bound
    lim.say(f"fluid LP of {n} ops...")
    started = time.perf_counter()
    fb = fluid_bound(instance, lim.timing, lim.fluid_time_s, limits.BOUND_CLASSES,
                     threads=lim.threads)
    return _fluid_row("fluid", started, fb, lim, f"{fb.columns:,} columns, {fb.rows:,} rows, "
                                                 f"{fb.classes} load classes",
                      max_classes=limits.BOUND_CLASSES)


def _fluid_row(name: str, started: float, fb: FluidBound, lim: Limits, detail: str,
               **params: Any) -> dict[str, Any]:
    """The row of a fluid LP or MIP (`detail`: the model solved); a MIP stopped by its limit
    still gives a bound, with status time-limit."""
    note = (f"not finished in {lim.fluid_time_s:g} s" if fb.bound_ns is None
            else detail if fb.complete else f"{detail}, stopped at {lim.fluid_time_s:g} s")
    return report_row(name, started, fb.bound_ns, lim.timing, "instance", note,
                      status="complete" if fb.bound_ns is not None and fb.complete
                      else "time-limit",
                      params={"time_limit_s": lim.fluid_time_s, **params})


def _fluid_sram(instance: Instance, lim: Limits) -> dict[str, Any] | None:
    from elk_opt.bounds.fluid_sram import DEFAULT_BAND, fluid_sram_bound, fluid_sram_ops
    n = len(instance.ops)
    if fluid_sram_ops(instance, DEFAULT_BAND) > lim.fluid_sram_max_ops:
        return None
    lim.say(f"fluid LP with SRAM of {n} ops...")
    started = time.perf_counter()
    fb = fluid_sram_bound(instance, lim.timing, lim.fluid_time_s, DEFAULT_BAND,
                          limits.BOUND_CLASSES, threads=lim.threads)
    summed = f", {fb.repeats} repeats of a block summed" if fb.repeats else ""
    return _fluid_row("fluid-sram", started, fb, lim, f"{fb.columns:,} columns, {fb.rows:,} "
                      f"rows, loads tracked {DEFAULT_BAND} executes back{summed}",
                      band=DEFAULT_BAND, max_classes=limits.BOUND_CLASSES)


def _fluid_contiguous(instance: Instance, lim: Limits) -> list[dict[str, Any]] | None:
    """fluid-contiguous and, when asked for (`whole_ns`) and HiGHS finished it,
    fluid-whole-ns in at most WHOLE_NS_TIME_FACTOR times its time: its last ns, worth its time
    only where a plan lies within a ns per interval of it (`whole_ns.within_reach`): of the
    plan given (`plan_ns`), if one is; `cpsat` and `polish` run it where theirs does. A
    fluid-contiguous finished elsewhere (`contiguous_done`) stands in for one left out."""
    n = len(instance.ops)
    row = _milp(instance, lim, contiguous=True) if n <= lim.fluid_contiguous_max_ops else None
    if row is None:
        done = lim.contiguous_done
    else:
        done = (row["ns"], row["wall_s"]) if row["status"] == "complete" else None
    rows = [] if row is None else [row]
    if (done is None or not lim.whole_ns
            or (lim.plan_ns is not None and not within_reach(n, lim.plan_ns, done[0]))):
        return rows or None
    cap = whole_ns_cap(done[1])
    capped = replace(lim, fluid_time_s=cap if lim.fluid_time_s is None
                     else min(lim.fluid_time_s, cap))
    whole = _milp(instance, capped, contiguous=True, whole_ns=True)
    if whole["status"] == "complete":  # the same whenever solved to the end: --check
        whole["params"]["time_limit_s"] = None  # needs no cap a slower run misses
    return [*rows, whole]


def whole_ns_cap(contiguous_s: float) -> float:
    """fluid-whole-ns's time limit after a fluid-contiguous that took `contiguous_s`."""
    return WHOLE_NS_TIME_FACTOR * max(contiguous_s, MIN_SOLVER_S)


def _fluid_milp(instance: Instance, lim: Limits) -> dict[str, Any] | None:
    if len(instance.ops) > lim.fluid_milp_max_ops:
        return None
    return _milp(instance, lim, contiguous=False)


def _milp(instance: Instance, lim: Limits, contiguous: bool,
          whole_ns: bool = False) -> dict[str, Any]:
    n = len(instance.ops)
    from elk_opt.bounds.fluid_milp import solve_fluid_milp
    from elk_opt.bounds.fluid_sram import DEFAULT_BAND
    what = "one load running at each execute start" if contiguous else "SRAM"
    what += ", intervals of whole ns" if whole_ns else ""
    lim.say(f"fluid MIP with {what} of {n} ops...")
    started = time.perf_counter()
    solved = solve_fluid_milp(instance, lim.timing, lim.fluid_time_s, DEFAULT_BAND,
                              limits.DEFAULT_CLASSES, threads=lim.threads, contiguous=contiguous,
                              whole_ns=whole_ns)
    fb = solved.bound
    detail = f"{fb.columns:,} columns ({n} ops' pairs and pending loads 0/1"
    detail += ", loads started and finished 0/1" if contiguous else ""
    detail += ", interval lengths integer)" if whole_ns else ")"
    name = "fluid-whole-ns" if whole_ns else "fluid-contiguous" if contiguous else "fluid-milp"
    row = _fluid_row(name, started, fb, lim, f"{detail}, {fb.rows:,} rows", band=DEFAULT_BAND,
                     max_classes=limits.DEFAULT_CLASSES)
    if (contiguous and not whole_ns and lim.replay and solved.model is not None
            and solved.solution is not None):
        from elk_opt.io import plan_to_dict
        from formulations.fluid_replay import replayed_plan
        plan = replayed_plan(instance, solved.model, solved.solution, lim.timing,
                             "fluid-contiguous", time.perf_counter())
        if plan is not None:
            row["replayed"] = plan_to_dict(plan)
    return row


def _lp(instance: Instance, lim: Limits) -> dict[str, Any] | None:
    n = len(instance.ops)
    if n > lim.lp_max_ops:
        return None
    from formulations.ilp import TooLarge, lp_bound
    lim.say(f"LP relaxation of {n} ops...")
    started = time.perf_counter()
    params = {"time_limit_s": lim.lp_time_s}
    try:
        value = lp_bound(instance, lim.lp_time_s)
    except TooLarge:
        return report_row("lp", started, None, BOTH, "instance",
                          "skipped: the horizon is beyond what HiGHS solves reliably",
                          status="skipped", params=params)
    return report_row("lp", started, value, BOTH, "instance",
                      "LP relaxation of the ILP (section 5 model)" if value is not None
                      else f"not finished in {lim.lp_time_s:g} s",
                      status="complete" if value is not None else "time-limit", params=params)


def _window(instance: Instance, lim: Limits) -> dict[str, Any] | None:
    if not lim.window:
        return None
    from elk_opt.bounds.window import window_bound
    lim.say(f"window bound, {lim.window} ops per window...")
    wb = window_bound(instance, lim.window, lim.window_time_s, lim.threads,
                      progress=lim.progress)
    interrupted = wb.solved < wb.windows
    note = (f"interrupted: the first {wb.solved} of {wb.windows} windows" if interrupted
            else f"{wb.windows} windows ({wb.distinct} distinct), {wb.proven} solved to "
                 "optimality")
    status = ("interrupted" if interrupted
              else "complete" if wb.proven == wb.windows else "time-limit")
    return {"bound": f"window{lim.window}", "ns": wb.bound_ns, "wall_s": wb.wall_s,
            "timings": BOTH, "order": "instance", "note": note, "status": status,
            "params": {"width": lim.window, "time_limit_s": lim.window_time_s},
            "interrupted": interrupted}


def _layers(instance: Instance, lim: Limits) -> list[dict[str, Any]] | None:
    """The layer windows' row and, reusing their bounds, the fluid LP with them as rows."""
    if not lim.layers:
        return None
    from elk_opt.bounds.layers import layer_bound
    lim.say(f"layer windows, {lim.layers} layer(s) each, under {lim.timing}...")
    # the windows' MIPs leave a quarter of what is left to the fluid LP that reads them
    ends = (None if lim.ends is None
            else lim.ends - LP_RESERVE * max(0.0, lim.ends - time.perf_counter()))
    lb = layer_bound(instance, lim.timing, lim.layers, lim.layers_time_s, lim.threads,
                     progress=lim.progress, mip_time_s=lim.layers_mip_time_s, ends=ends)
    interrupted = lb.interrupted or lb.solved < lb.windows
    note = (f"interrupted: the first {lb.solved} of {lb.windows} windows counted"
            if interrupted else f"{lb.windows} windows ({lb.distinct} distinct), "
                                f"{lb.proven} solved to optimality")
    status = ("interrupted" if interrupted
              else "complete" if lb.proven == lb.windows else "time-limit")
    params = {"per": lim.layers, "time_limit_s": lim.layers_time_s,
              "mip_time_s": lb.mip_time_s}
    timings = lim.timing if lim.timing == "shared-noc" else BOTH
    rows = [{"bound": f"layers{lim.layers}", "ns": lb.bound_ns, "wall_s": lb.wall_s,
             "timings": timings, "order": "instance", "note": note, "status": status,
             "params": params, "interrupted": interrupted}]
    if interrupted or len(instance.ops) > lim.fluid_max_ops:
        return rows
    from elk_opt.bounds.fluid_layers import fluid_layers_bound
    lim.say("fluid LP with the layer windows as rows...")
    started = time.perf_counter()
    lp_time_s = lim.fluid_time_s
    if lim.ends is not None:  # the LP gets what the windows left of the budget
        lp_time_s = round(max(MIN_SOLVER_S, min(lp_time_s, lim.ends - time.perf_counter())), 3)
    # params keep the uncapped limit: an LP that finished within less time reaches the same
    # optimum within more, so `recompute` reproduces it on a busier machine too
    fb = fluid_layers_bound(instance, lim.timing, lim.layers_time_s, lp_time_s,
                            lim.threads, limits.BOUND_CLASSES, per=lim.layers, windows=lb)
    done = fb.bound_ns is not None
    row = report_row("fluid-layers", started, fb.bound_ns, timings, "instance",
                     f"the fluid LP, each of the {fb.windows} layer windows' time at least its "
                     "bound" if done else f"not finished in {lp_time_s:g} s",
                     status=status if done else "time-limit",
                     params={**params, "lp_time_s": lim.fluid_time_s,
                             "max_classes": limits.BOUND_CLASSES})
    row["wall_s"] += lb.wall_s  # the windows' time is part of its cost
    rows.append(row)
    return rows


def _fluid_split(instance: Instance, lim: Limits) -> dict[str, Any] | None:
    """The fluid MIP with loads run whole, split over repeated layers at the summed LP's duals
    (elk_opt.bounds.split), within SPLIT_SHARE of what is left of a budget; only on models
    whose layers repeat (it says so and gives nothing otherwise)."""
    from elk_opt.bounds.fluid_sram import fluid_sram_ops
    from elk_opt.bounds.split import fluid_split_bound, split_band
    band = split_band(instance)
    if fluid_sram_ops(instance, band) > lim.fluid_split_max_ops:
        return None
    lim.say(f"fluid MIP split over repeated layers, {len(instance.ops)} ops...")
    started = time.perf_counter()
    ends = (None if lim.ends is None
            else started + SPLIT_SHARE * max(0.0, lim.ends - started))
    sb = fluid_split_bound(instance, lim.timing, lim.fluid_time_s, band,
                           limits.BOUND_CLASSES, threads=lim.threads, ends=ends)
    if sb.repeats == 0:
        return None  # no repeated block of layers to split the model at
    note = (f"{sb.repeats} repeats, 3 distinct blocks, {sb.blocks_proven} solved; the blocks' "
            f"LPs {sb.lp_ns:,} ns" if sb.bound_ns is not None and sb.lp_ns is not None
            else f"not finished in {lim.fluid_time_s:g} s a block")
    return report_row("fluid-split", started, sb.bound_ns, lim.timing, "instance", note,
                      status="complete" if sb.bound_ns is not None and sb.blocks_proven == 3
                      else "time-limit",
                      params={"band": band, "mip_time_s": sb.mip_time_s or lim.fluid_time_s,
                              "max_classes": limits.BOUND_CLASSES})


def _carry(instance: Instance, lim: Limits) -> dict[str, Any] | None:
    """The layer windows paying for the loads they carry (elk_opt.bounds.carry), within
    CARRY_SHARE of what is left of a budget (the layer windows get the rest)."""
    if not lim.layers:
        return None
    from elk_opt.bounds.carry import carry_bound
    lim.say(f"layer windows carrying loads, {lim.layers} layer(s) each, under {lim.timing}...")
    started = time.perf_counter()
    ends = (None if lim.ends is None
            else started + CARRY_SHARE * max(0.0, lim.ends - started))
    cb = carry_bound(instance, lim.timing, lim.layers, mip_time_s=lim.layers_mip_time_s,
                     threads=lim.threads, ends=ends, max_classes=limits.BOUND_CLASSES,
                     progress=lim.progress)
    done = cb.rounds > 0 and cb.bound_ns > 0
    complete = done and cb.proven == cb.distinct
    note = (f"{cb.windows} windows ({cb.distinct} distinct, {cb.proven} solved at the best "
            f"of {cb.rounds} price vectors)" if done else "no window solved in time")
    timings = lim.timing if lim.timing == "shared-noc" else BOTH
    return report_row("carry", started, cb.bound_ns if done else None, timings, "instance", note,
                      status="complete" if complete else "time-limit",
                      # the prices as found, every digit: a recompute evaluates at exactly these
                      params={"per": lim.layers, "mip_time_s": cb.mip_time_s,
                              "max_classes": limits.BOUND_CLASSES,
                               "prices": [float(p) for p in cb.prices]})


# carry before fluid-split: on the grid's load-bound rows it is the higher of the two
HEAVY: tuple[Callable[[Instance, Limits], Any], ...] = (
    _fluid, _fluid_sram, _fluid_milp, _fluid_contiguous, _lp, _window, _carry, _fluid_split,
    _layers)

