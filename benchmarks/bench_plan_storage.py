"""Disk cost of keeping every plan of the full `elk-opt reproduce` grid, gzipped.

python benchmarks/bench_plan_storage.py [--reproduce DIR] [--methods basic]

A kept plan embeds its instance, so its size is the instance's, nearly whatever the method
(`--methods` measures several methods' plans of one instance to show it). Measured, with
Basic's plan, packed as studies pack them (`elk_opt.studies.plans.packed`):
- every whole model under every cost model and setting at batch 32, KV 2048;
- every whole model under every cost model and every batch and KV length of the grid, under
  `shared-bsp` (batch and KV move the size most: plans that differ per layer gzip worse);
- the one- and two-layer exact slices at batch 32, KV 2048.
The grid's total: per (model, cost model, configuration) the measured `shared-bsp` size,
times the sum over settings of that setting's size relative to `shared-bsp` at b32 KV2048,
times the plan methods; plus the slices x 6 plans (5 heuristics and cpsat) x 6 configurations.
With `--reproduce DIR` it also sums the plans a finished `reproduce` folder kept.
"""

from __future__ import annotations

import argparse
import json
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
    configs = [(b, kv) for b in paper.BATCHES for kv in paper.KV_LENS]
    total = 0.0
    print(f"{'model':<12} {'cost':<10} {'setting':<13} {'config':<12} {'ops':>5} {'JSON B':>11} "
          f"{'gzip B':>9} {'ratio':>6} {'pack s':>7}")

    def measured(model: str, cost: str, setting: str, batch: int, kv: int) -> int:
        raw, gz, seconds, ops = _sizes(model, cost, setting, batch, kv, None)
        print(f"{model:<12} {cost:<10} {setting:<13} {f'b{batch} KV{kv}':<12} {ops:>5} "
              f"{raw:>11,} {gz:>9,} {raw / gz:>5.0f}x {seconds:>7.3f}", flush=True)
        return gz

    for model in paper.MODELS:
        for cost in COST_MODELS:
            at_b32 = {s: measured(model, cost, s, 32, 2048) for s in SETTINGS}
            settings_factor = sum(at_b32[s] / at_b32["shared-bsp"] for s in SETTINGS)
            bsp = [at_b32["shared-bsp"] if (b, kv) == (32, 2048)
                   else measured(model, cost, "shared-bsp", b, kv) for b, kv in configs]
            slices = sum(_sizes(model, cost, s, 32, 2048, n)[1] for s in SETTINGS
                         for n in (1, 2))
            total += sum(bsp) * settings_factor * len(PLAN_METHODS)
            total += slices * len(configs) * SLICE_PLANS
    plans = len(paper.MODELS) * len(COST_MODELS) * len(SETTINGS) * len(configs) * (
        len(PLAN_METHODS) + 2 * SLICE_PLANS)
    print(f"\nfull grid, estimated: {total / 1e6:,.1f} MB of gzipped plans, {plans:,} plans "
          f"({len(paper.MODELS)} models x {len(configs)} configs x {len(COST_MODELS)} cost "
          f"models x {len(SETTINGS)} settings x ({len(PLAN_METHODS)} whole-model plans + 1- "
          f"and 2-layer slices x {SLICE_PLANS} plans))")
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
