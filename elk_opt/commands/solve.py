"""`elk-opt solve instance.json --method NAME -o plan.json`: the one entry point of methods."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from elk_opt.errors import UsageError
from elk_opt.io import load_instance, save_plan
from elk_opt.methods import METHODS, solve
from elk_opt.problem import DEFAULT_TIMING, TIMINGS
from elk_opt.solution import SolveOptions


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("solve", help="schedule an instance with a method",
                       description=f"Methods: {', '.join(METHODS)}.")
    p.add_argument("instance", metavar="instance.json")
    p.add_argument("--method", required=True, choices=sorted(METHODS), metavar="NAME",
                   help=", ".join(METHODS))
    p.add_argument("-o", "--output", required=True, metavar="plan.json")
    p.add_argument("--time-limit", type=float, default=None, metavar="S",
                   help="wall-clock limit for methods that search (seconds)")
    p.add_argument("--work-limit", type=float, default=None, metavar="U",
                   help="CP-SAT methods: a budget in deterministic work units instead of "
                        "seconds, so that a run stopped by it is repeatable (cpsat: the whole "
                        "search; polish: each window)")
    p.add_argument("--gap", type=float, default=None, help="relative gap to stop exact solvers")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timing", choices=TIMINGS, default=DEFAULT_TIMING,
                   help="the semantics to optimize and claim: shared-noc (DESIGN.md 5b, the "
                        "default) or separate-noc (section 5)")
    p.add_argument("--warm-start", default=None, metavar="METHOD",
                   help="hint an exact solver with this method's plan")
    p.add_argument("--verbose", action="store_true", help="show solver logs")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="method-specific option, VALUE read as JSON when it parses "
                        "(e.g. window=4, fifo=true, max_pending=2, solver=cbc); repeatable")
    p.set_defaults(func=run)


def parse_params(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--param must be KEY=VALUE, got {item!r}")
        try:
            out[key] = json.loads(text)
        except json.JSONDecodeError:
            out[key] = text
    return out


def run(args: argparse.Namespace) -> int:
    instance = load_instance(args.instance)
    if args.time_limit is not None and args.time_limit <= 0:
        raise UsageError(f"--time-limit must be positive, got {args.time_limit}")
    if args.work_limit is not None and args.work_limit <= 0:
        raise UsageError(f"--work-limit must be positive, got {args.work_limit}")
    options = SolveOptions(time_limit_s=args.time_limit, work_limit=args.work_limit,
                           gap=args.gap, threads=args.threads,
                           seed=args.seed, timing=args.timing, warm_start=args.warm_start,
                           verbose=args.verbose, params=parse_params(args.param))
    print(f"solving {instance.name} ({len(instance.ops)} ops) with {args.method}...",
          file=sys.stderr)
    plan = solve(instance, args.method, options)
    save_plan(args.output, plan)
    c = plan.claims
    assert c is not None
    bound = f", bound {c.lower_bound_ns:,} ns" if c.lower_bound_ns is not None else ""
    print(f"{args.method}: makespan {c.makespan_ns:,} ns ({c.status}{bound}), "
          f"{c.wall_s:.2f} s -> {args.output}")
    return 0
