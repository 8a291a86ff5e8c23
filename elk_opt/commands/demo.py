"""`elk-opt demo`: the main job end to end on the embedded default instance.

Builds the default instance, solves it with every heuristic, checks every plan with the
independent verifier and prints one table. With `-o DIR` it also writes the instance and plans.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from elk_opt.errors import UsageError
from elk_opt.evaluate import evaluate_plan
from elk_opt.io import plan_to_dict, save_instance, save_plan
from elk_opt.methods import heuristics, solve
from elk_opt.synthetic import synthetic_instance
from verify import check

DEFAULT = {"ops": 96, "plans": 6, "seed": 0, "tightness": 0.6}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the main job on the embedded default instance",
                       description=__doc__)
    p.add_argument("-o", "--output", metavar="DIR", help="also write instance and plans here")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    out = Path(args.output) if args.output else None
    if out is not None:
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UsageError(f"{out}: cannot create directory: {e.strerror}") from None
    instance = synthetic_instance(**DEFAULT)
    print(f"instance {instance.name}: {len(instance.ops)} ops on {instance.chip.name} "
          f"({instance.chip.cores} cores, SRAM {instance.chip.sram_bytes:,} B/core)")
    if out is not None:
        save_instance(out / "instance.json", instance)
    rows = []
    for method in heuristics():
        print(f"  solving with {method}...", file=sys.stderr)
        plan = solve(instance, method)
        report = check(plan_to_dict(plan))
        schedule = evaluate_plan(plan)
        assert plan.claims is not None
        rows.append((method, plan.claims.makespan_ns, schedule, report.valid, plan.claims.wall_s))
        if out is not None:
            save_plan(out / f"{method}.plan.json", plan)
    best = min(r[1] for r in rows)
    print(f"\n{'method':<10} {'makespan ns':>14} {'vs best':>8} {'mean preloads':>14} "
          f"{'peak SRAM B':>12} {'solve s':>8}  verify")
    for method, makespan, schedule, valid, wall in rows:
        mean = sum(schedule.preload_count) / len(schedule.preload_count)
        print(f"{method:<10} {makespan:>14,} {makespan / best:>8.3f} {mean:>14.2f} "
              f"{schedule.peak_sram_bytes:>12,} {wall:>8.3f}  {'ok' if valid else 'FAILED'}")
    if out is not None:
        print(f"\nwrote instance.json and one plan per method to {out}/")
    return 0 if all(r[3] for r in rows) else 1
