"""One pair per op class on a slice (formulations.slice_pairs) against Elk-Full's slice plan,
each tiled onto the whole model, on Figure 17 configurations (shared-noc, bsp occupancy).

Per configuration: Elk-Full on a slice of `--layers` layers, tiled (what `certify`'s slice
phase offers), then the descent on the same slice with no deadline, tiled; the tiled
makespans, the descent's trials, sweeps and wall time. With `--start METHOD` the descent
starts from the pairs of METHOD's plan of the whole model (as `certify` starts it from its
best plan so far), whose makespan is listed too. With `-o DIR` the descent's tiled plan
is written there (DIR/KEY.plan.json.gz), a start for `elk-opt solve --method polish
--warm-start` or `elk-opt certify`.

    python benchmarks/bench_slice_pairs.py [--models llama2-13b,...] [--batches 64]
        [--kv 2048,4096] [--cost-model elk-paper] [--layers 4] [--start elk-full-lp] [-o DIR]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from elk_opt.evaluate import evaluate_plan
from elk_opt.frontend.chips import DEFAULT_CHIP
from elk_opt.frontend.zoo import model_instance
from elk_opt.io import save_plan
from elk_opt.methods import METHODS, solve
from elk_opt.solution import SolveOptions
from elk_opt.studies.paper import MODELS
from formulations.lns_tiling import best_tiling, slice_instance, slice_layers, structure, tiled_plan
from formulations.slice_pairs import descend


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--batches", default="64")
    p.add_argument("--kv", default="2048,4096")
    p.add_argument("--cost-model", default="elk-paper")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--start", choices=sorted(METHODS),
                   help="a method whose whole plan's pairs the descent starts from")
    p.add_argument("-o", "--output", type=Path)
    args = p.parse_args()
    options = SolveOptions(timing="shared-noc", threads=1)
    print("| configuration | slice | Elk-Full, tiled (ns) | start (ns) | one pair per class, "
          "tiled (ns) | change | classes given a pair | trials | sweeps | s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for model in args.models.split(","):
        for batch in map(int, args.batches.split(",")):
            for kv in map(int, args.kv.split(",")):
                instance = model_instance(model, DEFAULT_CHIP, batch=batch, kv_len=kv,
                                          cost_model=args.cost_model, noc_occupancy="bsp")
                layers = structure(instance)
                assert layers is not None, f"{model}: its layers do not repeat"
                count = slice_layers(layers, args.layers)
                sliced = slice_instance(instance, layers, count)
                plan = solve(sliced, "elk-full", options)
                start = best_tiling(instance, layers, plan, evaluate_plan(plan))
                whole = None if args.start is None else solve(instance, args.start, options)
                started = time.perf_counter()
                descent = descend(instance, layers, sliced, options, solve, start=whole)
                wall = time.perf_counter() - started
                assert descent.best is not None
                sliced_plan, tiled, schedule = descent.best
                before = start[1].makespan_ns if start is not None else None
                change = ("" if before is None
                          else f"{100 * (schedule.makespan_ns / before - 1):+.2f}%")
                assert whole is None or whole.claims is not None
                print(f"| {model} b{batch} KV{kv} | {count} | "
                      f"{'none obeys R5' if before is None else f'{before:,}'} | "
                      f"{'-' if whole is None else f'{whole.claims.makespan_ns:,}'} | "
                      f"{schedule.makespan_ns:,} | {change} | {len(descent.forced)} | "
                      f"{descent.trials} | {descent.sweeps} | {wall:.0f} |", flush=True)
                if args.output is not None:
                    args.output.mkdir(parents=True, exist_ok=True)
                    save_plan(args.output / f"{model}-b{batch}-kv{kv}-{args.cost_model}"
                              ".plan.json.gz",
                              tiled_plan(instance, tiled, sliced_plan, count, started,
                                         classes_given_a_pair=len(descent.forced)))


if __name__ == "__main__":
    main()
