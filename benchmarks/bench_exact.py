"""Exact models at scale: the largest instances CP-SAT and the ILP prove optimal in a time limit.

python benchmarks/bench_exact.py ladder  [--limit 60] [--plans 2,4,6] [--ops 12,24,...]
python benchmarks/bench_exact.py zoo     [--limit 60] [--layers 1,2,4,...]
python benchmarks/bench_exact.py one     --ops N --plans P --limit 600 --model cpsat|ilp
python benchmarks/bench_exact.py polish  [--limit 600]
python benchmarks/bench_exact.py calibration [--limit 600]   (always section 5b and 5)
python benchmarks/bench_exact.py suite   [--suite small] [--limit 20] [--threads 1] [--warm M]

`--timing shared-noc` runs every part under section 5b (default: separate-noc, section 5, as
the tables recorded before 5b). `calibration`: the Elk artifact's Llama2-13B layer
(docs/calibration.md), every heuristic under both timings, CP-SAT's section-5 optimum,
and CP-SAT under 5b cold and warm-started from Static, then polish. `suite`: CP-SAT alone on
every instance of a gap-study suite, as the gap study runs it (one thread per solve), and how
many optima it proves; wall times include the warm start's heuristic.

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
from dataclasses import replace
from pathlib import Path

from elk_opt.bounds.ideal import ideal_bound
from elk_opt.evaluate import evaluate_plan, fits_memory
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.frontend.zoo import model_instance
from elk_opt.io import load_instance, plan_to_dict
from elk_opt.methods import heuristics, solve
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions
from verify import check

CALIBRATION = str(Path(__file__).resolve().parent.parent / "elk_opt" / "frontend" / "cost"
                  / "data" / "elk-artifact-llama2-13b-b32-kv2048-layer.json")
TIMING = "separate-noc"  # set from --timing


def checked(plan: Plan) -> Plan:
    """`verify` for section-5 plans; under 5b the evaluator (verify has no 5b yet): the claim
    is the replayed makespan, R5 holds, and an optimal claim has its bound equal."""
    if plan.timing == "separate-noc":
        report = check(plan_to_dict(plan))
        if not report.valid:
            raise SystemExit(f"INVALID plan from {plan.claims.method}: {report.violations[:3]}")
        return plan
    schedule = evaluate_plan(plan)
    c = plan.claims
    if (c.makespan_ns != schedule.makespan_ns or not fits_memory(plan.instance, schedule)
            or (c.status == "optimal") != (c.lower_bound_ns == c.makespan_ns)):
        raise SystemExit(f"INVALID 5b plan from {c.method}: {c}")
    return plan


def run_exact(instance: Instance, model: str, limit: float,
              warm: str | None) -> tuple[Plan, float]:
    """The exact model's plan and its wall time (the warm-start heuristic's time included)."""
    print(f"  {instance.name}: {model} ({limit:g} s)...", file=sys.stderr, flush=True)
    t = time.perf_counter()
    plan = solve(instance, model, SolveOptions(time_limit_s=limit, threads=2, warm_start=warm,
                                               timing=TIMING))
    return checked(plan), time.perf_counter() - t


def row(instance: Instance, label: str, model: str, limit: float, baselines: tuple[str, ...],
        warm: str | None = None):
    plan, wall = run_exact(instance, model, limit, warm)
    c = plan.claims
    ratios = []
    for name in baselines:
        other = checked(solve(instance, name, SolveOptions(timing=TIMING))).claims.makespan_ns
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
    from elk_opt.bounds.window import window_bound
    from formulations.ilp import lp_bound
    instance = model_instance("llama2-13b")
    t = time.perf_counter()
    full = checked(solve(instance, "elk-full", SolveOptions(timing=TIMING)))
    full_s = time.perf_counter() - t
    t = time.perf_counter()
    polished = checked(solve(instance, "polish", SolveOptions(
        time_limit_s=args.limit, threads=2, warm_start="elk-full", warm_plan=full,
        timing=TIMING)))
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


def calibration(args: argparse.Namespace) -> None:
    instance = load_instance(CALIBRATION)
    print(f"instance {instance.name}: {len(instance.ops)} ops; Ideal bound "
          f"{ideal_bound(instance):,} ns")
    print("| method | timing | status | makespan ns | bound ns | wall s | params |")
    print("|---|---|---|---|---|---|---|")

    def show(plan: Plan, wall: float, note: str = "") -> None:
        c = checked(plan).claims
        print(f"| {c.method}{note} | {plan.timing} | {c.status} | {c.makespan_ns:,} | "
              f"{'-' if c.lower_bound_ns is None else f'{c.lower_bound_ns:,}'} | {wall:.1f} | "
              f"{ {k: v for k, v in c.params.items() if k in ('solver_status', 'warm_start')} }"
              " |", flush=True)

    for timing in ("separate-noc", "shared-noc"):
        for name in heuristics():
            t = time.perf_counter()
            plan = solve(instance, name, SolveOptions(timing=timing))
            show(plan, time.perf_counter() - t)
    t = time.perf_counter()
    five = solve(instance, "cpsat", SolveOptions(timing="separate-noc", threads=2,
                                                 time_limit_s=args.limit))
    show(five, time.perf_counter() - t)
    print(f"the section-5 optimum's plan under 5b: "
          f"{evaluate_plan(replace(five, timing='shared-noc')).makespan_ns:,} ns")
    for warm in (None, "static"):
        t = time.perf_counter()
        plan = solve(instance, "cpsat", SolveOptions(timing="shared-noc", threads=2,
                                                     time_limit_s=args.limit, warm_start=warm))
        show(plan, time.perf_counter() - t, "" if warm is None else f" (warm {warm})")
    t = time.perf_counter()
    plan = solve(instance, "polish", SolveOptions(timing="shared-noc", threads=2,
                                                  time_limit_s=min(args.limit, 120.0),
                                                  warm_start="static"))
    show(plan, time.perf_counter() - t, " (from static)")


def suite(args: argparse.Namespace) -> None:
    from elk_opt.studies.suites import load_suite
    specs = load_suite(args.suite)
    print("| instance | ops | status | makespan ns | bound ns | gap | wall s |")
    print("|---|---|---|---|---|---|---|")
    proven = 0
    for spec in specs:
        instance = spec.build()
        t = time.perf_counter()
        plan = checked(solve(instance, "cpsat", SolveOptions(
            time_limit_s=args.limit, threads=args.threads, warm_start=args.warm,
            timing=TIMING)))
        c = plan.claims
        proven += c.status == "optimal"
        gap = (c.makespan_ns - c.lower_bound_ns) / c.makespan_ns
        print(f"| {spec.key} | {len(instance.ops)} | {c.status} | {c.makespan_ns:,} | "
              f"{c.lower_bound_ns:,} | {100 * gap:.2f}% | {time.perf_counter() - t:.1f} |",
              flush=True)
    print(f"proven optimal: {proven} of {len(specs)}")


def main() -> None:
    global TIMING
    ap = argparse.ArgumentParser()
    ap.add_argument("part", choices=("ladder", "zoo", "one", "polish", "calibration", "suite"))
    ap.add_argument("--suite", default="small")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--timing", choices=("separate-noc", "shared-noc"), default="separate-noc")
    ap.add_argument("--limit", type=float, default=60.0)
    ap.add_argument("--plans", default="2,4,6")
    ap.add_argument("--ops", default="12,24,48,96,192,384,768")
    ap.add_argument("--layers", default="1,2,3,4,5,6,8,16,40")
    ap.add_argument("--model", default="cpsat")
    ap.add_argument("--warm", default=None, metavar="METHOD",
                    help="warm start (zoo, one, suite)")
    args = ap.parse_args()
    TIMING = args.timing
    if args.part == "one":
        args.plans = int(args.plans.split(",")[0])
        args.ops = int(args.ops.split(",")[0])
        args.layers = int(args.layers.split(",")[0]) if "," not in args.layers else 0
    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, "
          f"Python {platform.python_version()}; "
          f"{args.threads if args.part == 'suite' else 2} CP-SAT workers; limit {args.limit:g} s; "
          f"timing {TIMING}")
    {"ladder": ladder, "zoo": zoo, "one": one, "polish": polish,
     "calibration": calibration, "suite": suite}[args.part](args)


if __name__ == "__main__":
    main()
