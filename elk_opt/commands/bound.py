"""`elk-opt bound instance.json [--timing T]`: lower bounds on the makespan of every plan.

Each bound holds for every plan obeying R5 under the timing asked for (default shared-noc,
DESIGN.md 5b), at any pair choice, preload order, issue points and releases; the last column
says for which timings and execution orders. A bound of separate-noc holds for shared-noc too
(sharing only slows); the port bounds need the shared port.

- ideal: the paper's Ideal roofline (elk_opt.bounds), any execution order;
- hbm-cut, port-cut, port-total: the loads (and under 5b, the port work) that must precede
  an execute's start (elk_opt.cut_bounds), linear time;
- fluid: an LP over how load and execute work can overlap between execute starts, with
  the port's sharing rule under 5b (formulations.fluid_bound);
- lp: the LP relaxation of the ILP model (HiGHS), quadratic in the ops; sees SRAM;
- window: consecutive windows of ops, each relaxation bounded by CP-SAT
  (formulations.window_bound); sees SRAM.
The lp and window models are section 5's: valid under both timings, blind to the port.
Every bound but ideal and port-total holds for plans that execute in the instance's order
(every method here does). A Ctrl-C stops the bound being computed and prints (and writes)
those already found; the window bound keeps the windows it had bounded.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from elk_opt.bounds import ideal_bound
from elk_opt.cut_bounds import hbm_cut_bound, port_cut_bound, port_total_bound
from elk_opt.errors import UsageError
from elk_opt.io import load_instance, save_json
from elk_opt.problem import DEFAULT_TIMING, TIMINGS, Instance

BOTH = "separate-noc, shared-noc"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bound", help="lower bounds on the makespan (Ideal, cuts, fluid LP, LP, "
                                     "windows)", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("instance", metavar="instance.json")
    p.add_argument("--timing", choices=TIMINGS, default=DEFAULT_TIMING,
                   help="the semantics the bounds are for (default shared-noc)")
    p.add_argument("--fluid-max-ops", type=int, default=2000, metavar="N",
                   help="skip the fluid LP above this many ops (default 2000)")
    p.add_argument("--fluid-time", type=float, default=120.0, metavar="S",
                   help="time limit of the fluid LP (default 120 s)")
    p.add_argument("--window", type=int, default=12, metavar="N",
                   help="ops per window of the window bound (0: skip it; default 12)")
    p.add_argument("--window-time", type=float, default=2.0, metavar="S",
                   help="CP-SAT time per window (default 2 s)")
    p.add_argument("--lp-max-ops", type=int, default=400, metavar="N",
                   help="skip the LP relaxation above this many ops (default 400)")
    p.add_argument("--lp-time", type=float, default=120.0, metavar="S",
                   help="time limit of the LP relaxation, model building included "
                        "(default 120 s)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("-o", "--output", metavar="bounds.json", help="also write the bounds as JSON")
    p.set_defaults(func=run)


def _row(name: str, started: float, ns: int | None, timings: str, order: str,
         note: str) -> dict[str, Any]:
    return {"bound": name, "ns": ns, "wall_s": time.perf_counter() - started,
            "timings": timings, "order": order, "note": note}


def _fluid(args: argparse.Namespace, instance: Instance) -> dict[str, Any] | None:
    n = len(instance.ops)
    if n > args.fluid_max_ops:
        return None
    from formulations.fluid_bound import fluid_bound
    print(f"fluid LP of {n} ops...", file=sys.stderr)
    started = time.perf_counter()
    fb = fluid_bound(instance, args.timing, args.fluid_time, threads=args.threads)
    note = (f"{fb.columns:,} columns, {fb.rows:,} rows, {fb.classes} load classes"
            if fb.bound_ns is not None else f"not finished in {args.fluid_time:g} s")
    return _row("fluid", started, fb.bound_ns, args.timing, "instance", note)


def _lp(args: argparse.Namespace, instance: Instance) -> dict[str, Any] | None:
    n = len(instance.ops)
    if n > args.lp_max_ops:
        return None
    from formulations.ilp import lp_bound
    print(f"LP relaxation of {n} ops...", file=sys.stderr)
    started = time.perf_counter()
    value = lp_bound(instance, args.lp_time)
    return _row("lp", started, value, BOTH, "instance",
                "LP relaxation of the ILP (section 5 model)" if value is not None
                else f"not finished in {args.lp_time:g} s")


def _window(args: argparse.Namespace, instance: Instance) -> dict[str, Any] | None:
    if not args.window:
        return None
    from formulations.window_bound import window_bound
    print(f"window bound, {args.window} ops per window...", file=sys.stderr)
    wb = window_bound(instance, args.window, args.window_time, args.threads, progress=True)
    interrupted = wb.solved < wb.windows
    note = (f"interrupted: the first {wb.solved} of {wb.windows} windows" if interrupted
            else f"{wb.windows} windows, {wb.proven} solved to optimality")
    return {"bound": f"window{args.window}", "ns": wb.bound_ns, "wall_s": wb.wall_s,
            "timings": BOTH, "order": "instance", "note": note, "interrupted": interrupted}


def run(args: argparse.Namespace) -> int:
    if (args.window < 0 or args.window_time <= 0 or args.lp_time <= 0 or args.threads < 1
            or args.fluid_time <= 0 or args.fluid_max_ops < 0 or args.lp_max_ops < 0):
        raise UsageError("--window, --lp-max-ops and --fluid-max-ops must be >= 0 and "
                         "--window-time, --lp-time, --fluid-time, --threads positive")
    instance = load_instance(args.instance)
    n = len(instance.ops)
    shared = args.timing == "shared-noc"
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    rows.append(_row("ideal", started, ideal_bound(instance), BOTH, "any", "roofline"))
    started = time.perf_counter()
    rows.append(_row("hbm-cut", started, hbm_cut_bound(instance), BOTH, "instance",
                     "loads before an execute start, then the executes"))
    if shared:
        started = time.perf_counter()
        rows.append(_row("port-total", started, port_total_bound(instance), "shared-noc",
                         "any", "all port work at 1000 permille"))
        started = time.perf_counter()
        rows.append(_row("port-cut", started, port_cut_bound(instance),
                         "shared-noc", "instance",
                         "port work before an execute start, then the executes"))
    for heavy in (_fluid, _lp, _window):
        started = time.perf_counter()
        try:
            row = heavy(args, instance)
        except KeyboardInterrupt:
            rows.append(_row(heavy.__name__.strip("_"), started, None, "", "",
                             "interrupted (the rest skipped)"))
            break
        if row is not None:
            interrupted = row.pop("interrupted", False)
            rows.append(row)
            if interrupted:
                break
    best = max(rows, key=lambda r: r["ns"] if r["ns"] is not None else -1)
    print(f"{instance.name}: {n} ops, bounds for {args.timing}")
    print(f"  {'bound':<11}{'ns':>15}     {'wall':>7}    {'holds for':<26}{'order':<10}note")
    for r in rows:
        shown = f"{r['ns']:>15,} ns" if r["ns"] is not None else f"{'-':>18}"
        print(f"  {r['bound']:<11}{shown}  {r['wall_s']:7.2f} s  {r['timings']:<26}"
              f"{r['order']:<10}{r['note']}")
    print(f"  {'best':<11}{best['ns']:>15,} ns  ({best['bound']})")
    if args.output:
        save_json(args.output, {"instance": instance.name, "ops": n, "timing": args.timing,
                                "bounds": rows, "best": {"bound": best["bound"],
                                                         "ns": best["ns"]}})
    return 0
