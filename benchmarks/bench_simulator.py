"""Event simulator benchmarks: replay speed per sharing model, and the HBM-bandwidth curve.

Usage: python benchmarks/bench_simulator.py [--speed] [--curve] [--model M] [--method M]
       [--big-ops N]

--speed: the full Llama2-70B decode plan (elk-dyn) on the default chip and on the mesh preset,
  and a big synthetic plan (--big-ops ops, P<i+1> issued before E<i>, built directly), replayed
  under each sharing model (`none`: section 5, `port`: section 5b, `full`: contention); median
  of 5 replays of the lowered program, events per second, the ratio to the `none` replay of
  the same run, and the analytic evaluator under the matching timing as a baseline.
--curve: the default model rebuilt on chips whose HBM bandwidth is scaled (x0.25 .. x8), planned
  with one method, simulated with full contention on the all-to-all preset and on the mesh
  preset, against the plans' analytic (section 5b) makespan. Prints markdown tables for
  BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time

from elk_opt.evaluate import evaluate
from elk_opt.frontend.chips import DEFAULT_CHIP, load_chip
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.frontend.zoo import model_instance
from elk_opt.lower import lower
from elk_opt.methods import solve
from elk_opt.problem import Choice, Instr, Plan
from elk_opt.simulator import (
    EXACT_SHARING,
    SHARINGS,
    analytic_makespans,
    simulate,
    simulate_program,
)
from elk_opt.solution import make_plan

MESH_CHIP = "ipu-pod4-mesh"
SCALES = (0.25, 0.5, 1, 1.5, 2, 3, 4, 8)
TIMING_OF = {sharing: timing for timing, sharing in EXACT_SHARING.items()}


def big_plan(ops: int) -> Plan:
    """A synthetic decoder of `ops` ops, each op's first pair, one preload ahead."""
    instance = synthetic_instance(ops=ops, plans=3, seed=0)
    choice = [Choice(exec=op.warmup[0].exec, preload=op.warmup[0].preload)
              for op in instance.ops]
    program: list[Instr] = [("P", 0)]
    for i in range(ops):
        if i + 1 < ops:
            program.append(("P", i + 1))
        program.append(("E", i))
    return make_plan(instance, choice, program, method="one-ahead",
                     started=time.perf_counter(), timing="shared-noc")


def speed(method: str, big_ops: int, repeats: int = 5) -> None:
    print("| plan | ops | sharing | events | replay, median | events/s | vs none | "
          "evaluate, median | makespan / section 5b |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    plans = [(f"llama2-70b {method} on {chip}", solve(model_instance("llama2-70b", chip),
                                                       method))
             for chip in (DEFAULT_CHIP, MESH_CHIP)]
    plans.append((f"synthetic one-ahead on {DEFAULT_CHIP}", big_plan(big_ops)))
    for name, plan in plans:
        analytic, shared_noc = analytic_makespans(plan)
        dp = lower(plan)
        simulate_program(dp, sharing="none", analytic_ns=analytic, shared_noc_ns=shared_noc)
        base = 0.0
        for sharing in SHARINGS:
            walls, evals = [], []
            for _ in range(repeats):
                result = simulate_program(dp, sharing=sharing, analytic_ns=analytic,
                                          shared_noc_ns=shared_noc)
                walls.append(result.wall_s)
                if sharing in TIMING_OF:
                    started = time.perf_counter()
                    evaluate(plan.instance, plan.choice, plan.program, plan.release_ns,
                             timing=TIMING_OF[sharing])
                    evals.append(time.perf_counter() - started)
            wall = statistics.median(walls)
            base = base or wall
            timed = (f"{statistics.median(evals):.4f} s ({TIMING_OF[sharing]})"
                     if evals else "-")
            print(f"| {name} | {len(plan.instance.ops):,} | {sharing} | {result.events:,} | "
                  f"{wall:.3f} s | {result.events / wall:,.0f} | {wall / base:.2f}x | "
                  f"{timed} | {result.slowdown_vs_shared_noc:.3f} |", flush=True)


def curve(model: str, method: str) -> None:
    print(f"{model} decode (batch 32, KV 2048), {method} plans; makespan in us; analytic is "
          "the plans' own timing (section 5b); simulated with full contention; speedup vs x1 "
          "of the same column")
    print("| HBM | chip | analytic | speedup | simulated | speedup | slowdown | HBM util | "
          "NoC util | busiest resource |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in (DEFAULT_CHIP, MESH_CHIP):
        base = load_chip(name)
        rows = []
        for scale in SCALES:
            chip = dataclasses.replace(base, hbm_bytes_per_s=int(base.hbm_bytes_per_s * scale))
            print(f"  {name} x{scale}...", file=sys.stderr, flush=True)
            plan = solve(model_instance(model, chip), method)
            r = simulate(plan, sharing="full")
            rows.append((scale, r))
        ref = dict(rows)[1]
        for scale, r in rows:
            print(f"| x{scale:g} ({scale * base.hbm_bytes_per_s / 1e12:g} TB/s) | {name} | "
                  f"{r.analytic_makespan_ns / 1e3:,.0f} | "
                  f"{ref.analytic_makespan_ns / r.analytic_makespan_ns:.2f} | "
                  f"{r.makespan_ns / 1e3:,.0f} | {ref.makespan_ns / r.makespan_ns:.2f} | "
                  f"{r.slowdown:.3f} | {r.hbm_util:.0%} | {r.noc_util:.0%} | "
                  f"{r.bottlenecks[0][0]} {r.bottlenecks[0][1]:.0%} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speed", action="store_true")
    parser.add_argument("--curve", action="store_true")
    parser.add_argument("--model", default="llama2-13b")
    parser.add_argument("--method", default="elk-dyn")
    parser.add_argument("--big-ops", type=int, default=20_000)
    args = parser.parse_args()
    if args.speed or not args.curve:
        speed(args.method, args.big_ops)
    if args.curve or not args.speed:
        curve(args.model, args.method)


if __name__ == "__main__":
    main()
