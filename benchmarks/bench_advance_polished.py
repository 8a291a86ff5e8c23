"""Loads issued sooner on plans that carry releases: `polish`'s first move after the holds
(formulations.lns_advance), run alone on certificates' plans.

For each certificate: its plan's makespan, the pass's makespan, the moves kept and the wall
time. The plans are polish's (the grid's certificates), which carry releases; the pass drops
a moved load's release and times every try exactly.

    python benchmarks/bench_advance_polished.py CERT.json.gz [CERT.json.gz ...]
"""

from __future__ import annotations

import argparse
import platform
import time

from elk_opt.certification.certificate import read_plan_or_certificate
from elk_opt.evaluate import evaluate_plan
from formulations.lns_advance import advance_loads


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("certificates", nargs="+")
    args = p.parse_args()
    print(f"machine: {platform.machine()}, Python {platform.python_version()}")
    print("| certificate | ops | plan (ns) | after the pass (ns) | change | moves kept "
          "| wall (s) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for path in args.certificates:
        plan, _ = read_plan_or_certificate(path)
        assert plan.claims is not None
        started = time.perf_counter()
        sooner, kept = advance_loads(plan.instance, plan, None)
        wall = time.perf_counter() - started
        before, after = plan.claims.makespan_ns, evaluate_plan(sooner).makespan_ns
        name = path.rsplit("/", 1)[-1].removesuffix(".cert.json.gz")
        print(f"| {name} | {len(plan.instance.ops)} | {before:,} | {after:,} | "
              f"{100 * (after / before - 1):+.3f}% | {kept} | {wall:.1f} |", flush=True)


if __name__ == "__main__":
    main()
