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
The fluid models round load demands down to at most `limits.BOUND_CLASSES` classes here (the
MIPs fluid-milp, fluid-contiguous and fluid-whole-ns to `limits.DEFAULT_CLASSES`); each row's
params say how many. Window and layer bounds solve each distinct window once (decoder
layers repeat).
Every bound above but ideal and port-total holds for plans that execute in the instance's
order only. Asked for any order (`exec_order="free"`, R2), the report keeps to ideal and
port-total and adds the cuts over ancestors and descendants (hbm-cut-any, port-cut-any,
elk_opt.bounds.cuts), which hold for every topological order. A Ctrl-C stops the bound being
computed and keeps those already found; the window bound keeps the windows it had bounded.
Solvers load only when asked for.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

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
from elk_opt.bounds.rows import BOTH, HEAVY, MIN_SOLVER_S, Limits, report_row
from elk_opt.errors import UsageError
from elk_opt.problem import DEFAULT_TIMING, ExecOrder, Instance, Timing, is_count

BUDGET_SPENT = "skipped: the time budget was spent"


def _distinct(instance: Instance, windows: list[tuple[int, int]]) -> int:
    """How many of `windows` ([a, b) op ranges) CP-SAT solves: a repeated one is solved once."""
    from elk_opt.bounds.window import window_key

    return max(1, len({window_key(instance, a, b) for a, b in windows}))


def _capped(lim: Limits, left: float, instance: Instance) -> Limits | None:
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
    lim = Limits(timing, fluid_max_ops, fluid_time_s, fluid_sram_max_ops, fluid_milp_max_ops,
                  fluid_contiguous_max_ops, fluid_split_max_ops,
                  window, window_time_s, layers, layers_time_s, lp_max_ops, lp_time_s, threads,
                  progress, replay=replay, layers_mip_time_s=layers_mip_time_s,
                  whole_ns=whole_ns, plan_ns=plan_ns, contiguous_done=contiguous_done)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    rows.append(report_row("ideal", started, ideal_bound(instance), BOTH, "any", "roofline"))
    if exec_order == "free":
        rows += _any_order_rows(instance, timing)
        return _report(instance, timing, rows)
    started = time.perf_counter()
    rows.append(report_row("hbm-cut", started, hbm_cut_bound(instance), BOTH, "instance",
                           "loads before an execute start, then the executes"))
    if timing == "shared-noc":
        started = time.perf_counter()
        rows.append(report_row("port-total", started, port_total_bound(instance), "shared-noc",
                               "any", "all port work at 1000 permille"))
        started = time.perf_counter()
        rows.append(report_row("port-cut", started, port_cut_bound(instance), "shared-noc",
                               "instance", "port work before an execute start, then the executes"))
    deadline = None if time_budget_s is None else time.perf_counter() + time_budget_s
    replayed: list[dict[str, Any]] = []
    for heavy in HEAVY:
        started = time.perf_counter()
        capped = lim if deadline is None else _capped(lim, deadline - started, instance)
        if capped is None:
            rows.append(report_row(heavy.__name__.strip("_"), started, None, "", "",
                                   BUDGET_SPENT, status="skipped"))
            continue
        try:
            row = heavy(instance, capped)
        except KeyboardInterrupt:
            rows.append(report_row(heavy.__name__.strip("_"), started, None, "", "",
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
    rows.append(report_row("hbm-cut-any", started, None if big else hbm_cut_any_bound(instance),
                           BOTH, "any", skipped if big else
                           "loads of an op's ancestors before its execute, then its descendants'",
                           status="skipped" if big else "complete"))
    if timing == "shared-noc":
        started = time.perf_counter()
        rows.append(report_row("port-total", started, port_total_bound(instance), "shared-noc",
                               "any", "all port work at 1000 permille"))
        started = time.perf_counter()
        port_cut = None if big else port_cut_any_bound(instance)
        rows.append(report_row("port-cut-any", started, port_cut, "shared-noc", "any",
                               skipped if big else "port work of an op's ancestors before its "
                               "execute, then its descendants' executes",
                               status="skipped" if big else "complete"))
    return rows
