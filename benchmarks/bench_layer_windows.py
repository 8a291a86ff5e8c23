"""The layer windows with and without the fluid MIP where CP-SAT does not prove a window.

For each configuration (a zoo model, whole, default chip, bsp occupancy, shared-noc, one
thread): `layers1` with CP-SAT alone (the baseline, the MIP given no time) and with the fluid
MIP with loads run whole on each distinct window CP-SAT did not prove, in the same run; per
distinct window its bound both ways.

    PYTHONPATH=. python benchmarks/bench_layer_windows.py [--configs gemma2-27b:64:2048,...]
        [--cost-model elk-paper] [--time-limit 10] [--mip-time-limit 120]
"""

from __future__ import annotations

import argparse
import platform
from collections import Counter

from bench_fluid_milp import whole_models

from elk_opt.bounds.layers import layer_bound

DEFAULT_CONFIGS = ("gemma2-27b:64:2048,gemma2-27b:64:4096,llama2-13b:64:4096,opt-30b:64:4096")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default=DEFAULT_CONFIGS, help="model:batch:kv,...")
    ap.add_argument("--cost-model", default="elk-paper")
    ap.add_argument("--time-limit", type=float, default=10.0, help="CP-SAT per window")
    ap.add_argument("--mip-time-limit", type=float, default=120.0, help="the MIP per window")
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {platform.python_version()}, cost model "
          f"{args.cost_model}, one thread, CP-SAT {args.time_limit:g} s and the MIP "
          f"{args.mip_time_limit:g} s per distinct window")
    print("| configuration | ops | windows (distinct) | CP-SAT alone: ns, proven, s | with the "
          "MIP: ns, proven, s | per distinct window, CP-SAT -> with the MIP (ns) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, instance in whole_models(args.configs, args.cost_model):
        alone = layer_bound(instance, "shared-noc", time_limit_s=args.time_limit,
                            mip_time_s=0.0)
        both = layer_bound(instance, "shared-noc", time_limit_s=args.time_limit,
                           mip_time_s=args.mip_time_limit)
        moved = Counter((before, after) for (_a, _b, before), (_c, _d, after)
                        in zip(alone.spans, both.spans, strict=True) if after != before)
        windows = "; ".join(f"{b:,} -> {w:,} (x{n})" for (b, w), n in moved.items()) or "same"
        print(f"| {name} | {len(instance.ops)} | {alone.windows} "
              f"({alone.distinct}) | {alone.bound_ns:,}, {alone.proven}, {alone.wall_s:.0f} | "
              f"{both.bound_ns:,}, {both.proven}, {both.wall_s:.0f} | {windows} |", flush=True)


if __name__ == "__main__":
    main()
