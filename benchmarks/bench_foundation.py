"""Evaluator and verifier speed under both timings, each against a baseline in the same run.

python benchmarks/bench_foundation.py [--ops 100000] [--verify-ops 5000] [--plans 8] [--repeat 5]

Baselines: for the evaluator, a bare loop over the same program (the floor of any one-pass
evaluator in Python); for the verifier, `json.loads` of the same plan file (the floor of any
tool that reads it). The plans preload one op ahead where SRAM allows (Basic's program) but are
built here directly: `solve(..., "basic")` computes the Ideal bound, which does not scale to
100,000 ops.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

from elk_opt.evaluate import evaluate, evaluate_plan
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.io import plan_to_dict
from elk_opt.problem import TIMINGS, Choice, Claims, Instance, Instr, Plan
from verify import check


def median_s(fn, repeat: int, clock=time.perf_counter) -> float:
    """Median over `repeat` runs; `clock=time.process_time` for CPU time, which a loaded shared
    machine does not inflate the way it inflates wall time."""
    times = []
    for _ in range(repeat):
        t = clock()
        fn()
        times.append(clock() - t)
    return statistics.median(times)


def lookahead_plan(instance: Instance, timing: str) -> Plan:
    """Fastest pairs that fit alone, smallest preload first; op i+1 preloads during op i if it fits.

    Loads overlap executes, so the section-5b walk has port sharing to resolve.
    """
    sram = instance.chip.sram_bytes
    choice = []
    for op in instance.ops:
        fits = [(q, p) for q, p, _ in op.pairs() if max(q.space_bytes, p.space_bytes) <= sram]
        q, p = min(fits, key=lambda pair: (pair[1].time_ns, pair[0].space_bytes))
        choice.append(Choice(exec=p.id, preload=q.id))
    space = [max(op.exec_by_id[c.exec].space_bytes, op.preload_by_id[c.preload].space_bytes)
             for op, c in zip(instance.ops, choice, strict=True)]
    program: list[Instr] = [("P", 0)]
    for i in range(len(instance.ops) - 1):
        if space[i] + instance.ops[i + 1].preload_by_id[choice[i + 1].preload].space_bytes <= sram:
            program += [("P", i + 1), ("E", i)]
        else:
            program += [("E", i), ("P", i + 1)]
    program.append(("E", len(instance.ops) - 1))
    makespan = evaluate(instance, choice, program, timing=timing).makespan_ns  # type: ignore[arg-type]
    return Plan(instance=instance, choice=tuple(choice), program=tuple(program),
                claims=Claims(method="lookahead", status="heuristic", makespan_ns=makespan),
                timing=timing)  # type: ignore[arg-type]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=100_000)
    ap.add_argument("--verify-ops", type=int, default=5_000)
    ap.add_argument("--plans", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {platform.python_implementation()} "
          f"{platform.python_version()}")

    instance = synthetic_instance(ops=args.ops, plans=args.plans, seed=0)
    for timing in TIMINGS:
        plan = lookahead_plan(instance, timing)

        def bare_loop(plan=plan):
            for _kind, _j in plan.program:
                pass

        base = median_s(bare_loop, args.repeat)
        ev = median_s(lambda plan=plan: evaluate_plan(plan), args.repeat)
        cpu = median_s(lambda plan=plan: evaluate_plan(plan), args.repeat, time.process_time)
        print(f"evaluate {args.ops:,} ops, {timing}: median {ev:.3f} s wall, {cpu:.3f} s CPU; "
              f"bare loop {base:.4f} s; ratio {ev / base:.1f}x")

    small = (instance if args.verify_ops == args.ops
             else synthetic_instance(ops=args.verify_ops, plans=args.plans, seed=0))
    for timing in TIMINGS:
        text = json.dumps(plan_to_dict(lookahead_plan(small, timing)))
        doc = json.loads(text)
        report = check(doc)
        assert report.valid and report.timing == timing, report.violations[:3]
        parse = median_s(lambda text=text: json.loads(text), args.repeat)
        walk = median_s(lambda doc=doc: check(doc), args.repeat)
        ver = median_s(lambda text=text: check(json.loads(text)), args.repeat)
        print(f"verify {args.verify_ops:,} ops ({len(text) / 1e6:.1f} MB JSON), {timing}: "
              f"median {ver:.3f} s incl. parsing ({walk:.3f} s checking); json.loads alone "
              f"{parse:.3f} s; ratio {ver / parse:.1f}x")


if __name__ == "__main__":
    main()
