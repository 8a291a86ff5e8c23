"""Lower bounds: memory of the Ideal at training scale, and what each bound proves under 5b.

PYTHONPATH=. python benchmarks/bench_bounds.py [--sizes 20000,100000]
                                              [--dense-sizes 2000,5000] [--repeats 3]
PYTHONPATH=. python benchmarks/bench_bounds.py --table

Memory: synthetic decoder instances (elk_opt.frontend.synthetic, 4 plans per op). Peak memory is
tracemalloc's peak during the call (numpy's buffers included), above what the instance
already holds; times are medians. The baseline, in the same run, is the first implementation
of the Ideal (an n x n descendant matrix, kept as tests.test_bounds.dense_ideal), at sizes
where it still fits.

--table: every cheap bound and the fluid LP under both timings, on the Elk artifact's layer,
synthetic decoders and full zoo models, against the best heuristic plan under shared-noc (the
baseline: a bound can only be compared with plans).
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc
from collections.abc import Callable
from functools import partial

from elk_opt.bounds.ideal import ideal_bound
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.methods import solve
from tests.test_bounds import dense_ideal


def measure(call: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(median seconds, peak MiB) of `call`."""
    call()  # warm the instance's cached lookups, as a method's second call would find them
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    tracemalloc.start()
    call()
    _now, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return statistics.median(times), peak / 2**20


def table() -> None:
    from pathlib import Path

    from elk_opt.bounds.cheap import cheap_bounds
    from elk_opt.bounds.fluid import fluid_bound
    from elk_opt.frontend.zoo import DEFAULT_CHIP, model_instance
    from elk_opt.io import load_instance
    from elk_opt.methods import heuristics
    from elk_opt.solution import SolveOptions

    data = Path(__file__).parent.parent / "tests" / "data"
    cases = {
        "Elk artifact Llama2-13B layer (48 ops)": partial(
            load_instance, data / "elk-artifact-llama2-13b-b32-kv2048-layer.json"),
        "synthetic 48 ops, tightness 0.6": partial(synthetic_instance, 48, 4, 0, 0.6),
        "synthetic 400 ops": partial(synthetic_instance, 400, 4, 0),
        "llama2-13b decode (723 ops)": partial(model_instance, "llama2-13b", DEFAULT_CHIP),
        "llama2-70b decode (1,443 ops)": partial(model_instance, "llama2-70b", DEFAULT_CHIP),
    }
    print("| instance | best 5b heuristic | section-5 best bound | ideal | hbm-cut | port-cut "
          "| fluid 5b | fluid 5b s | 5b bound / heuristic |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, build in cases.items():
        instance = build()
        best = min(solve(instance, m, SolveOptions(timing="shared-noc")).claims.makespan_ns
                   for m in heuristics())
        cheap = cheap_bounds(instance, "shared-noc")
        separate = max(max(cheap_bounds(instance, "separate-noc").values()),
                       fluid_bound(instance, "separate-noc").bound_ns)
        fluid = fluid_bound(instance, "shared-noc")
        bound = max(max(cheap.values()), fluid.bound_ns)
        print(f"| {label} | {best:,} | {separate:,} | {cheap['ideal']:,} | "
              f"{cheap['hbm-cut']:,} | {cheap['port-cut']:,} | {fluid.bound_ns:,} | "
              f"{fluid.wall_s:.2f} | {bound / best:.3f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="20000,100000")
    ap.add_argument("--dense-sizes", default="2000,5000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--table", action="store_true")
    args = ap.parse_args()
    if args.table:
        table()
        return
    print("| ops | what | median s | peak MiB |")
    print("| --- | --- | --- | --- |")
    dense = [int(x) for x in args.dense_sizes.split(",") if x]
    sizes = [int(x) for x in args.sizes.split(",") if x]
    for n in sorted(set(dense) | set(sizes)):
        instance = synthetic_instance(ops=n, plans=4, seed=0)
        rows = [("ideal_bound", partial(ideal_bound, instance))]
        if n in dense:
            assert dense_ideal(instance) == ideal_bound(instance)
            rows.append(("dense reference (baseline)", partial(dense_ideal, instance)))
        if n in sizes:
            rows.append(("solve basic (reports the bound)", partial(solve, instance, "basic")))
        for what, call in rows:
            seconds, mib = measure(call, args.repeats)
            print(f"| {n:,} | {what} | {seconds:.3f} | {mib:,.1f} |", flush=True)


if __name__ == "__main__":
    main()
