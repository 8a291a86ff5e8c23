"""Every lower bound the project computes for an instance, and the best of them.

The logic of `elk-opt bound` (which prints and saves this report) and of `elk_opt.bound`.
Each bound holds for every plan obeying R5 under the timing asked for (default shared-noc,
docs/spec.md 5b), at any pair choice, preload order, issue points and releases; each row says for
which timings and execution orders. A bound of separate-noc holds for shared-noc too (sharing
only slows); the port bounds need the shared port.

- ideal: the paper's Ideal roofline (elk_opt.bounds.ideal), any execution order;
- hbm-cut, port-cut, port-total: the loads (and under 5b, the port work) that must precede
  an execute's start (elk_opt.bounds.cuts), linear time;
- fluid: an LP over how load and execute work can overlap between execute starts, with
  the port's sharing rule under 5b (elk_opt.bounds.fluid);
- fluid-sram: the fluid LP plus rule R5 over the loads that have made progress by each
  execute (elk_opt.bounds.fluid_sram), up to `fluid_sram_max_ops` ops once repeated layers
  are summed (elk_opt.bounds.periodic);
- fluid-milp: that LP with each op's pair and each pending load whole (0/1 columns,
  elk_opt.bounds.fluid_milp), a HiGHS MIP, up to `fluid_milp_max_ops` ops;
- fluid-contiguous: that MIP with one load running at each execute start (a load, once
  started, runs to its end: elk_opt.bounds.contiguous), up to `fluid_contiguous_max_ops` ops;
- fluid-whole-ns: fluid-contiguous with every interval between execute starts a whole number
  of ns, as every plan's are (elk_opt.bounds.whole_ns), when asked for (`whole_ns`) and
  fluid-contiguous finished, in at most WHOLE_NS_TIME_FACTOR times its time: its last ns;
- lp: the LP relaxation of the ILP model (HiGHS), quadratic in the ops; sees SRAM;
- window: consecutive windows of ops, each relaxation bounded by CP-SAT
  (elk_opt.bounds.window); sees SRAM;
- layers: windows of whole decoder layers, each relaxation bounded by CP-SAT under the
  timing asked for (elk_opt.bounds.layers); sees SRAM and, under 5b, the port;
- fluid-layers: the fluid LP with each layer window's time at least its bound
  (elk_opt.bounds.fluid_layers), with the layer windows, up to `fluid_max_ops` ops;
- carry: the layer windows' fluid MIPs, each paying for the load work it carries across its
  ends at prices a Lagrangian search sets (elk_opt.bounds.carry), with the layer windows;
- fluid-split: fluid-contiguous split over repeated layers, the rows between repeats priced
  at the duals of fluid-sram's summed LP (elk_opt.bounds.split), with fluid-sram.
The lp and window models are section 5's: valid under both timings, blind to the port.
Window and layer bounds solve each distinct window once (decoder layers repeat).
Every bound above but ideal and port-total holds for plans that execute in the instance's
order only. Asked for any order (`exec_order="free"`, R2), the report keeps to ideal and
port-total and adds the cuts over ancestors and descendants (hbm-cut-any, port-cut-any,
elk_opt.bounds.cuts), which hold for every topological order. A Ctrl-C stops the bound being
computed and keeps those already found; the window bound keeps the windows it had bounded.
Solvers load only when asked for.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from elk_opt.bounds import limits
from elk_opt.bounds.cuts import (
    ANY_ORDER_MAX_OPS,
    hbm_cut_any_bound,
    hbm_cut_bound,
    port_cut_any_bound,
    port_cut_bound,
    port_total_bound,
)
from elk_opt.bounds.ideal import ideal_bound
from elk_opt.bounds.whole_ns import within_reach
from elk_opt.errors import UsageError
from elk_opt.problem import DEFAULT_TIMING, ExecOrder, Instance, Timing, is_count

if TYPE_CHECKING:  # the solvers load only when a bound needs them
    from elk_opt.bounds.fluid import FluidBound

BOTH = "separate-noc, shared-noc"


@dataclass(frozen=True)
class _Limits:
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


def _row(name: str, started: float, ns: int | None, timings: str, order: str, note: str,
         *, status: str = "complete", params: dict[str, Any] | None = None) -> dict[str, Any]:
    """One report row. `status`: complete (the value is the bound), time-limit (stopped by its
    limit: the value, if any, is still a bound), interrupted, or skipped; `params` are the
    keyword arguments of `recompute` that reproduce the value."""
    return {"bound": name, "ns": ns, "wall_s": time.perf_counter() - started,
            "timings": timings, "order": order, "note": note, "status": status,
            "params": params or {}}


def _fluid(instance: Instance, lim: _Limits) -> dict[str, Any] | None:
    n = len(instance.ops)
    if n > lim.fluid_max_ops:
        return None
    from elk_opt.bounds.fluid import fluid_bound
    lim.say(f"fluid LP of {n} ops...")
    started = time.perf_counter()
    fb = fluid_bound(instance, lim.timing, lim.fluid_time_s, threads=lim.threads)
    return _fluid_row("fluid", started, fb, lim, f"{fb.columns:,} columns, {fb.rows:,} rows, "
                                                 f"{fb.classes} load classes")


def _fluid_row(name: str, started: float, fb: FluidBound, lim: _Limits, detail: str,
               **params: Any) -> dict[str, Any]:
    """The row of a fluid LP or MIP (`detail`: the model solved); a MIP stopped by its limit
    still gives a bound, with status time-limit."""
    note = (f"not finished in {lim.fluid_time_s:g} s" if fb.bound_ns is None
            else detail if fb.complete else f"{detail}, stopped at {lim.fluid_time_s:g} s")
    return _row(name, started, fb.bound_ns, lim.timing, "instance", note,
                status="complete" if fb.bound_ns is not None and fb.complete
                else "time-limit", params={"time_limit_s": lim.fluid_time_s, **params})


def _fluid_sram(instance: Instance, lim: _Limits) -> dict[str, Any] | None:
    from elk_opt.bounds.fluid_sram import DEFAULT_BAND, fluid_sram_bound, fluid_sram_ops
    n = len(instance.ops)
    if fluid_sram_ops(instance, DEFAULT_BAND) > lim.fluid_sram_max_ops:
        return None
    lim.say(f"fluid LP with SRAM of {n} ops...")
    started = time.perf_counter()
    fb = fluid_sram_bound(instance, lim.timing, lim.fluid_time_s, DEFAULT_BAND,
                          threads=lim.threads)
    summed = f", {fb.repeats} repeats of a block summed" if fb.repeats else ""
    return _fluid_row("fluid-sram", started, fb, lim, f"{fb.columns:,} columns, {fb.rows:,} "
                      f"rows, loads tracked {DEFAULT_BAND} executes back{summed}",
                      band=DEFAULT_BAND)


def _fluid_contiguous(instance: Instance, lim: _Limits) -> list[dict[str, Any]] | None:
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


def _fluid_milp(instance: Instance, lim: _Limits) -> dict[str, Any] | None:
    if len(instance.ops) > lim.fluid_milp_max_ops:
        return None
    return _milp(instance, lim, contiguous=False)


def _milp(instance: Instance, lim: _Limits, contiguous: bool,
          whole_ns: bool = False) -> dict[str, Any]:
    n = len(instance.ops)
    from elk_opt.bounds.fluid_milp import solve_fluid_milp
    from elk_opt.bounds.fluid_sram import DEFAULT_BAND
    what = "one load running at each execute start" if contiguous else "SRAM"
    what += ", intervals of whole ns" if whole_ns else ""
    lim.say(f"fluid MIP with {what} of {n} ops...")
    started = time.perf_counter()
    solved = solve_fluid_milp(instance, lim.timing, lim.fluid_time_s, DEFAULT_BAND,
                              threads=lim.threads, contiguous=contiguous, whole_ns=whole_ns)
    fb = solved.bound
    detail = f"{fb.columns:,} columns ({n} ops' pairs and pending loads 0/1"
    detail += ", loads started and finished 0/1" if contiguous else ""
    detail += ", interval lengths integer)" if whole_ns else ")"
    name = "fluid-whole-ns" if whole_ns else "fluid-contiguous" if contiguous else "fluid-milp"
    row = _fluid_row(name, started, fb, lim, f"{detail}, {fb.rows:,} rows", band=DEFAULT_BAND)
    if (contiguous and not whole_ns and lim.replay and solved.model is not None
            and solved.solution is not None):
        from elk_opt.io import plan_to_dict
        from formulations.fluid_replay import replayed_plan
        plan = replayed_plan(instance, solved.model, solved.solution, lim.timing,
                             "fluid-contiguous", time.perf_counter())
        if plan is not None:
            row["replayed"] = plan_to_dict(plan)
    return row


def _lp(instance: Instance, lim: _Limits) -> dict[str, Any] | None:
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
        return _row("lp", started, None, BOTH, "instance",
                    "skipped: the horizon is beyond what HiGHS solves reliably",
                    status="skipped", params=params)
    return _row("lp", started, value, BOTH, "instance",
                "LP relaxation of the ILP (section 5 model)" if value is not None
                else f"not finished in {lim.lp_time_s:g} s",
                status="complete" if value is not None else "time-limit", params=params)


def _window(instance: Instance, lim: _Limits) -> dict[str, Any] | None:
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


def _layers(instance: Instance, lim: _Limits) -> list[dict[str, Any]] | None:
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
                            lim.threads, per=lim.layers, windows=lb)
    done = fb.bound_ns is not None
    row = _row("fluid-layers", started, fb.bound_ns, timings, "instance",
               f"the fluid LP, each of the {fb.windows} layer windows' time at least its "
               "bound" if done else f"not finished in {lp_time_s:g} s",
               status=status if done else "time-limit",
               params={**params, "lp_time_s": lim.fluid_time_s})
    row["wall_s"] += lb.wall_s  # the windows' time is part of its cost
    rows.append(row)
    return rows


def _fluid_split(instance: Instance, lim: _Limits) -> dict[str, Any] | None:
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
                           threads=lim.threads, ends=ends)
    if sb.repeats == 0:
        return None  # no repeated block of layers to split the model at
    note = (f"{sb.repeats} repeats, 3 distinct blocks, {sb.blocks_proven} solved; the blocks' "
            f"LPs {sb.lp_ns:,} ns" if sb.bound_ns is not None and sb.lp_ns is not None
            else f"not finished in {lim.fluid_time_s:g} s a block")
    return _row("fluid-split", started, sb.bound_ns, lim.timing, "instance", note,
                status="complete" if sb.bound_ns is not None and sb.blocks_proven == 3
                else "time-limit",
                params={"band": band, "mip_time_s": sb.mip_time_s or lim.fluid_time_s})


def _carry(instance: Instance, lim: _Limits) -> dict[str, Any] | None:
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
                     threads=lim.threads, ends=ends, progress=lim.progress)
    done = cb.rounds > 0 and cb.bound_ns > 0
    complete = done and cb.proven == cb.distinct
    note = (f"{cb.windows} windows ({cb.distinct} distinct, {cb.proven} solved at the best "
            f"of {cb.rounds} price vectors)" if done else "no window solved in time")
    timings = lim.timing if lim.timing == "shared-noc" else BOTH
    return _row("carry", started, cb.bound_ns if done else None, timings, "instance", note,
                status="complete" if complete else "time-limit",
                # the prices as found, every digit: a recompute evaluates at exactly these
                params={"per": lim.layers, "mip_time_s": cb.mip_time_s,
                        "prices": [float(p) for p in cb.prices]})


# carry before fluid-split: on the grid's load-bound rows it is the higher of the two
HEAVY: tuple[Callable[[Instance, _Limits], Any], ...] = (
    _fluid, _fluid_sram, _fluid_milp, _fluid_contiguous, _lp, _window, _carry, _fluid_split,
    _layers)


MIN_SOLVER_S = 0.05  # below this much budget a solver-backed bound is not started
LP_RESERVE = 0.25  # of the budget left at the layer windows, kept from their MIPs
CARRY_SHARE = 0.6  # of the budget left at the carrying windows, for them
SPLIT_SHARE = 0.5  # of the budget left at the split fluid MIP, for it
# fluid-whole-ns gets at most this many times fluid-contiguous's time: it took 1.7-3.1 times
# as long on three of four one-layer slices (BENCHMARKS.md, "Intervals of whole ns")
WHOLE_NS_TIME_FACTOR = 4.0
BUDGET_SPENT = "skipped: the time budget was spent"


def _distinct(instance: Instance, windows: list[tuple[int, int]]) -> int:
    """How many of `windows` ([a, b) op ranges) CP-SAT solves: a repeated one is solved once."""
    from elk_opt.bounds.window import window_key

    return max(1, len({window_key(instance, a, b) for a, b in windows}))


def _capped(lim: _Limits, left: float, instance: Instance) -> _Limits | None:
    """The limits with every solver limit capped by `left` seconds (the window bound's per
    window, by `left` over its distinct windows; the layer windows' CP-SAT, by half of `left`
    over their distinct ones, their fluid MIPs sharing what it leaves but a quarter, and the
    fluid LP they feed taking the rest); None when less than
    MIN_SOLVER_S is left. Repeated windows cost nothing (each distinct window is solved once),
    so a model of 80 identical layers gives its few distinct windows the whole share."""
    if left < MIN_SOLVER_S:
        return None
    n = len(instance.ops)
    windows = (_distinct(instance, [(a, min(n, a + lim.window)) for a in range(0, n, lim.window)])
               if lim.window else 1)
    layer_windows = 1
    if lim.layers:
        from elk_opt.bounds.layers import layer_windows as cut

        layer_windows = _distinct(instance, cut(instance, lim.layers))
    return replace(lim, ends=time.perf_counter() + left,
                   fluid_time_s=round(min(lim.fluid_time_s, left), 3),
                   lp_time_s=round(min(lim.lp_time_s, left), 3),
                   window_time_s=round(min(lim.window_time_s, max(left / windows, 0.01)), 3),
                   layers_time_s=round(min(lim.layers_time_s,
                                           max(left / 2 / layer_windows, 0.01)), 3))


def recompute(instance: Instance, timing: Timing, name: str, params: dict[str, Any],
              memo: dict[tuple, Any] | None = None) -> int | None:
    """The value of the bound a report row names, computed again from its `params` (None if
    it does not finish within them). Solver-backed bounds are deterministic only up to their
    time limits: a value recomputed under a limit may differ from the recorded one. The layer
    windows run on one worker under their deterministic limit alone, so they come out at least
    at the recorded value (elk_opt.bounds.layers.solver_for_bound). `memo` (one per instance)
    keeps the layer windows solved for one row for the next that names the same ones
    (`fluid-layers` is built on `layers<N>`'s windows)."""
    cheap: dict[str, Callable[[Instance], int]] = {"ideal": ideal_bound,
                                                   "hbm-cut": hbm_cut_bound,
                                                   "hbm-cut-any": hbm_cut_any_bound}
    if timing == "shared-noc":
        cheap |= {"port-total": port_total_bound, "port-cut": port_cut_bound,
                  "port-cut-any": port_cut_any_bound}
    if name in cheap:
        return cheap[name](instance)
    if name == "fluid":
        from elk_opt.bounds.fluid import fluid_bound
        return fluid_bound(instance, timing, params.get("time_limit_s")).bound_ns
    if name == "fluid-sram":
        from elk_opt.bounds.fluid_sram import fluid_sram_bound
        return fluid_sram_bound(instance, timing, params.get("time_limit_s"),
                                params["band"]).bound_ns
    if name in ("fluid-milp", "fluid-contiguous", "fluid-whole-ns"):
        from elk_opt.bounds.fluid_milp import fluid_milp_bound
        return fluid_milp_bound(instance, timing, params.get("time_limit_s"), params["band"],
                                contiguous=name != "fluid-milp",
                                whole_ns=name == "fluid-whole-ns").bound_ns
    if name == "lp":
        from formulations.ilp import lp_bound
        return lp_bound(instance, params.get("time_limit_s"))
    if name.startswith("window") and "width" in params:
        from elk_opt.bounds.window import window_bound
        return window_bound(instance, params["width"], params["time_limit_s"], 1).bound_ns
    if name == "fluid-layers":
        from elk_opt.bounds.fluid_layers import fluid_layers_bound
        windows = _layer_windows(instance, timing, params, memo)
        return fluid_layers_bound(instance, timing, params["time_limit_s"],
                                  params.get("lp_time_s"), per=params["per"],
                                  windows=windows).bound_ns
    if name.startswith("layers") and "per" in params:
        return _layer_windows(instance, timing, params, memo).bound_ns
    if name == "fluid-split":
        from elk_opt.bounds.split import fluid_split_bound
        # each block's MIP on one thread with four times its limit, as for `carry`
        return fluid_split_bound(instance, timing, 4 * params["mip_time_s"] + 1,
                                 params["band"]).bound_ns
    if name == "carry":
        from elk_opt.bounds.carry import carry_bound
        # at the recorded prices, each window's MIP on one thread with four times its limit
        # (HiGHS on one thread searches the same way each run: more time, a bound as high)
        return carry_bound(instance, timing, params["per"],
                           mip_time_s=4 * params["mip_time_s"] + 1,
                           prices=params["prices"]).bound_ns
    raise UsageError(f"no bound named {name!r} under {timing} to recompute")


def _layer_windows(instance: Instance, timing: Timing, params: dict[str, Any],
                   memo: dict[tuple, Any] | None) -> Any:
    """The layer windows a row's params name, solved deterministically (once per memo)."""
    from elk_opt.bounds.layers import layer_bound

    # rows written before the windows' fluid MIP ran have no mip_time_s: the MIP then gets
    # CP-SAT's limit, and can only raise what they recorded
    mip_time_s = params.get("mip_time_s", params["time_limit_s"])
    key = ("layers", timing, params["per"], params["time_limit_s"], mip_time_s)
    if memo is not None and key in memo:
        return memo[key]
    windows = layer_bound(instance, timing, params["per"], params["time_limit_s"],
                          deterministic=True, mip_time_s=mip_time_s)
    if memo is not None:
        memo[key] = windows
    return windows


def lower_bounds(instance: Instance, *, timing: Timing = DEFAULT_TIMING,
                 fluid_max_ops: int = limits.FLUID_MAX_OPS,
                 fluid_time_s: float = limits.FLUID_TIME_S,
                 fluid_sram_max_ops: int = limits.FLUID_SRAM_MAX_OPS,
                 fluid_milp_max_ops: int = limits.FLUID_MILP_MAX_OPS,
                 fluid_contiguous_max_ops: int = limits.FLUID_CONTIGUOUS_MAX_OPS,
                 fluid_split_max_ops: int = limits.FLUID_SPLIT_MAX_OPS,
                 window: int = limits.WINDOW_OPS, window_time_s: float = limits.WINDOW_TIME_S,
                 layers: int = limits.LAYERS, layers_time_s: float = limits.LAYERS_TIME_S,
                 layers_mip_time_s: float = limits.LAYERS_MIP_TIME_S,
                 lp_max_ops: int = limits.LP_MAX_OPS, lp_time_s: float = limits.LP_TIME_S,
                 threads: int = 2,
                 progress: bool = False, time_budget_s: float | None = None,
                 exec_order: ExecOrder = "instance", replay: bool = False,
                 whole_ns: bool = False, plan_ns: int | None = None,
                 contiguous_done: tuple[int, float] | None = None) -> dict[str, Any]:
    """`{"instance", "ops", "timing", "bounds": [{"bound", "ns", "wall_s", "timings", "order",
    "note", "status", "params"}], "best"}`.

    The fluid LP runs up to `fluid_max_ops` ops for at most `fluid_time_s`, the fluid LP with
    SRAM up to `fluid_sram_max_ops` ops within the same time limit, and so does its MIP up to
    `fluid_milp_max_ops` ops and the MIP with one load running at each execute start up to
    `fluid_contiguous_max_ops`, and that MIP split over repeated layers up to
    `fluid_split_max_ops` (counted as the LP with SRAM's), its blocks within the same time
    limit each; `window` ops per
    window (0 skips the window bound), `window_time_s` of CP-SAT per window; `layers` decoder
    layers per layer window (0 skips them), `layers_time_s` of CP-SAT per distinct one and
    `layers_mip_time_s` of the fluid MIP per distinct one CP-SAT did not prove; the
    LP relaxation
    runs up to `lp_max_ops` ops, for at most `lp_time_s` (model building included). A bound
    that did not finish in time has `ns` None. `time_budget_s` (None: no budget) caps the
    solver-backed bounds together: each runs with its own limit capped by what is left of the
    budget (the window bound's per-window limit by what is left over its windows), and one
    whose turn comes when nothing is left is listed as skipped; the linear-time bounds always
    run. Budgets are wall-clock; model building beyond a limit may overrun it a little.
    `exec_order="free"`: only the bounds that hold for every execution order (R2).
    `replay`: the report also lists, under "replayed", the plan read from the fluid-contiguous
    MIP's solution (formulations.fluid_replay), an elk-plan/1 document, when there is one.
    `whole_ns`: fluid-whole-ns too, after a finished fluid-contiguous; with `plan_ns` (a
    plan's makespan) only where that lies within a ns per interval above fluid-contiguous;
    `contiguous_done`: the bound (ns) and wall time (s) of a fluid-contiguous HiGHS finished
    before, which fluid-whole-ns follows when `fluid_contiguous_max_ops` leaves it out.
    """
    if (window < 0 or window_time_s <= 0 or lp_time_s <= 0 or threads < 1
            or fluid_time_s <= 0 or fluid_max_ops < 0 or lp_max_ops < 0
            or fluid_sram_max_ops < 0 or fluid_milp_max_ops < 0 or fluid_contiguous_max_ops < 0
            or fluid_split_max_ops < 0
            or layers < 0 or layers_time_s <= 0 or layers_mip_time_s <= 0
            or (time_budget_s is not None and not time_budget_s >= 0)):
        raise UsageError("window, layers, lp_max_ops, fluid_max_ops, fluid_sram_max_ops, "
                         "fluid_milp_max_ops, fluid_contiguous_max_ops, fluid_split_max_ops "
                         "and time_budget_s must be >= 0 and "
                         "window_time_s, layers_time_s, layers_mip_time_s, lp_time_s, "
                         "fluid_time_s, threads positive")
    if plan_ns is not None and not is_count(plan_ns):
        raise UsageError(f"plan_ns must be a plan's makespan, a whole number of ns >= 0, "
                         f"got {plan_ns!r}")
    lim = _Limits(timing, fluid_max_ops, fluid_time_s, fluid_sram_max_ops, fluid_milp_max_ops,
                  fluid_contiguous_max_ops, fluid_split_max_ops,
                  window, window_time_s, layers, layers_time_s, lp_max_ops, lp_time_s, threads,
                  progress, replay=replay, layers_mip_time_s=layers_mip_time_s,
                  whole_ns=whole_ns, plan_ns=plan_ns, contiguous_done=contiguous_done)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    rows.append(_row("ideal", started, ideal_bound(instance), BOTH, "any", "roofline"))
    if exec_order == "free":
        rows += _any_order_rows(instance, timing)
        return _report(instance, timing, rows)
    started = time.perf_counter()
    rows.append(_row("hbm-cut", started, hbm_cut_bound(instance), BOTH, "instance",
                     "loads before an execute start, then the executes"))
    if timing == "shared-noc":
        started = time.perf_counter()
        rows.append(_row("port-total", started, port_total_bound(instance), "shared-noc",
                         "any", "all port work at 1000 permille"))
        started = time.perf_counter()
        rows.append(_row("port-cut", started, port_cut_bound(instance), "shared-noc",
                         "instance", "port work before an execute start, then the executes"))
    deadline = None if time_budget_s is None else time.perf_counter() + time_budget_s
    replayed: list[dict[str, Any]] = []
    for heavy in HEAVY:
        started = time.perf_counter()
        capped = lim if deadline is None else _capped(lim, deadline - started, instance)
        if capped is None:
            rows.append(_row(heavy.__name__.strip("_"), started, None, "", "",
                             BUDGET_SPENT, status="skipped"))
            continue
        try:
            row = heavy(instance, capped)
        except KeyboardInterrupt:
            rows.append(_row(heavy.__name__.strip("_"), started, None, "", "",
                             "interrupted (the rest skipped)", status="interrupted"))
            break
        if row is None:
            continue
        found = row if isinstance(row, list) else [row]
        stopped = [one.pop("interrupted", False) for one in found]
        replayed += [one.pop("replayed") for one in found if "replayed" in one]
        rows.extend(found)
        if any(stopped):
            break
    report = _report(instance, timing, rows)
    return {**report, "replayed": replayed} if replay else report


def _report(instance: Instance, timing: Timing, rows: list[dict[str, Any]]) -> dict[str, Any]:
    best = max(rows, key=lambda r: r["ns"] if r["ns"] is not None else -1)
    return {"instance": instance.name, "ops": len(instance.ops), "timing": timing,
            "bounds": rows, "best": {"bound": best["bound"], "ns": best["ns"]}}


def _any_order_rows(instance: Instance, timing: Timing) -> list[dict[str, Any]]:
    """The rows after ideal when the execution order is free: the cuts over ancestors and
    descendants (skipped above ANY_ORDER_MAX_OPS ops), and port-total under 5b."""
    rows = []
    big = len(instance.ops) > ANY_ORDER_MAX_OPS
    skipped = f"skipped: above {ANY_ORDER_MAX_OPS} ops (quadratic)"
    started = time.perf_counter()
    rows.append(_row("hbm-cut-any", started, None if big else hbm_cut_any_bound(instance),
                     BOTH, "any", skipped if big else
                     "loads of an op's ancestors before its execute, then its descendants'",
                     status="skipped" if big else "complete"))
    if timing == "shared-noc":
        started = time.perf_counter()
        rows.append(_row("port-total", started, port_total_bound(instance), "shared-noc",
                         "any", "all port work at 1000 permille"))
        started = time.perf_counter()
        rows.append(_row("port-cut-any", started, None if big else port_cut_any_bound(instance),
                         "shared-noc", "any", skipped if big else
                         "port work of an op's ancestors before its execute, then its "
                         "descendants' executes", status="skipped" if big else "complete"))
    return rows
