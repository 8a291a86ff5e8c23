"""How often `polish` should issue loads sooner: its knob `sooner` (0 never, 1 once before the
windows, 2 also after each pass of windows that gained nothing), side by side on zoo slices.

Each slice (default chip, elk-paper cost model, bsp NoC occupancy, shared-noc) starts from
Elk-Full's plan; polish then runs on a work limit per window and no time limit, so each run
repeats exactly and ends at its neighbourhood's local optimum. Every plan is checked by
`verify`. Reported: each arm's makespan and wall time, and per arm the median ratio of its
makespan to the `sooner=1` arm's.

    python benchmarks/bench_sooner.py [--layers 4] [--work 0.1] [--models llama2-13b,opt-30b]
                                      [--batches 32,64] [--kv 2048,4096]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

from elk_opt.frontend.chips import DEFAULT_CHIP
from elk_opt.frontend.zoo import model_instance
from elk_opt.io import plan_to_dict
from elk_opt.methods import solve
from elk_opt.solution import SolveOptions
from verify import check

ARMS = (0, 1, 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--work", type=float, default=0.1, help="work limit per window")
    ap.add_argument("--models", default="llama2-13b,opt-30b,gemma2-27b,llama2-70b")
    ap.add_argument("--batches", default="32,64")
    ap.add_argument("--kv", default="2048,4096")
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, Python {platform.python_version()}; "
          f"{args.layers} layers, work limit {args.work} per window")
    print("| slice | ops | Elk-Full (ns) | " + " | ".join(
        f"sooner={a} (ns, s)" for a in ARMS) + " |")
    print("| --- | ---: | ---: |" + " ---: |" * len(ARMS))
    ratios: dict[int, list[float]] = {a: [] for a in ARMS}
    for model in args.models.split(","):
        for batch in map(int, args.batches.split(",")):
            for kv in map(int, args.kv.split(",")):
                instance = model_instance(model, DEFAULT_CHIP, batch=batch, kv_len=kv,
                                          layers=args.layers, cost_model="elk-paper",
                                          noc_occupancy="bsp")
                start = solve(instance, "elk-full", SolveOptions(timing="shared-noc"))
                got = {}
                for arm in ARMS:
                    began = time.perf_counter()
                    plan = solve(instance, "polish", SolveOptions(
                        threads=1, work_limit=args.work, timing="shared-noc",
                        warm_start="elk-full", warm_plan=start, params={"sooner": arm}))
                    report = check(plan_to_dict(plan))
                    assert report.valid, report.violations
                    got[arm] = (plan.claims.makespan_ns, time.perf_counter() - began)
                for arm in ARMS:
                    ratios[arm].append(got[arm][0] / got[1][0])
                cells = " | ".join(f"{ns:,}, {s:.0f}" for ns, s in got.values())
                print(f"| {model} b{batch} KV{kv} | {len(instance.ops)} | "
                      f"{start.claims.makespan_ns:,} | {cells} |", flush=True)
    print()
    for arm in ARMS:
        r = ratios[arm]
        print(f"sooner={arm}: makespan / sooner=1's, median {statistics.median(r):.5f}, "
              f"min {min(r):.5f}, max {max(r):.5f}; lower on {sum(x < 1 for x in r)}, "
              f"higher on {sum(x > 1 for x in r)} of {len(r)}")


if __name__ == "__main__":
    main()
