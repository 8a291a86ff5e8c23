"""Free execution order (R2) against the instance's: CP-SAT's proven optima and time to prove.

python benchmarks/bench_exec_order.py [--limit 20] [--tiny 4] [--no-zoo]

Per instance and timing (section 5 `separate-noc`, 5b `shared-noc`): `cpsat` on one thread in
the instance's order (cold), then with `--exec-order free` warm-started from that plan (an
instance-order plan is a valid free-order start); the makespan, status, claimed bound and wall
time of each, every plan checked by `verify`. Instances: tiny two-chains-that-join
instances (5 ops, 2 pairs each, seeded, with NoC port demands so 5b differs from 5), and zoo
slices at small batch: Llama2-7B decode one layer, DiT-XL/2 one block, Llama2-7B `forward`
one layer (`elk-opt instance MODEL --batch 1 --layers 1 ...`). The instance-order solve is
the baseline measured in the same run; a free optimum above an instance-order optimum would
be a bug and stops the run.
"""

from __future__ import annotations

import argparse
import platform
import random
import sys
import time

from elk_opt.frontend.zoo import model_instance
from elk_opt.io import plan_to_dict
from elk_opt.methods import solve
from elk_opt.problem import Chip, ExecPlan, Instance, Noc, Op, Plan, PreloadPlan, Warmup
from elk_opt.solution import SolveOptions
from verify import check

JOIN = [(), (0,), (), (2,), (1, 3)]  # two chains of two ops, joined by the fifth


def two_chains(seed: int) -> Instance:
    """Five ops, two chains that join; two pairs per op, port use on some instructions."""
    rng = random.Random(seed)
    ops = []
    for i, inputs in enumerate(JOIN):
        execs = tuple(ExecPlan(id=k, time_ns=rng.randint(50, 600), space_bytes=rng.randint(5, 40),
                               noc_bytes=0, noc_ns=rng.choice([0, rng.randint(20, 600)]))
                      for k in range(2))
        preloads = tuple(PreloadPlan(id=k, space_bytes=rng.randint(5, 40),
                                     load_ns=rng.randint(50, 600),
                                     noc_ns=rng.choice([0, rng.randint(20, 600)]))
                         for k in range(2))
        warmup = tuple(Warmup(preload=q, exec=p, time_ns=rng.randint(0, 20))
                       for q in range(2) for p in range(2))
        ops.append(Op(name=f"op{i}", kind="test", layer=None, inputs=inputs, hbm_bytes=0,
                      flops=0, exec_plans=execs, preload_plans=preloads, warmup=warmup))
    chip = Chip(name="tiny", cores=1, sram_bytes=90, hbm_bytes_per_s=1, clock_hz=1,
                noc=Noc(topology="all_to_all", link_bytes_per_s=1_000_000_000))
    return Instance(name=f"two-chains-{seed}", chip=chip, ops=tuple(ops))


def zoo_slices() -> list[Instance]:
    return [model_instance("llama2-7b", batch=1, kv_len=512, layers=1, mode="decode"),
            model_instance("dit-xl-2", batch=1, layers=1),
            model_instance("llama2-7b", batch=1, kv_len=128, layers=1, mode="forward")]


def run(instance: Instance, timing: str, order: str, limit: float,
        warm: Plan | None = None) -> tuple[Plan, float]:
    started = time.perf_counter()
    plan = solve(instance, "cpsat", SolveOptions(timing=timing, exec_order=order, threads=1,
                                                 time_limit_s=limit, warm_plan=warm,
                                                 warm_start="cpsat" if warm else None))
    wall = time.perf_counter() - started
    assert check(plan_to_dict(plan)).valid, (instance.name, timing, order)
    assert plan.claims is not None and plan.claims.params["exec_order"] == order
    return plan, wall


def shown(plan: Plan) -> str:
    c = plan.claims
    assert c is not None
    return f"{c.makespan_ns:,}" + ("" if c.status == "optimal"
                                   else f" ({c.status}, bound {c.lower_bound_ns:,})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=20.0, help="seconds per solve")
    parser.add_argument("--tiny", type=int, default=4, help="tiny instances (seeds 0..N-1)")
    parser.add_argument("--no-zoo", action="store_true")
    args = parser.parse_args()
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()},"
          f" {args.limit:g} s per solve, 1 thread; instance order cold, free from its plan")
    print("| instance | ops | timing | instance order | s | free order | s | free / instance |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    run(two_chains(99), "separate-noc", "instance", args.limit)  # imports, not timed
    instances = [two_chains(seed) for seed in range(args.tiny)]
    if not args.no_zoo:
        instances += zoo_slices()
    for instance in instances:
        for timing in ("separate-noc", "shared-noc"):
            fixed, fixed_s = run(instance, timing, "instance", args.limit)
            free, free_s = run(instance, timing, "free", args.limit, warm=fixed)
            a, b = fixed.claims, free.claims
            assert a is not None and b is not None
            if a.status == b.status == "optimal" and b.makespan_ns > a.makespan_ns:
                print(f"BUG: free optimum {b.makespan_ns} above the instance order's "
                      f"{a.makespan_ns}")
                return 1
            print(f"| {instance.name} | {len(instance.ops)} | {timing} | {shown(fixed)} | "
                  f"{fixed_s:.2f} | {shown(free)} | {free_s:.2f} | "
                  f"{b.makespan_ns / a.makespan_ns:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
