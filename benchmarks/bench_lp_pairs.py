"""Elk-Full at the fluid LP's pairs (`elk-full-lp`) against Elk-Full, on the Figure 17 grid.

Per configuration (whole model, `bsp`, shared-noc): both heuristics run in the same process
one after the other, and the table gives their makespans, the ratio and their wall times;
the last line the median ratio and how many configurations each wins.

    python benchmarks/bench_lp_pairs.py [--cost-models elk-paper,analytic] [--models M,...]
        [--batches 16,32,64] [--kv 2048,4096] [-o TABLE.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

from elk_opt.frontend.chips import DEFAULT_CHIP
from elk_opt.frontend.zoo import model_instance
from elk_opt.methods import solve
from elk_opt.solution import SolveOptions
from elk_opt.studies.paper import BATCHES, KV_LENS, MODELS


def timed(instance, method: str) -> tuple[int, float]:
    started = time.perf_counter()
    plan = solve(instance, method, SolveOptions(timing="shared-noc"))
    return plan.claims.makespan_ns, time.perf_counter() - started


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cost-models", default="elk-paper,analytic")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--batches", default=",".join(map(str, BATCHES)))
    p.add_argument("--kv", default=",".join(map(str, KV_LENS)))
    p.add_argument("-o", "--output", type=Path)
    args = p.parse_args()
    lines = [f"Machine: {platform.machine()}, {os.cpu_count()} cores", "",
             "| cost model | model | batch | KV | ops | Elk-Full (ns) | Elk-Full-LP (ns) | "
             "LP / Full | Elk-Full (s) | Elk-Full-LP (s) |", "|" + " --- |" * 10]
    ratios = []
    for cost_model in args.cost_models.split(","):
        for model in args.models.split(","):
            for batch in map(int, args.batches.split(",")):
                for kv in map(int, args.kv.split(",")):
                    instance = model_instance(model, DEFAULT_CHIP, batch=batch, kv_len=kv,
                                              cost_model=cost_model, noc_occupancy="bsp")
                    full, full_s = timed(instance, "elk-full")
                    lp, lp_s = timed(instance, "elk-full-lp")
                    ratios.append(lp / full)
                    lines.append(f"| {cost_model} | {model} | {batch} | {kv} | "
                                 f"{len(instance.ops)} | {full:,} | {lp:,} | {lp / full:.4f} | "
                                 f"{full_s:.1f} | {lp_s:.1f} |")
                    print(lines[-1], flush=True)
    lines += ["", f"{len(ratios)} configurations: median LP / Full {statistics.median(ratios):.4f}"
                  f", Elk-Full-LP faster in {sum(r < 1 for r in ratios)}, slower in "
                  f"{sum(r > 1 for r in ratios)}, best {min(ratios):.4f}, worst {max(ratios):.4f}"]
    text = "\n".join(lines)
    print(lines[-1])
    if args.output:
        args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
