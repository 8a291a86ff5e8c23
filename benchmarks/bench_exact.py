"""Exact models at scale: the largest instances CP-SAT and the ILP prove optimal in a time limit.

python benchmarks/bench_exact.py ladder  [--limit 60] [--plans 2,4,6] [--ops 12,24,...]
python benchmarks/bench_exact.py zoo     [--limit 60] [--layers 1,2,4,...]
python benchmarks/bench_exact.py one     --ops N --plans P --limit 600 --model cpsat|ilp
python benchmarks/bench_exact.py polish  [--limit 600]

`ladder`: synthetic instances (seed 0, tightness 0.6), ops doubling per plan count, each model
stopped at its first size not proven within the limit. `zoo`: Llama2-13B decode (batch 32,
KV 2048, default chip) with the first N layers. Every plan is checked by `verify`; the
baselines, measured in the same run, are Basic and Elk-Full (zoo) or Elk-Dyn (synthetic):
their makespans over the optimum. `polish`: full Llama2-13B decode, Elk-Full, then polish
from it, against the Ideal, LP and window bounds. Two CP-SAT workers (the machine has 2 cores).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

from elk_opt.bounds import ideal_bound
from elk_opt.io import plan_to_dict
from elk_opt.methods import solve
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions
from elk_opt.synthetic import synthetic_instance
from elk_opt.zoo import model_instance
from verify import check


def checked(plan: Plan) -> Plan:
    report = check(plan_to_dict(plan))
    if not report.valid:
        raise SystemExit(f"INVALID plan from {plan.claims.method}: {report.violations[:3]}")
    return plan


def run_exact(instance: Instance, model: str, limit: float,
              warm: str | None) -> tuple[Plan, float]:
    """The exact model's plan and its wall time (the warm-start heuristic's time included)."""
    print(f"  {instance.name}: {model} ({limit:g} s)...", file=sys.stderr, flush=True)
    t = time.perf_counter()
    plan = solve(instance, model, SolveOptions(time_limit_s=limit, threads=2, warm_start=warm))
    return checked(plan), time.perf_counter() - t


def row(instance: Instance, label: str, model: str, limit: float, baselines: tuple[str, ...],
        warm: str | None = None):
    plan, wall = run_exact(instance, model, limit, warm)
    c = plan.claims
    ratios = []
    for name in baselines:
        other = checked(solve(instance, name)).claims.makespan_ns
        ratios.append(f"{other / c.makespan_ns:.4f}")
    gap = (c.makespan_ns - c.lower_bound_ns) / c.makespan_ns if c.lower_bound_ns else None
    print(f"| {label} | {len(instance.ops)} | {model} | {warm or '-'} | {c.status} | {wall:.1f} | "
          f"{c.makespan_ns:,} | {c.lower_bound_ns:,} | "
          f"{'-' if gap is None else f'{100 * gap:.2f}%'} | {' | '.join(ratios)} |", flush=True)
    return c.status == "optimal"


def header(baselines: tuple[str, ...]) -> None:
    cols = " | ".join(f"{b}/makespan" for b in baselines)
    print(f"| instance | ops | model | warm start | status | wall s | makespan ns | bound ns "
          f"| gap | {cols} |")
    print("|" + "---|" * (9 + len(baselines)))


def ladder(args: argparse.Namespace) -> None:
    base = ("basic", "elk-dyn")
    header(base)
    for plans in (int(p) for p in args.plans.split(",")):
        for model in ("cpsat", "ilp"):
            for ops in (int(n) for n in args.ops.split(",")):
                instance = synthetic_instance(ops=ops, plans=plans, seed=0, tightness=0.6)
                if not row(instance, f"synthetic p{plans}", model, args.limit, base):
                    break


def zoo(args: argparse.Namespace) -> None:
    base = ("basic", "elk-full")
    header(base)
    for model in ("cpsat", "ilp"):
        for layers in (int(n) for n in args.layers.split(",")):
            instance = model_instance("llama2-13b", layers=layers)
            if not row(instance, f"llama2-13b {layers} layer(s)", model, args.limit, base,
                       args.warm):
                break


def one(args: argparse.Namespace) -> None:
    header(("basic",))
    if args.layers:
        instance = model_instance("llama2-13b", layers=args.layers)
    else:
        instance = synthetic_instance(ops=args.ops, plans=args.plans, seed=0, tightness=0.6)
    row(instance, instance.name, args.model, args.limit, ("basic",), args.warm)


def polish(args: argparse.Namespace) -> None:
    from formulations.ilp import lp_bound
    from formulations.window_bound import window_bound
    instance = model_instance("llama2-13b")
    t = time.perf_counter()
    full = checked(solve(instance, "elk-full"))
    full_s = time.perf_counter() - t
    t = time.perf_counter()
    polished = checked(solve(instance, "polish", SolveOptions(
        time_limit_s=args.limit, threads=2, warm_start="elk-full", warm_plan=full)))
    polish_s = time.perf_counter() - t
    t = time.perf_counter()
    ideal = ideal_bound(instance)
    lp = lp_bound(instance, 300)
    lp_s = time.perf_counter() - t
    wb = window_bound(instance, 21, 5.0, 2)
    best = max(b for b in (ideal, lp, wb.bound_ns) if b is not None)
    print(f"instance {instance.name}: {len(instance.ops)} ops")
    print("| what | ns | wall s | over best bound |")
    print("|---|---|---|---|")
    for name, ns, wall in (("Elk-Full", full.claims.makespan_ns, full_s),
                           ("polish from Elk-Full", polished.claims.makespan_ns, polish_s),
                           ("Ideal bound", ideal, 0.0), ("LP relaxation bound", lp, lp_s),
                           ("window bound (21 ops)", wb.bound_ns, wb.wall_s)):
        over = "-" if ns is None else f"{100 * (ns - best) / best:.4f}%"
        print(f"| {name} | {'-' if ns is None else f'{ns:,}'} | {wall:.1f} | {over} |")
    print(f"polish params: {polished.claims.params}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("part", choices=("ladder", "zoo", "one", "polish"))
    ap.add_argument("--limit", type=float, default=60.0)
    ap.add_argument("--plans", default="2,4,6")
    ap.add_argument("--ops", default="12,24,48,96,192,384,768")
    ap.add_argument("--layers", default="1,2,3,4,5,6,8,16,40")
    ap.add_argument("--model", default="cpsat")
    ap.add_argument("--warm", default=None, metavar="METHOD", help="warm start (zoo, one)")
    args = ap.parse_args()
    if args.part == "one":
        args.plans = int(args.plans.split(",")[0])
        args.ops = int(args.ops.split(",")[0])
        args.layers = int(args.layers.split(",")[0]) if "," not in args.layers else 0
    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, "
          f"Python {platform.python_version()}; 2 CP-SAT workers; limit {args.limit:g} s")
    {"ladder": ladder, "zoo": zoo, "one": one, "polish": polish}[args.part](args)


if __name__ == "__main__":
    main()
