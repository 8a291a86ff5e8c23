"""`elk-opt compare instance.json`: every method on one instance, in one table.

Runs every heuristic (or the `--methods` given, exact ones included), checks each plan with
the independent verifier, and prints makespan, ratio to the best plan, the Ideal roofline as a
fraction of the makespan (elk_opt.bounds.ideal: a valid lower bound, so at most 100%), preload
counts, peak SRAM and solve time. The Ideal row shows the bound itself: it is not a schedule.
`-o DIR` keeps every plan, gzipped (`DIR/<method>.plan.json.gz`, re-checked by `verify DIR`),
with the rows, each naming its plan file, in `DIR/compare.json`.
"""

from __future__ import annotations

import argparse
import sys

from elk_opt.commands.flags import (
    add_cold,
    add_exec_order,
    add_timing,
    default_methods_in_order,
    output_dir,
    output_file,
    positive_float,
)
from elk_opt.comparison import compare_plans
from elk_opt.errors import UsageError
from elk_opt.files import ensure_dir, save_json
from elk_opt.io import load_instance
from elk_opt.methods import METHODS, heuristics
from elk_opt.solution import SolveOptions
from elk_opt.studies.plans import keep, packed
from elk_opt.studies.report import TIMING_NAMES


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="run every method on an instance and print one table",
                       description=__doc__)
    p.add_argument("instance", metavar="instance.json")
    p.add_argument("--methods", default=None, metavar="A,B,...",
                   help=f"methods to run (default: the heuristics, {', '.join(heuristics())})")
    p.add_argument("--time-limit", type=positive_float, default=None, metavar="S",
                   help="wall-clock limit per method that searches (seconds)")
    add_timing(p)
    add_exec_order(p, study=True)
    add_cold(p)
    p.add_argument("--json", default=None, type=output_file, metavar="rows.json",
                   help="also write the rows")
    p.add_argument("-o", "--output", default=None, type=output_dir, metavar="DIR",
                   help="keep every plan in DIR as <method>.plan.json.gz, and the rows, each "
                        "naming its plan, as DIR/compare.json")
    p.set_defaults(func=run)


def _methods(text: str | None, exec_order: str | None) -> list[str]:
    if text is None:
        chosen = default_methods_in_order(heuristics(), exec_order)
        if not chosen:
            raise UsageError(f"--exec-order {exec_order}: no heuristic solves in that order; "
                             "name methods with --methods (cpsat does)")
        return chosen
    names = [m.strip() for m in text.split(",") if m.strip()]
    for m in names:
        if m not in METHODS:
            raise UsageError(f"--methods: unknown method {m!r}; choose from {', '.join(METHODS)}")
        if METHODS[m].family == "bound":
            raise UsageError(f"--methods: {m} is a bound, always shown as the Ideal row")
    if not names:
        raise UsageError("--methods: no method named")
    return names


def run(args: argparse.Namespace) -> int:
    instance = load_instance(args.instance)
    methods = _methods(args.methods, args.exec_order)
    print(f"comparing {len(methods)} methods on {instance.name} ({len(instance.ops)} ops) "
          f"under {args.timing}...", file=sys.stderr)
    rows, plans = compare_plans(instance, methods, SolveOptions(time_limit_s=args.time_limit,
                                                                timing=args.timing,
                                                                exec_order=args.exec_order),
                                progress=True, cold=args.cold)
    print(f"{instance.name}: makespans under {TIMING_NAMES[args.timing]}")
    print(f"{'method':<10} {'makespan ns':>15} {'vs best':>8} {'ideal/ms':>9} "
          f"{'preloads':>11} {'peak SRAM B':>12} {'solve s':>8}  verify")
    for r in rows:
        if r["bound"]:
            print(f"{'ideal':<10} {r['makespan_ns']:>15,} {r['vs_best']:>8.3f} {'100.00%':>9} "
                  f"{'-':>11} {'-':>12} {r['wall_s']:>8.3f}  (lower bound)")
            continue
        counts = f"{r['mean_preload_count']:.2f}/{r['max_preload_count']}"
        print(f"{r['method']:<10} {r['makespan_ns']:>15,} {r['vs_best']:>8.3f} "
              f"{100 * r['ideal_fraction']:>8.2f}% {counts:>11} {r['peak_sram_bytes']:>12,} "
              f"{r['wall_s']:>8.3f}  {'ok' if r['valid'] else 'FAILED'}")
    if args.output:
        out = ensure_dir(args.output)
        for r in rows:
            if r["method"] in plans:
                r["plan"] = keep(out, r["method"], packed(plans[r["method"]]), folder=".")
        save_json(out / "compare.json", {"instance": instance.name, "timing": args.timing,
                                         "exec_order": args.exec_order, "rows": rows})
    if args.json:
        save_json(args.json, {"instance": instance.name, "timing": args.timing,
                              "exec_order": args.exec_order, "rows": rows})
    return 0 if all(r["valid"] is not False for r in rows) else 1
