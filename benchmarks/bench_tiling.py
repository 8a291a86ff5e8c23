"""Slices tiled: CP-SAT on a few layers of a decoder, its plan repeated onto the whole model.

For each configuration (a whole zoo model, default chip, bsp occupancy, shared-noc): Elk-Full
on the whole model (the baseline, same run), the fluid LP (the bound the grid's b16 and b32
rows stop at), then what `certify`'s slice phase does (elk_opt.certification.slices): Elk-Full
on slices of the first 3, 4, 5, 6 and 8 layers and the tail (formulations.lns_tiling), each
plan tiled onto the whole model (the best repeat and release choice that obeys R5), and
CP-SAT within `--time-limit`, one thread, from the Elk-Full plan that tiled best, tiled too.
Optional `--plans CERT.json...`: the best plan of a certificate of the same instance (matched
by name), for comparison.

    PYTHONPATH=.:benchmarks python benchmarks/bench_tiling.py [--configs llama2-13b:16:4096,...]
        [--cost-model elk-paper] [--time-limit 150] [--plans CERT.json ...]
"""

from __future__ import annotations

import argparse
import platform
import time
from dataclasses import replace

from bench_contiguous import best_plans
from bench_fluid_milp import whole_models

from elk_opt.bounds.fluid import fluid_bound
from elk_opt.certification.slices import SLICE_SIZES
from elk_opt.evaluate import evaluate_plan
from elk_opt.methods import solve
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions
from formulations.lns_tiling import (
    Layers,
    best_tiling,
    slice_instance,
    slice_layers,
    structure,
)

DEFAULT_CONFIGS = "llama2-13b:16:4096,gemma2-27b:16:4096,llama2-13b:64:2048"


def tiled(instance: Instance, layers: Layers, plan: Plan) -> int:
    """The makespan of the plan's best tiling onto `instance` (huge if none obeys R5)."""
    got = best_tiling(instance, layers, plan, evaluate_plan(plan))
    return got[1].makespan_ns if got else 2**62


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", default=DEFAULT_CONFIGS)
    ap.add_argument("--cost-model", default="elk-paper")
    ap.add_argument("--time-limit", type=float, default=150.0, help="CP-SAT on the slice, s")
    ap.add_argument("--plans", nargs="*", default=[])
    args = ap.parse_args()
    plans = best_plans(args.plans)
    options = SolveOptions(timing="shared-noc", threads=1)
    print(f"machine: {platform.machine()}, {platform.python_version()}, cost model "
          f"{args.cost_model}, one thread, CP-SAT {args.time_limit:g} s on the slice")
    print("| configuration | ops | fluid LP ns | Elk-Full ns (gap) | Elk-Full on slices of "
          f"{', '.join(map(str, SLICE_SIZES))} layers, tiled | best (layers: slice ns -> "
          "tiled, gap) | CP-SAT on it -> tiled (gap) | certificate's plan (gap) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, instance in whole_models(args.configs, args.cost_model):
        layers = structure(instance)
        assert layers is not None, f"{name}: its layers do not repeat"
        bound = fluid_bound(instance, "shared-noc", 300).bound_ns
        assert bound is not None

        def gap(ns: int, lower: int = bound) -> str:
            return f"{ns:,} ({ns / lower - 1:.2%})"

        whole = solve(instance, "elk-full", options)
        started = time.perf_counter()
        found = []
        for count in sorted({slice_layers(layers, k) for k in SLICE_SIZES}):
            if count < len(layers.runs):
                plan = solve(slice_instance(instance, layers, count), "elk-full", options)
                found.append((tiled(instance, layers, plan), count, plan))
        each = ", ".join(f"{ns:,}" for ns, _count, _plan in found)
        best_ns, count, warm = min(found, key=lambda f: f[0])
        cpsat = solve(warm.instance, "cpsat", replace(options, time_limit_s=args.time_limit,
                                                      warm_start="elk-full", warm_plan=warm))
        made = plans.get(instance.name)
        print(f"| {name} | {len(instance.ops)} | {bound:,} | "
              f"{gap(whole.claims.makespan_ns)} | {each} | {count}: "
              f"{warm.claims.makespan_ns:,} -> {gap(best_ns)} | "
              f"{cpsat.claims.makespan_ns:,} -> {gap(tiled(instance, layers, cpsat))} "
              f"({time.perf_counter() - started:.0f} s) | {gap(made) if made else '-'} |",
              flush=True)


if __name__ == "__main__":
    main()
