"""`elk-opt bound instance.json`: lower bounds on the makespan of every plan, at any scale.

- ideal: the paper's Ideal roofline (elk_opt.bounds), instant, valid for every plan;
- lp: the LP relaxation of the ILP model (HiGHS), quadratic in the ops;
- window: consecutive windows of ops, each relaxation bounded by CP-SAT
  (formulations.window_bound); sees SRAM sharing, which the other two ignore.
The LP and window bounds hold for plans that execute in the instance's order (the exact
models' search space); a plan executing in another topological order is bounded by Ideal only.
"""

from __future__ import annotations

import argparse

from elk_opt.commands.flags import (
    nonnegative_int,
    output_file,
    positive_float,
    positive_int,
)
from elk_opt.io import load_instance, save_json
from elk_opt.lower_bounds import lower_bounds


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bound", help="lower bounds on the makespan (Ideal, LP, windows)",
                       description=__doc__)
    p.add_argument("instance", metavar="instance.json")
    p.add_argument("--window", type=nonnegative_int, default=12, metavar="N",
                   help="ops per window of the window bound (0: skip it; default 12)")
    p.add_argument("--window-time", type=positive_float, default=2.0, metavar="S",
                   help="CP-SAT time per window (default 2 s)")
    p.add_argument("--lp-max-ops", type=nonnegative_int, default=400, metavar="N",
                   help="skip the LP relaxation above this many ops (default 400)")
    p.add_argument("--lp-time", type=positive_float, default=120.0, metavar="S",
                   help="time limit of the LP relaxation (default 120 s)")
    p.add_argument("--threads", type=positive_int, default=2)
    p.add_argument("-o", "--output", type=output_file, metavar="bounds.json",
                   help="also write the bounds as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    instance = load_instance(args.instance)
    n = len(instance.ops)
    report = lower_bounds(instance, window=args.window, window_time_s=args.window_time,
                          lp_max_ops=args.lp_max_ops, lp_time_s=args.lp_time,
                          threads=args.threads, progress=True)
    rows, best = report["bounds"], report["best"]
    print(f"{instance.name}: {n} ops")
    for r in rows:
        shown = f"{r['ns']:>15,} ns" if r["ns"] is not None else f"{'-':>18}"
        print(f"  {r['bound']:<10}{shown}  {r['wall_s']:7.2f} s  {r['note']}")
    print(f"  {'best':<10}{best['ns']:>15,} ns  ({best['bound']})")
    if args.output:
        save_json(args.output, report)
    return 0
