"""Layer windows that pay for the loads they carry, and the fluid MIP split over repeats,
against the grid's certified bounds.

For each configuration (a zoo model, whole, default chip, bsp occupancy, shared-noc, one
thread): `carry` (elk_opt.bounds.carry), its sums at the prices of the windows' joint LP, at prices
0 (the baseline, in the same run: the windows' fluid MIPs, what `layers1` sums where CP-SAT
does not prove a window) and after Kelley's steps; then `fluid-split`
(elk_opt.bounds.split, at `split_band`: its blocks' LPs, the summed LP with SRAM's value, and
its MIPs); beside the best bound and the plan of the configuration's certificate in
benchmarks/grid (bounds are values, not timings: they compare across runs).

    PYTHONPATH=. python benchmarks/bench_carry.py [--configs llama2-13b:64:4096,...]
        [--cost-model elk-paper] [--mip-time-limit 200] [--rounds 4]
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
from pathlib import Path

from bench_fluid_milp import whole_models

from elk_opt.bounds.carry import carry_bound
from elk_opt.bounds.split import fluid_split_bound, split_band

GRID = Path(__file__).parent / "grid" / "cells"
DEFAULT_CONFIGS = ("llama2-13b:64:4096,llama2-13b:64:2048,llama2-13b:32:4096,opt-30b:32:2048,"
                   "opt-30b:64:2048,opt-30b:64:4096")


def certified(name: str, cost_model: str) -> tuple[int, int, str] | None:
    """(plan, best bound, its name) of the grid's certificate for `name` ("model bB KVk")."""
    model, batch, kv = name.split()
    path = GRID / f"{model}-{batch}-{kv.lower()}-{cost_model}.cert.json.gz"
    if not path.is_file():
        return None
    doc = json.loads(gzip.decompress(path.read_bytes()))
    best = max(doc["bounds"], key=lambda b: b["ns"] or -1)
    return doc["makespan_ns"], doc["lower_bound_ns"], best["name"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default=DEFAULT_CONFIGS, help="model:batch:kv,...")
    ap.add_argument("--cost-model", default="elk-paper")
    ap.add_argument("--mip-time-limit", type=float, default=200.0, help="per window MIP")
    ap.add_argument("--rounds", type=int, default=4, help="price vectors, at most")
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {platform.python_version()}, cost model "
          f"{args.cost_model}, one thread, the MIP {args.mip_time_limit:g} s per distinct "
          "window and price vector")
    print("| configuration | ops | prices 0 (ns) | the joint LP's prices (ns) | the best "
          "(ns, vectors, s) | certified bound (which) | carry / certified | plan's gap to "
          "the larger | fluid-split: its LPs / MIPs (ns, blocks proven, s) |")
    print("| --- | ---: | ---: | ---: | --- | --- | ---: | ---: | --- |")
    for name, instance in whole_models(args.configs, args.cost_model):
        full = carry_bound(instance, "shared-noc", mip_time_s=args.mip_time_limit,
                           rounds=args.rounds)
        first, free = (full.sums + (0, 0))[:2]
        split = fluid_split_bound(instance, "shared-noc", args.mip_time_limit,
                                  split_band(instance))
        cert = certified(name, args.cost_model)
        plan, bound, which = cert if cert else (0, 0, "-")
        best = max(bound, full.bound_ns, split.bound_ns or 0)
        gap = f"{plan / best - 1:.2%}" if plan else "-"
        ratio = f"{full.bound_ns / bound:.4f}" if bound else "-"
        print(f"| {name} | {len(instance.ops)} | {free:,} | {first:,} | "
              f"{full.bound_ns:,}, {full.rounds}, {full.wall_s:.0f} | {bound:,} ({which}) | "
              f"{ratio} | {gap} | {split.lp_ns or 0:,} / {split.bound_ns or 0:,}, "
              f"{split.blocks_proven}, {split.wall_s:.0f} |", flush=True)


if __name__ == "__main__":
    main()
