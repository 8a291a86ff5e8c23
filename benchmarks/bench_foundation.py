"""Evaluator and verifier speed, each against a baseline measured in the same run.

python benchmarks/bench_foundation.py [--ops 100000] [--verify-ops 5000] [--repeat 5]

Baselines: for the evaluator, a bare loop over the same program (the floor of any one-pass
evaluator in Python); for the verifier, `json.loads` of the same plan file (the floor of any
tool that reads it).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

from elk_opt.evaluate import evaluate_plan
from elk_opt.io import plan_to_dict
from elk_opt.methods import solve
from elk_opt.synthetic import synthetic_instance
from verify import check


def median_s(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=100_000)
    ap.add_argument("--verify-ops", type=int, default=5_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {platform.python_implementation()} "
          f"{platform.python_version()}")

    plan = solve(synthetic_instance(ops=args.ops, plans=8, seed=0), "basic")

    def bare_loop():
        for _kind, _j in plan.program:
            pass

    base = median_s(bare_loop, args.repeat)
    ev = median_s(lambda: evaluate_plan(plan), args.repeat)
    print(f"evaluate {args.ops:,} ops: median {ev:.3f} s; bare loop {base:.4f} s; "
          f"ratio {ev / base:.1f}x")

    small = solve(synthetic_instance(ops=args.verify_ops, plans=8, seed=0), "basic")
    text = json.dumps(plan_to_dict(small))
    parse = median_s(lambda: json.loads(text), args.repeat)
    ver = median_s(lambda: check(json.loads(text)), args.repeat)
    print(f"verify {args.verify_ops:,} ops ({len(text) / 1e6:.1f} MB JSON): median {ver:.3f} s "
          f"incl. parsing; json.loads alone {parse:.3f} s; ratio {ver / parse:.1f}x")


if __name__ == "__main__":
    main()
