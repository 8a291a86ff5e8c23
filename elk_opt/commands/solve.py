"""`elk-opt solve instance.json --method NAME -o plan.json`: the one entry point of methods."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from elk_opt.certification.certificate import read_plan_or_certificate
from elk_opt.commands.flags import (
    add_exec_order,
    add_quiet,
    add_timing,
    nonnegative_int,
    output_file,
    positive_float,
    thread_count,
    unit_fraction,
)
from elk_opt.errors import UsageError
from elk_opt.files import STDOUT
from elk_opt.interrupts import sigint_stops, stop_requested
from elk_opt.io import load_instance, save_plan
from elk_opt.methods import METHODS, solve, with_exec_order, with_warm_plan
from elk_opt.problem import Claims, Instance
from elk_opt.solution import SolveOptions, warm_start_from


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("solve", help="schedule an instance with a method",
                       description=f"Methods: {', '.join(METHODS)}.")
    p.add_argument("instance", metavar="instance.json")
    p.add_argument("--method", required=True, choices=sorted(METHODS), metavar="NAME",
                   help=", ".join(METHODS))
    p.add_argument("-o", "--output", type=output_file, metavar="plan.json",
                   help="the plan (required unless --export is given)")
    p.add_argument("--export", type=output_file, default=None, metavar="FILE",
                   help="ilp: FILE.mps or FILE.lp; cpsat: FILE.pb.txt (text) or other "
                        "(binary): write the model the method would solve, warm start "
                        "included, with the sidecar FILE.json for import-solution; then "
                        "solve only if -o is given too")
    p.add_argument("--time-limit", type=positive_float, default=None, metavar="S",
                   help="wall-clock limit for methods that search (seconds)")
    p.add_argument("--work-limit", type=positive_float, default=None, metavar="U",
                   help="CP-SAT methods: a budget in deterministic work units instead of "
                        "seconds, so that a run stopped by it is repeatable (cpsat: the whole "
                        "search; polish: each window)")
    p.add_argument("--gap", type=unit_fraction, default=None,
                   help="relative gap in [0, 1] at which exact solvers stop")
    p.add_argument("--threads", type=thread_count, default=None)
    p.add_argument("--seed", type=nonnegative_int, default=0)
    add_timing(p)
    add_exec_order(p)
    p.add_argument("--warm-start", default=None, metavar="METHOD|PLAN",
                   help="hint an exact solver with this method's plan, or start it from a "
                        "plan file (a plan or a certificate of this instance; polish "
                        "improves it)")
    p.add_argument("--verbose", action="store_true", help="show solver logs")
    add_quiet(p)
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="method-specific option, VALUE read as JSON when it parses "
                        "(e.g. window=4, fifo=true, max_pending=2; ilp: solver=highs|cbc|any "
                        "other PuLP solver installed); repeatable")
    p.set_defaults(func=run)


def parse_params(items: list[str]) -> dict[str, Any]:
    """KEY=VALUE pairs, each VALUE read as JSON when it parses (NaN and Infinity refused)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--param must be KEY=VALUE, got {item!r}")
        try:
            out[key] = json.loads(text, parse_constant=_not_finite(item))
        except json.JSONDecodeError:
            out[key] = text
        except (RecursionError, ValueError):  # nesting or an integer too long for Python
            raise UsageError(f"--param {key}: value nested too deeply or with a number too "
                             "long to read") from None
    return out


def _not_finite(item: str) -> Callable[[str], Any]:
    def refuse(_constant: str) -> Any:
        raise UsageError(f"--param {item}: must be a finite number")
    return refuse


def run(args: argparse.Namespace) -> int:
    if args.output is None and args.export is None:
        raise UsageError("give -o plan.json, --export FILE, or both")
    if args.export == STDOUT:
        raise UsageError("--export writes a model and its sidecar: name a file, not -")
    if args.export is not None:
        from formulations.export import model_format

        model_format(args.method, args.export)
        if args.exec_order == "free":  # its solution files carry no execution order
            raise UsageError("--export writes models in the instance's execution order: "
                             "leave out --exec-order free")
    with_exec_order(args.method, SolveOptions(exec_order=args.exec_order))  # refused: say so now
    instance = load_instance(args.instance)
    warm = _warm_start(args.warm_start, instance, args.instance)
    options = SolveOptions(time_limit_s=args.time_limit, work_limit=args.work_limit,
                           gap=args.gap, threads=args.threads,
                           seed=args.seed, timing=args.timing, exec_order=args.exec_order,
                           **warm,
                           verbose=args.verbose, progress=not args.quiet,
                           params=parse_params(args.param))
    if not args.quiet:
        print(f"solving {instance.name} ({len(instance.ops)} ops) with {args.method}...",
              file=sys.stderr)
    with sigint_stops():  # a Ctrl-C ends the search: its best plan so far is written
        if args.export is not None:
            from formulations.export import export_model

            options = with_warm_plan(instance, args.method, options)
            done = export_model(instance, args.method, options, args.export)
            start = f", warm start {done.start}" if done.start is not None else ""
            print(f"{args.method}: model of {done.variables:,} variables and "
                  f"{done.constraints:,} constraints -> {done.model} (sidecar "
                  f"{done.sidecar}{start})")
            if args.output is None:
                return 0
        plan = solve(instance, args.method, options)
        stopped = stop_requested()
    save_plan(args.output, plan)
    assert plan.claims is not None
    print(f"{args.method}: {claimed(plan.claims)}, {plan.claims.wall_s:.2f} s"
          f"{' (interrupted: the best plan so far)' if stopped else ''} -> {args.output}")
    return 0


def claimed(c: Claims) -> str:
    """A plan's claims in the words every command that writes a plan prints them."""
    bound = f", bound {c.lower_bound_ns:,} ns" if c.lower_bound_ns is not None else ""
    return f"makespan {c.makespan_ns:,} ns ({c.status}{bound})"


def _warm_start(value: str | None, instance: Instance, instance_path: str) -> dict[str, Any]:
    """`--warm-start` as `SolveOptions` fields: a method's name, or a plan (or certificate)
    file of this instance."""
    if value is None or value in METHODS:
        return {"warm_start": value}
    if not Path(value).exists():
        raise UsageError(f"--warm-start {value!r}: neither a method ({', '.join(METHODS)}) "
                         f"nor a plan file")
    plan, _certificate = read_plan_or_certificate(value)
    if plan.instance != instance:
        raise UsageError(f"--warm-start {value}: a plan of instance {plan.instance.name!r}, "
                         f"not of {instance_path} ({instance.name!r})")
    return warm_start_from(plan)
