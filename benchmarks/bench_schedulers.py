"""The paper's schedulers on the Figure 17 grid, against its headline ratios.

python benchmarks/bench_schedulers.py [--models llama2-13b,...] [--batches 16,32,64]
                                      [--kv 2048,4096] [--chip NAME]
python benchmarks/bench_schedulers.py --synthetic   # tight-SRAM synthetic decoders instead

For every model x batch x KV length (full depth, decode, default chip) it builds the zoo
instance, runs basic, static, elk-dyn, elk-full and lhs, checks every plan with the
independent verifier, and prints one markdown row: the decode-step makespan (the latency of
one output token per sequence) of each method and of the Ideal bound, in microseconds, and the
ratios the paper headlines (Elk-Full over Basic 1.87x and over Static 1.37x on average,
Elk-Full = 94.84% of Ideal). The baseline is Basic, measured in the same run.
With --synthetic the same table covers seeded synthetic decoders
(elk_opt.frontend.synthetic, 96 ops, 5 plans per op) at several SRAM tightness levels, where
memory, not HBM, binds.
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time

from elk_opt.bounds.ideal import ideal_bound
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.frontend.zoo import DEFAULT_CHIP, model_instance
from elk_opt.io import plan_to_dict
from elk_opt.methods import solve
from verify import check

METHODS = ("basic", "static", "elk-dyn", "elk-full", "lhs")


def geomean(xs) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="llama2-13b,llama2-70b,opt-30b,gemma2-27b")
    ap.add_argument("--batches", default="16,32,64")
    ap.add_argument("--kv", default="2048,4096")
    ap.add_argument("--chip", default=DEFAULT_CHIP)
    ap.add_argument("--synthetic", action="store_true")
    args = ap.parse_args()
    if args.synthetic:
        synthetic()
        return
    print(f"machine: {platform.machine()}, Python {platform.python_version()}; chip {args.chip}")
    head = " | ".join(f"{m} us" for m in METHODS)
    print(f"\n| model | batch | KV | ops | Ideal us | {head} | Full/Basic | Full/Static "
          f"| Full/Dyn | Full % of Ideal | Full s |")
    print("|" + "---|" * (10 + len(METHODS)))
    ratios: dict[str, list[float]] = {"basic": [], "static": [], "dyn": [], "ideal": []}
    for model in args.models.split(","):
        for batch in (int(b) for b in args.batches.split(",")):
            for kv in (int(k) for k in args.kv.split(",")):
                instance = model_instance(model, args.chip, batch=batch, kv_len=kv)
                ideal = ideal_bound(instance)
                ms: dict[str, int] = {}
                wall = 0.0
                for method in METHODS:
                    print(f"  {model} b{batch} kv{kv}: {method}...", file=sys.stderr, flush=True)
                    t = time.perf_counter()
                    plan = solve(instance, method)
                    if method == "elk-full":
                        wall = time.perf_counter() - t
                    if not check(plan_to_dict(plan)).valid:
                        raise SystemExit(f"{method} plan for {instance.name} does not verify")
                    ms[method] = plan.claims.makespan_ns
                full = ms["elk-full"]
                ratios["basic"].append(ms["basic"] / full)
                ratios["static"].append(ms["static"] / full)
                ratios["dyn"].append(ms["elk-dyn"] / full)
                ratios["ideal"].append(ideal / full)
                cells = " | ".join(f"{ms[m] / 1000:,.1f}" for m in METHODS)
                print(f"| {model} | {batch} | {kv} | {len(instance.ops)} | {ideal / 1000:,.1f} | "
                      f"{cells} | {ms['basic'] / full:.3f} | {ms['static'] / full:.3f} | "
                      f"{ms['elk-dyn'] / full:.3f} | {100 * ideal / full:.2f}% | {wall:.1f} |",
                      flush=True)
    n = len(ratios["basic"])
    print(f"\n{n} configurations. Mean (geomean): Elk-Full over Basic "
          f"{sum(ratios['basic']) / n:.3f}x ({geomean(ratios['basic']):.3f}x; paper 1.87x), "
          f"over Static {sum(ratios['static']) / n:.3f}x ({geomean(ratios['static']):.3f}x; "
          f"paper 1.37x), over Elk-Dyn {sum(ratios['dyn']) / n:.3f}x; Elk-Full = "
          f"{100 * sum(ratios['ideal']) / n:.2f}% of Ideal (paper 94.84%).")


def synthetic() -> None:
    print(f"\n| seed | tightness | Ideal us | {' | '.join(f'{m} us' for m in METHODS)} "
          f"| Full/Basic | Full/Static | Full/Dyn | Full % of Ideal |")
    print("|" + "---|" * (7 + len(METHODS)))
    rows = []
    for seed in range(4):
        for tightness in (0.3, 0.6, 1.0):
            instance = synthetic_instance(ops=96, plans=5, seed=seed, tightness=tightness)
            ideal = ideal_bound(instance)
            ms = {}
            for method in METHODS:
                plan = solve(instance, method)
                if not check(plan_to_dict(plan)).valid:
                    raise SystemExit(f"{method} plan for {instance.name} does not verify")
                ms[method] = plan.claims.makespan_ns
            full = ms["elk-full"]
            rows.append((ms["basic"] / full, ms["static"] / full, ms["elk-dyn"] / full,
                         ideal / full))
            cells = " | ".join(f"{ms[m] / 1000:,.1f}" for m in METHODS)
            print(f"| {seed} | {tightness} | {ideal / 1000:,.1f} | {cells} | {rows[-1][0]:.3f} | "
                  f"{rows[-1][1]:.3f} | {rows[-1][2]:.3f} | {100 * rows[-1][3]:.2f}% |", flush=True)
    cols = list(zip(*rows, strict=True))
    print(f"\n{len(rows)} instances. Geomean: Elk-Full over Basic {geomean(cols[0]):.3f}x, over "
          f"Static {geomean(cols[1]):.3f}x, over Elk-Dyn {geomean(cols[2]):.3f}x; Elk-Full = "
          f"{100 * geomean(cols[3]):.2f}% of Ideal.")


if __name__ == "__main__":
    main()
