"""Elk-Full at a fluid LP's pairs (`elk-full-lp`) against Elk-Full, on the Figure 17 grid.

Per configuration (whole model, `bsp`, shared-noc): Elk-Full and Elk-Full-LP at each LP
asked for (`--lps`, `elk-full-lp --param lp=`) run in the same process one after the other,
and the table gives their makespans, each LP's ratio to Elk-Full and the wall times; the last
lines per LP the median ratio and how many configurations it wins.

    python benchmarks/bench_lp_pairs.py [--cost-models elk-paper,analytic] [--models M,...]
        [--batches 16,32,64] [--kv 2048,4096] [--lps fluid-sram,fluid] [-o TABLE.md]
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


def timed(instance, method: str, **params: str) -> tuple[int, float]:
    started = time.perf_counter()
    plan = solve(instance, method, SolveOptions(timing="shared-noc", params=params))
    return plan.claims.makespan_ns, time.perf_counter() - started


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cost-models", default="elk-paper,analytic")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--batches", default=",".join(map(str, BATCHES)))
    p.add_argument("--kv", default=",".join(map(str, KV_LENS)))
    p.add_argument("--lps", default="fluid-sram,fluid")
    p.add_argument("-o", "--output", type=Path)
    args = p.parse_args()
    lps = args.lps.split(",")
    lines = [f"Machine: {platform.machine()}, {os.cpu_count()} cores", "",
             "| cost model | model | batch | KV | ops | Elk-Full (ns) | "
             + "".join(f"LP {lp} (ns) | / Full | " for lp in lps)
             + "Elk-Full (s) | " + "".join(f"LP {lp} (s) | " for lp in lps),
             "|" + " --- |" * (6 + 3 * len(lps))]
    ratios: dict[str, list[float]] = {lp: [] for lp in lps}
    for cost_model in args.cost_models.split(","):
        for model in args.models.split(","):
            for batch in map(int, args.batches.split(",")):
                for kv in map(int, args.kv.split(",")):
                    instance = model_instance(model, DEFAULT_CHIP, batch=batch, kv_len=kv,
                                              cost_model=cost_model, noc_occupancy="bsp")
                    full, full_s = timed(instance, "elk-full")
                    runs = {lp: timed(instance, "elk-full-lp", lp=lp) for lp in lps}
                    for lp, (ns, _s) in runs.items():
                        ratios[lp].append(ns / full)
                    lines.append(f"| {cost_model} | {model} | {batch} | {kv} | "
                                 f"{len(instance.ops)} | {full:,} | "
                                 + "".join(f"{ns:,} | {ns / full:.4f} | "
                                           for ns, _s in runs.values())
                                 + f"{full_s:.1f} | "
                                 + "".join(f"{s:.1f} | " for _ns, s in runs.values()))
                    print(lines[-1], flush=True)
    lines.append("")
    for lp, rs in ratios.items():
        lines.append(f"LP {lp}, {len(rs)} configurations: median LP / Full "
                     f"{statistics.median(rs):.4f}, faster in {sum(r < 1 for r in rs)}, slower "
                     f"in {sum(r > 1 for r in rs)}, best {min(rs):.4f}, worst {max(rs):.4f}")
        print(lines[-1])
    text = "\n".join(lines)
    if args.output:
        args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
