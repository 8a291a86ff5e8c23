"""lhs and Elk-Full in the instance's execution order against a free one (R2), on whole models.

python benchmarks/bench_free_order.py                  # the models below, both timings
python benchmarks/bench_free_order.py --models llama2-7b:decode:16 --methods lhs

Models (whole, default chip): Llama2-7B and Llama2-13B decode at batch 16 and 64 (KV 2048),
Llama2-7B prefill and forward (512 tokens, batch 1), DiT-XL/2 (batch 8). Each instance is built
with `noc_occupancy="bsp"` and scored under shared-noc (section 5b) and separate-noc (section 5,
where the occupancy plays no part). Per model, timing and method: the makespan in the
instance's order and in a free order, their ratio (free / instance: below 1, the free order
pays), and each one's wall time with their ratio (the instance-order run is the baseline,
measured in the same run). Every plan is checked against `verify`.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time

from elk_opt.frontend.zoo import model_instance
from elk_opt.io import plan_to_dict
from elk_opt.methods import solve
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions
from verify import check

MODELS = ("llama2-7b:decode:16", "llama2-7b:decode:64", "llama2-13b:decode:16",
          "llama2-13b:decode:64", "llama2-7b:prefill:1", "llama2-7b:forward:1",
          "dit-xl-2:forward:8")
TIMINGS = ("shared-noc", "separate-noc")


def build(spec: str) -> Instance:
    model, mode, batch = spec.split(":")
    kv_len = 2048 if mode == "decode" else 512
    return model_instance(model, batch=int(batch), kv_len=kv_len, mode=mode,
                          noc_occupancy="bsp")


def run(instance: Instance, method: str, timing: str, order: str) -> tuple[Plan, float]:
    started = time.perf_counter()
    plan = solve(instance, method, SolveOptions(timing=timing, exec_order=order))
    wall = time.perf_counter() - started
    report = check(plan_to_dict(plan))
    if not report.valid:
        sys.exit(f"{instance.name} {method} {order} {timing}: verify: {report.violations[:2]}")
    return plan, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS),
                        help="model:mode:batch, comma-separated")
    parser.add_argument("--methods", default="lhs,elk-full")
    args = parser.parse_args()
    print(f"# {platform.node()} {platform.processor() or platform.machine()}, "
          f"python {platform.python_version()}")
    print("| model | ops | timing | method | instance us | free us | free/instance "
          "| wall instance s | wall free s | wall ratio | free order used |")
    print("| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    ratios: dict[str, list[float]] = {}
    walls: dict[str, list[float]] = {}
    for spec in args.models.split(","):
        instance = build(spec)
        for timing in TIMINGS:
            for method in args.methods.split(","):
                kept, kept_s = run(instance, method, timing, "instance")
                free, free_s = run(instance, method, timing, "free")
                a, b = kept.claims.makespan_ns, free.claims.makespan_ns  # type: ignore[union-attr]
                ratios.setdefault(f"{method} {timing}", []).append(b / a)
                walls.setdefault(method, []).append(free_s / kept_s)
                used = free.claims.params.get("order_used", "list")  # type: ignore[union-attr]
                print(f"| {spec} | {len(instance.ops)} | {timing} | {method} | {a / 1e3:,.1f} "
                      f"| {b / 1e3:,.1f} | {b / a:.4f} | {kept_s:.2f} | {free_s:.2f} "
                      f"| {free_s / kept_s:.2f} | {used} |", flush=True)
    print()
    for key, values in ratios.items():
        print(f"{key}: free/instance median {statistics.median(values):.4f}, "
              f"min {min(values):.4f}, max {max(values):.4f}")
    for key, values in walls.items():
        print(f"{key}: wall free/instance median {statistics.median(values):.2f}")


if __name__ == "__main__":
    main()
