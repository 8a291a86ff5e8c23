"""`elk-opt certify INSTANCE|PLAN|CERT -o cert.json`: the best plan and lower bound one budget
buys, as an `elk-certificate/1`; `elk-opt certify --check cert.json` re-checks one.

Given an instance, the certified plan is the best one found (heuristics, then CP-SAT and the
LNS polish from the best so far) and the bound the best of every bound `elk-opt bound` computes
(and CP-SAT's own, which covers the instance's execution order only). Given a plan (from any
tool), that plan is certified; a faster one found on the way goes in `better_plan`. Without
--timing a plan keeps its own timing (a plan file without one is separate-noc) and an instance
gets shared-noc. Given a certificate, its search goes on for another budget from its plan and
bounds (the heuristics are not run again), and the new certificate is never worse than it (a
certificate of a given plan keeps certifying that plan). `--start PLAN` (repeatable) offers a
plan of the same instance from any tool (or a certificate's plan) as one more start: it must
pass `verify`, competes with the plans the search finds, and CP-SAT and polish may start from
it; the certificate's phases name it. The search stops when a bound meets the best plan or the
time limit passes.

Exit codes: 0 certified (--check: valid); 1 the given plan breaks the rules (--check: the
certificate is wrong, each problem on one line); 2 unusable input or flags (an unreadable file,
a time limit of zero or less, a plan or certificate whose timing is not --timing, a
certificate that does not hold), nothing written; 130 on
SIGINT, 143 on SIGTERM: the best certificate found so far is written to -o (if the search had
a plan, which it has from its first second) and the message says so.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from elk_opt import interrupts
from elk_opt.commands.flags import add_quiet, output_file, positive_float, positive_int
from elk_opt.errors import InputError, UsageError
from elk_opt.files import STDOUT, save_json
from elk_opt.interrupts import stop_signals_held
from elk_opt.io import INSTANCE_FORMAT, PLAN_FORMAT, instance_from_dict, plan_from_dict
from elk_opt.json_input import read_json
from elk_opt.problem import TIMINGS, Instance, Plan

DEFAULT_MAX_RECOMPUTE_S = 30.0


def register(sub: argparse._SubParsersAction) -> None:
    from elk_opt.certification.run import DEFAULT_TIME_LIMIT_S

    p = sub.add_parser("certify", help="a plan and a lower bound as one checkable certificate",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input", nargs="?", metavar="INSTANCE.json|PLAN.json|CERT.json",
                   help="an elk-instance/1 or elk-plan/1 file, or an elk-certificate/1 to "
                        "continue")
    p.add_argument("-o", "--output", type=output_file, metavar="cert.json",
                   help="the certificate (required unless --check)")
    p.add_argument("--timing", choices=TIMINGS, default=None,
                   help="the timing to certify under (default: a plan's own, else shared-noc); "
                        "a plan with another timing is refused")
    p.add_argument("--time-limit", type=positive_float, default=DEFAULT_TIME_LIMIT_S,
                   metavar="S", help=f"wall-clock budget of the whole search, seconds "
                                     f"(default {DEFAULT_TIME_LIMIT_S:g})")
    p.add_argument("--threads", type=positive_int, default=2,
                   help="solver threads (default 2)")
    p.add_argument("--start", action="append", default=[], metavar="PLAN.json",
                   help="a plan of the same instance (or a certificate holding one) to start "
                        "from as well; repeatable")
    p.add_argument("--check", metavar="cert.json", default=None,
                   help="re-check a certificate instead: verify its plan, recompute its "
                        "makespan, gap and bounds")
    p.add_argument("--max-recompute-s", type=positive_float, default=DEFAULT_MAX_RECOMPUTE_S,
                   metavar="S", help="--check: recompute the bounds that took at most S seconds "
                                     f"to find (default {DEFAULT_MAX_RECOMPUTE_S:g})")
    add_quiet(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.check is not None:
        if args.input is not None or args.output is not None or args.start:
            raise UsageError("--check takes the certificate alone (no input file, no -o, no "
                             "--start)")
        return _check(args.check, args.max_recompute_s, not args.quiet)
    if args.input is None or args.output is None:
        raise UsageError("give INSTANCE.json, PLAN.json or CERT.json and -o cert.json (or --check "
                         "cert.json)")
    return _certify(args)


def read_source(path: str) -> Instance | Plan | dict[str, Any]:
    """An instance, a plan, or a certificate (its parsed document), told apart by `format`."""
    from elk_opt.certification.certificate import FORMAT as CERTIFICATE_FORMAT

    raw = read_json(path)
    fmt = raw.get("format") if isinstance(raw, dict) else None
    if fmt == PLAN_FORMAT:
        return plan_from_dict(raw, path)
    if fmt == INSTANCE_FORMAT:
        return instance_from_dict(raw, path)
    if fmt == CERTIFICATE_FORMAT:
        return raw
    shown = repr(fmt) if isinstance(fmt, str) else "no format" if fmt is None else "not a string"
    raise InputError(f"{path}: format: must be {INSTANCE_FORMAT!r}, {PLAN_FORMAT!r} or "
                     f"{CERTIFICATE_FORMAT!r}, got {shown}")


def _certify(args: argparse.Namespace) -> int:
    from elk_opt.certification.certificate import read_plan_or_certificate
    from elk_opt.certification.run import (
        PlanBreaksRules,
        document,
        offer_starts,
        prepare,
        prepare_continued,
    )
    from elk_opt.certification.search import search

    source = read_source(args.input)
    starts = [(path, read_plan_or_certificate(path)[0]) for path in args.start]
    try:
        if isinstance(source, dict):
            instance, found = prepare_continued(source, timing=args.timing,
                                                time_limit_s=args.time_limit,
                                                threads=args.threads, name=args.input)
        else:
            instance, found = prepare(source, timing=args.timing, time_limit_s=args.time_limit,
                                      threads=args.threads, name=args.input)
        offer_starts(instance, found, starts)
    except PlanBreaksRules as e:
        print(f"elk-opt certify: {e}", file=sys.stderr)
        for line in e.violations:
            print(f"  {line}", file=sys.stderr)
        return 1
    progress = not args.quiet
    if progress:
        what = "continuing " + args.input + " for " if found.continued else "certifying "
        print(f"{what}{instance.name} ({len(instance.ops)} ops) under {found.timing}, "
              f"within {args.time_limit:g} s...", file=sys.stderr)
    try:
        search(instance, found, progress=progress)
    except (KeyboardInterrupt, interrupts.Terminated) as e:
        if found.given is None and found.best is None:
            raise
        found.stopped = f"interrupted ({interrupts.signal_name(e)})"
        with stop_signals_held():
            save_json(args.output, document(found))
        where = "on standard output" if args.output == STDOUT else f"in {args.output}"
        e.add_note(f"the best certificate so far is {where}")
        raise
    doc = document(found)
    save_json(args.output, doc)
    print(_summary(doc) + f", {found.elapsed():.1f} s ({found.stopped}) -> {args.output}")
    return 0


def _summary(doc: dict[str, Any]) -> str:
    claims = doc["plan"].get("claims") or {}
    method = claims.get("method", "the given plan")
    g = doc["gap"]
    shown = "undefined (bound 0)" if g is None else f"{g:.3%}"
    text = (f"makespan {doc['makespan_ns']:,} ns ({method}), lower bound "
            f"{doc['lower_bound_ns']:,} ns ({doc.get('best_bound', '?')}, "
            f"{doc.get('exec_order', '?')} execution order), gap {shown}")
    better = doc.get("better_plan")
    if better is not None:
        text += f"; a better plan: {better['makespan_ns']:,} ns ({better['method']})"
    return text


def _check(path: str, max_recompute_s: float, progress: bool) -> int:
    from elk_opt.certification.check import check

    doc = read_json(path)
    checked = check(doc, path, max_recompute_s=max_recompute_s, progress=progress)
    if checked.problems:
        print(f"{path}: INVALID: {len(checked.problems)} problem(s)")
        for line in checked.problems:
            print(f"  {line}")
        return 1
    skipped = f"; not recomputed: {', '.join(checked.not_recomputed)}" \
        if checked.not_recomputed else ""
    doubts = f"; unconfirmed: {'; '.join(checked.unconfirmed)}" if checked.unconfirmed else ""
    print(f"{path}: valid: {_summary(doc)}; {len(checked.recomputed)} bound(s) recomputed"
          f"{skipped}{doubts}")
    return 0
