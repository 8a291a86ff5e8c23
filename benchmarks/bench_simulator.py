"""Event simulator benchmarks: replay speed on Llama2-70B, and the HBM-bandwidth curve.

Usage: python benchmarks/bench_simulator.py [--speed] [--curve] [--model M] [--method M]

--speed: the full Llama2-70B decode plan (elk-dyn) on the default chip and on the mesh preset,
  simulated with contention; median of 5 runs, events per second, and the section-5 evaluator on
  the same plan as the baseline.
--curve: the default model rebuilt on chips whose HBM bandwidth is scaled (x0.25 .. x8), planned
  with one method, simulated without and with contention on the all-to-all preset and on the
  mesh preset. Prints markdown tables for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time

from elk_opt.chips import DEFAULT_CHIP, load_chip
from elk_opt.evaluate import evaluate_plan
from elk_opt.methods import solve
from elk_opt.simulator import simulate
from elk_opt.zoo import model_instance

MESH_CHIP = "ipu-pod4-mesh"
SCALES = (0.25, 0.5, 1, 1.5, 2, 3, 4, 8)


def speed(method: str, repeats: int = 5) -> None:
    print("| chip | ops | events | first simulate (builds the network) | simulate, median | "
          "events/s | evaluate, median | ratio | slowdown vs analytic |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for chip in (DEFAULT_CHIP, MESH_CHIP):
        instance = model_instance("llama2-70b", chip)
        plan = solve(instance, method)
        walls, evals = [], []
        for _ in range(repeats):
            started = time.perf_counter()
            result = simulate(plan, contention=True)
            walls.append(time.perf_counter() - started)
            started = time.perf_counter()
            evaluate_plan(plan)
            evals.append(time.perf_counter() - started)
        wall, base = statistics.median(walls), statistics.median(evals)
        print(f"| {chip} | {len(instance.ops):,} | {result.events:,} | {walls[0]:.3f} s | "
              f"{wall:.3f} s | "
              f"{result.events / wall:,.0f} | {base:.4f} s | {wall / base:,.0f}x | "
              f"{result.slowdown:.3f} |", flush=True)


def curve(model: str, method: str) -> None:
    print(f"{model} decode (batch 32, KV 2048), {method} plans; makespan in us; speedup vs x1 "
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
            r = simulate(plan, contention=True)
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
    args = parser.parse_args()
    if args.speed or not args.curve:
        speed(args.method)
    if args.curve or not args.speed:
        curve(args.model, args.method)


if __name__ == "__main__":
    main()
