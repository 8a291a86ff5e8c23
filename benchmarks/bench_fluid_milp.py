"""The fluid MIP with SRAM (elk_opt.bounds.fluid_milp) against its LP, on decoder slices.

For each configuration (a zoo model cut to a few layers, default chip, bsp occupancy,
shared-noc) and the calibration layer: the fluid LP with SRAM (the baseline, full LP, no
summing), the MIP, and Elk-Full's plan, whose makespan both bounds sit below. Per row the
two bounds, what the MIP adds, the MIP's wall time and whether it finished; one thread.

    PYTHONPATH=. python benchmarks/bench_fluid_milp.py [--configs llama2-13b:64:2048:1,...]
        [--cost-model elk-paper] [--time-limit 120]
"""

from __future__ import annotations

import argparse
import platform
from collections.abc import Iterator
from pathlib import Path

from elk_opt.bounds.fluid_milp import fluid_milp_bound
from elk_opt.bounds.fluid_sram import fluid_sram_bound
from elk_opt.frontend.chips import DEFAULT_CHIP
from elk_opt.frontend.zoo import model_instance
from elk_opt.io import load_instance
from elk_opt.methods import solve
from elk_opt.problem import Instance
from elk_opt.solution import SolveOptions

CALIBRATION = (Path(__file__).parent.parent / "tests" / "data"
               / "elk-artifact-llama2-13b-b32-kv2048-layer.json")
DEFAULT_CONFIGS = ("llama2-13b:32:4096:1,llama2-13b:64:2048:1,opt-30b:64:4096:1,"
                   "gemma2-27b:64:2048:1,llama2-13b:32:2048:2,llama2-13b:64:2048:2,"
                   "opt-30b:64:4096:2,gemma2-27b:64:2048:2,gemma2-27b:64:2048:3")


def instances(configs: str, cost_model: str) -> list[tuple[str, Instance]]:
    out = [("calibration layer", load_instance(CALIBRATION))]
    for config in configs.split(","):
        model, batch, kv, layers = config.split(":")
        out.append((f"{model} b{batch} KV{kv}, {layers} layer(s)",
                    model_instance(model, DEFAULT_CHIP, batch=int(batch), kv_len=int(kv),
                                   layers=int(layers), cost_model=cost_model,
                                   noc_occupancy="bsp")))
    return out


def whole_models(configs: str, cost_model: str) -> Iterator[tuple[str, Instance]]:
    """Each `model:batch:kv` of `configs` as a whole zoo model (default chip, bsp occupancy),
    named "model bB KVk", built as the caller reaches it (a whole model takes seconds)."""
    for config in configs.split(","):
        model, batch, kv = config.split(":")
        yield (f"{model} b{batch} KV{kv}",
               model_instance(model, DEFAULT_CHIP, batch=int(batch), kv_len=int(kv),
                              cost_model=cost_model, noc_occupancy="bsp"))


def slice_arguments(doc: str, configs: str) -> argparse.ArgumentParser:
    """The options of a benchmark over `instances`: configurations, cost model, limit."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--configs", default=configs)
    ap.add_argument("--cost-model", default="elk-paper")
    ap.add_argument("--time-limit", type=float, default=120.0, help="per bound, seconds")
    return ap


def main() -> None:
    args = slice_arguments(__doc__, DEFAULT_CONFIGS).parse_args()
    print(f"machine: {platform.machine()}, {platform.python_version()}, "
          f"cost model {args.cost_model}, one thread, time limit {args.time_limit:g} s")
    print("| instance | ops | fluid-sram ns | fluid-milp ns | MIP adds | MIP wall s | finished "
          "| Elk-Full ns | gap to fluid-sram | gap to fluid-milp |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, instance in instances(args.configs, args.cost_model):
        lp = fluid_sram_bound(instance, "shared-noc", args.time_limit, periodic=False)
        mip = fluid_milp_bound(instance, "shared-noc", args.time_limit)
        plan = solve(instance, "elk-full", SolveOptions(timing="shared-noc"))
        made = plan.claims.makespan_ns
        assert lp.bound_ns is not None and mip.bound_ns is not None
        print(f"| {name} | {len(instance.ops)} | {lp.bound_ns:,} | {mip.bound_ns:,} | "
              f"{mip.bound_ns / lp.bound_ns - 1:+.2%} | {mip.wall_s:.1f} | "
              f"{'yes' if mip.complete else 'no'} | {made:,} | {made / lp.bound_ns - 1:.2%} "
              f"| {made / mip.bound_ns - 1:.2%} |", flush=True)


if __name__ == "__main__":
    main()
