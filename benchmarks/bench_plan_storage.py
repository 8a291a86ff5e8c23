"""Disk cost of keeping every plan of the full `elk-opt reproduce` grid, gzipped.

python benchmarks/bench_plan_storage.py [--reproduce DIR] [--methods basic]

A kept plan embeds its instance, so its size is the instance's, nearly whatever the method: this
measures the gzipped plan (`elk_opt.studies.plans.packed`, what studies write) of every whole
model of the grid under every cost model and setting at one batch and KV length (b32 KV2048),
and, for Llama2-13B, at every batch and KV length of the grid to see how much those move it;
with `--methods` it measures several methods' plans of one instance (the program and claims
differ). With `--reproduce DIR` it also sums the plans a finished `reproduce` folder kept.
Prints per-plan JSON and gzip sizes, time to pack, and the grid's total estimated from them:
per (model, cost model, setting) the measured size x 6 configurations x the plan methods, plus
the one- and two-layer exact slices (6 plans each).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from elk_opt.frontend.zoo import model_instance
from elk_opt.io import plan_to_dict
from elk_opt.methods import solve
from elk_opt.solution import SolveOptions
from elk_opt.studies import paper
from elk_opt.studies.plans import packed
from elk_opt.studies.reproduce import COST_MODELS, DEFAULT_METHODS, IDEAL, SETTINGS

CHIP = "ipu-pod4-hbm3e"
PLAN_METHODS = [m for m in DEFAULT_METHODS if m != IDEAL]  # ideal is a bound: no plan
SLICE_PLANS = len(PLAN_METHODS) + 1  # the heuristics and cpsat


def _sizes(model: str, cost: str, setting: str, batch: int, kv: int, layers: int | None,
           method: str = "basic") -> tuple[int, int, float, int]:
    """(JSON bytes, gzip bytes, seconds to pack, ops) of one plan."""
    instance = model_instance(model, CHIP, batch=batch, kv_len=kv, layers=layers,
                              cost_model=cost, noc_occupancy=SETTINGS[setting].noc_occupancy)
    plan = solve(instance, method, SolveOptions(timing=SETTINGS[setting].timing))
    text = json.dumps(plan_to_dict(plan), separators=(",", ":")).encode()
    started = time.perf_counter()
    data = packed(plan)
    return len(text), len(data), time.perf_counter() - started, len(instance.ops)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reproduce", type=Path, default=None)
    ap.add_argument("--methods", default="basic")
    args = ap.parse_args()
    configs = len(paper.BATCHES) * len(paper.KV_LENS)
    total = 0.0
    print(f"{'model':<12} {'cost':<10} {'setting':<13} {'ops':>5} {'JSON B':>11} {'gzip B':>9} "
          f"{'ratio':>6} {'pack s':>7}")
    for model in paper.MODELS:
        for cost in COST_MODELS:
            for setting in SETTINGS:
                raw, gz, seconds, ops = _sizes(model, cost, setting, 32, 2048, None)
                print(f"{model:<12} {cost:<10} {setting:<13} {ops:>5} {raw:>11,} {gz:>9,} "
                      f"{raw / gz:>5.0f}x {seconds:>7.3f}", flush=True)
                slices = sum(_sizes(model, cost, setting, 32, 2048, n)[1] for n in (1, 2))
                total += gz * configs * len(PLAN_METHODS) + slices * configs * SLICE_PLANS
    print(f"\nfull grid, estimated: {total / 1e6:,.1f} MB of gzipped plans "
          f"({len(paper.MODELS)} models x {configs} configs x {len(COST_MODELS)} cost models x "
          f"{len(SETTINGS)} settings x {len(PLAN_METHODS)} plan methods, plus 1- and 2-layer "
          f"slices x {SLICE_PLANS} plans)")
    spread = [_sizes("llama2-13b", "analytic", "shared-bsp", b, kv, None)[1]
              for b in paper.BATCHES for kv in paper.KV_LENS]
    print(f"llama2-13b analytic shared-bsp over the {configs} batch x KV configs: gzip "
          f"{min(spread):,}..{max(spread):,} B, median {statistics.median(spread):,.0f} B")
    for method in args.methods.split(","):
        raw, gz, seconds, _ops = _sizes("llama2-13b", "analytic", "shared-bsp", 32, 2048, None,
                                        method)
        print(f"llama2-13b b32 KV2048 analytic shared-bsp, {method}: JSON {raw:,} B, gzip "
              f"{gz:,} B, packed in {seconds:.3f} s")
    if args.reproduce:
        kept = sorted((args.reproduce / "plans").glob("*.plan.json.gz"))
        print(f"{args.reproduce}: {len(kept)} plans kept, "
              f"{sum(p.stat().st_size for p in kept):,} B")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
