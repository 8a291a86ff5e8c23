"""The `elk-paper` cost preset against the Elk artifact's calibration layer, and its build time.

Prints, for each cost model, the role-by-role comparison of
`elk_opt.frontend.cost.calibration` (same operators; our graph), then the whole Llama2-13B decode
step (batch 32, KV 2048, 40 layers): sums of least execute and least load times, and the build
time of the instance (median of `--runs` fresh builds, against the analytic
model's build in the same run).

    python benchmarks/elk_paper_calibration.py [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from elk_opt.frontend.chips import DEFAULT_CHIP, load_chip
from elk_opt.frontend.cost.calibration import compare, markdown
from elk_opt.frontend.zoo import model_instance


def step(spec: str) -> tuple[int, int, float]:
    """Least execute sum, least load sum and build seconds of the whole decode step."""
    started = time.perf_counter()
    inst = model_instance("llama2-13b", DEFAULT_CHIP, batch=32, kv_len=2048, cost_model=spec)
    took = time.perf_counter() - started
    run = sum(min(p.time_ns for p in op.exec_plans) for op in inst.ops)
    load = sum(min(q.load_ns for q in op.preload_plans) for op in inst.ops)
    return run, load, took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    chip = load_chip(DEFAULT_CHIP)
    for spec in ("elk-paper", "analytic"):
        print(f"## {spec} on {chip.name}\n")
        print(markdown(*compare(spec, chip)))
        print()
    for spec in ("elk-paper", "analytic"):
        results = [step(spec) for _ in range(args.runs)]
        run, load, _ = results[0]
        took = statistics.median(r[2] for r in results)
        print(f"{spec}: whole step {run / 1e6:.3f} ms of least execute times, "
              f"{load / 1e6:.3f} ms of least loads ({run / load:.2f}x); "
              f"build median {took:.2f} s of {args.runs}")


if __name__ == "__main__":
    main()
