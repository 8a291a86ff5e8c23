"""The fluid LP with SRAM on whole decoders: repeats summed (elk_opt.bounds.periodic) against
the full LP, same instance, same run, one thread.

For each configuration (default chip, bsp occupancy, shared-noc): the plain fluid LP, then the
fluid LP with SRAM at each band, summed and (unless --summed-only) full; per row the bound,
the wall time and the LP's size. The full LP is the baseline: the summed one is a relaxation
of it, so its bound is at most the full one's; what it buys is time.

    PYTHONPATH=. python benchmarks/bench_periodic.py [--configs gemma2-27b:64:2048,...]
        [--cost-model elk-paper] [--bands 8,24] [--full-bands 8] [--time-limit 600]
"""

from __future__ import annotations

import argparse
import platform
import time

from bench_fluid_milp import whole_models

from elk_opt.bounds.fluid import fluid_bound
from elk_opt.bounds.fluid_sram import fluid_sram_bound

DEFAULT_CONFIGS = "gemma2-27b:64:2048,opt-30b:64:4096,llama2-70b:64:4096,llama2-13b:64:4096"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", default=DEFAULT_CONFIGS)
    ap.add_argument("--cost-model", default="elk-paper")
    ap.add_argument("--bands", default="8,24")
    ap.add_argument("--full-bands", default="8", help="bands the full LP runs at ('' for none)")
    ap.add_argument("--time-limit", type=float, default=600.0, help="per LP, seconds")
    args = ap.parse_args()
    bands = [int(b) for b in args.bands.split(",") if b]
    full_bands = {int(b) for b in args.full_bands.split(",") if b}
    print(f"machine: {platform.machine()}, {platform.python_version()}, "
          f"cost model {args.cost_model}, one thread, time limit {args.time_limit:g} s per LP")
    print("| instance | ops | LP | band | bound ns | columns | rows | repeats summed | wall s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, instance in whole_models(args.configs, args.cost_model):
        n = len(instance.ops)
        fb = fluid_bound(instance, "shared-noc", args.time_limit)
        print(f"| {name} | {n} | fluid | - | {fb.bound_ns} | {fb.columns:,} | {fb.rows:,} | - "
              f"| {fb.wall_s:.1f} |", flush=True)
        for band in bands:
            runs = [("summed", True)] + ([("full", False)] if band in full_bands else [])
            for label, periodic in runs:
                started = time.perf_counter()
                sb = fluid_sram_bound(instance, "shared-noc", args.time_limit, band,
                                      periodic=periodic)
                wall = time.perf_counter() - started
                print(f"| {name} | {n} | fluid-sram, {label} | {band} | {sb.bound_ns} | "
                      f"{sb.columns:,} | {sb.rows:,} | {sb.repeats or '-'} | {wall:.1f} |",
                      flush=True)


if __name__ == "__main__":
    main()
