"""`elk-opt gap --suite small -o DIR`: the optimality-gap study."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from elk_opt.commands.flags import (
    add_cold,
    add_exec_order,
    add_executor,
    add_quiet,
    add_timing,
    default_methods_in_order,
    output_dir,
    positive_float,
)
from elk_opt.errors import UsageError
from elk_opt.methods import METHODS, solving_in
from elk_opt.problem import Timing
from elk_opt.studies.baseline import DEFAULT_PATH, read_baseline, write_baseline
from elk_opt.studies.executors import EXECUTORS
from elk_opt.studies.gap import run_study
from elk_opt.studies.report import gap_table, write_report
from elk_opt.studies.suites import BUILTIN_SUITES, load_suite


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gap", help="optimality-gap study over a suite of instances",
                       description="Run every heuristic and exact method on every instance of a "
                                   "suite, verify and simulate every plan, and write gap.csv, "
                                   "summary.md and plots; keep every plan, gzipped, under "
                                   "DIR/plans/ (`verify DIR` re-checks them). Re-running "
                                   "resumes.")
    p.add_argument("--suite", default="small",
                   help=f"built-in suite ({', '.join(BUILTIN_SUITES)}) or a suite TOML file")
    p.add_argument("-o", "--output", required=True, type=output_dir, metavar="DIR")
    p.add_argument("--methods", default=None,
                   help="comma-separated methods (default: every heuristic and exact method; "
                        "under shared-noc without ilp, which rarely proves there)")
    p.add_argument("--time-limit", type=positive_float, default=20.0, metavar="S",
                   help="per exact solve (default 20); resuming with a longer one re-runs the "
                        "cells that ran out of time")
    add_timing(p)
    add_exec_order(p, study=True)
    add_cold(p)
    add_executor(p, EXECUTORS)
    add_quiet(p)
    p.add_argument("--update-baseline", action="store_true",
                   help="record every heuristic's makespan and the proven optima of this suite "
                        "as the regression baseline under --timing (other timings' records "
                        "are kept)")
    p.add_argument("--baseline", type=Path, default=DEFAULT_PATH, metavar="PATH",
                   help=f"baseline file for --update-baseline (default {DEFAULT_PATH})")
    p.set_defaults(func=run)


def default_methods(timing: Timing) -> list[str]:
    """Every heuristic and exact method that studies run by default under `timing`."""
    return [m for m, info in METHODS.items()
            if info.family in ("heuristic", "exact") and timing in info.default_timings]


def run(args: argparse.Namespace) -> int:
    if args.update_baseline:  # the records are of the paper's problem: the instance's order
        if args.exec_order == "free":
            raise UsageError("--update-baseline records plans in the instance's execution "
                             "order; drop --exec-order free")
        args.exec_order = "instance"
        if args.baseline.exists():  # a baseline it cannot read fails now, not after the study
            read_baseline(args.baseline)
    specs = load_suite(args.suite)
    if args.methods:
        methods = solving_in(args.methods.split(","), args.exec_order, named=True)
    else:
        methods = default_methods_in_order(default_methods(args.timing), args.exec_order)
    if not methods:
        raise UsageError(f"--exec-order {args.exec_order}: no method to run; name some with "
                         "--methods")
    out = Path(args.output)
    cells = run_study(specs, methods, out, time_limit_s=args.time_limit, timing=args.timing,
                      executor=args.executor, workers=args.workers, address=args.address,
                      progress=not args.quiet, cold=args.cold, exec_order=args.exec_order)
    rows = write_report(cells, out)
    if args.update_baseline:
        dropped = write_baseline(specs, cells, args.baseline, args.timing)
        print(f"baseline of {len(specs)} instances under {args.timing} -> {args.baseline}")
        if dropped:
            print(f"{len(dropped)} instances changed, so their records under other timings "
                  f"were dropped: {', '.join(dropped)}", file=sys.stderr)
    order = f", {args.exec_order} execution order" if args.exec_order else ""
    print(f"{len(specs)} instances x {len(methods)} methods under {args.timing}{order} -> "
          f"{out}/gap.csv, summary.md, gap_by_method.png, gap_by_size.png, plans/")
    print(f"{'method':<10} {'median gap':>11} {'worst gap':>10} {'proven':>7}")
    for method, _n, proven, median, worst, _errors in gap_table(rows):
        med = "-" if median is None else f"{100 * median:.2f}%"
        wst = "-" if worst is None else f"{100 * worst:.2f}%"
        print(f"{method:<10} {med:>11} {wst:>10} {proven:>7}")
    return 0
