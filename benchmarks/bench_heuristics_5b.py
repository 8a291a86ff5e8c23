"""Every heuristic under both timings (docs/spec.md sections 5 and 5b), on the data issue 10 names.

python benchmarks/bench_heuristics_5b.py                 # calibration layer, x4 and x40 stacks,
                                                         # Llama2-13B b32 KV2048, bytes and bsp
python benchmarks/bench_heuristics_5b.py --stacks 1,4 --no-zoo --instance more.json ...
python benchmarks/bench_heuristics_5b.py --ablation      # Elk-Dyn's port-aware parts, one by one

Instances: the Elk artifact's calibration layer (48 ops, `noc_ns` in the bulk-synchronous
reading; docs/calibration.md) alone and stacked into k identical layers (op inputs shifted
by 48 per layer, `layer` set), the zoo's Llama2-13B decode (batch 32, KV 2048, default chip)
under each NoC occupancy (`bytes`, `bsp`; built with `noc_occupancy=`), and any instance files
given. Each method optimizes the timing it is scored under: one run per method and timing.
Every plan's claimed makespan is checked against the evaluator and rule R5; separate-noc
plans also against `verify` (tests/test_schedulers.py verifies both timings).

Columns: makespans in microseconds under separate-noc (s5) and shared-noc (s5b), the Ideal
bound, Elk-Full's ratios over Static and Elk-Dyn under 5b, the Ideal as a fraction of Elk-Full
under 5b, and Elk-Full's wall time under 5b with its ratio to its own separate-noc run
(the baseline, measured in the same run).
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import sys
import time
from pathlib import Path

from elk_opt.bounds.ideal import ideal_bound
from elk_opt.evaluate import evaluate_plan, fits_memory
from elk_opt.frontend.zoo import DEFAULT_CHIP, model_instance
from elk_opt.io import load_instance, plan_to_dict
from elk_opt.methods import solve
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions
from verify import check

CALIBRATION = str(Path(__file__).resolve().parent.parent / "elk_opt" / "frontend" / "cost"
                  / "data" / "elk-artifact-llama2-13b-b32-kv2048-layer.json")
METHODS = ("basic", "static", "lhs", "elk-dyn", "elk-full")
ABLATION = (("none", {"port_prices": 0, "port_score": 0, "hold_loads": 0}),
            ("prices only", {"port_score": 0, "hold_loads": 0}),
            ("score only", {"port_prices": 0, "hold_loads": 0}),
            ("holds only", {"port_prices": 0, "port_score": 0}),
            ("all (default)", {}))


def stacked(layer: Instance, layers: int) -> Instance:
    """`layers` copies of a one-layer instance, each reading the one before it."""
    width = len(layer.ops)
    ops = tuple(dataclasses.replace(op, name=f"L{k}.{op.name.split('.', 1)[-1]}", layer=k,
                                    inputs=tuple(j + k * width for j in op.inputs))
                for k in range(layers) for op in layer.ops)
    return dataclasses.replace(layer, name=f"{layer.name} x{layers}", ops=ops)


def checked(plan: Plan) -> Plan:
    claims = plan.claims
    assert claims is not None
    timed = evaluate_plan(plan)
    if claims.makespan_ns != timed.makespan_ns or not fits_memory(plan.instance, timed):
        raise SystemExit(f"{claims.method} plan for {plan.instance.name} breaks R5 or R6")
    if plan.timing == "separate-noc" and not check(plan_to_dict(plan)).valid:
        raise SystemExit(f"{claims.method} plan for {plan.instance.name} does not verify")
    return plan


def instances(args: argparse.Namespace) -> list[Instance]:
    out = []
    layer = load_instance(args.calibration)
    for k in (int(x) for x in args.stacks.split(",") if x):
        out.append(layer if k == 1 else stacked(layer, k))
    if not args.no_zoo:
        for occupancy in args.occupancies.split(","):
            inst = model_instance("llama2-13b", args.chip, batch=32, kv_len=2048,
                                  noc_occupancy=occupancy)
            out.append(dataclasses.replace(inst, name=f"{inst.name} ({occupancy})"))
    for path in args.instance:
        inst = load_instance(path)
        out.append(dataclasses.replace(inst, name=f"{inst.name} ({Path(path).stem})"))
    return out


def table(insts: list[Instance]) -> None:
    cells = " | ".join(f"{m} s5 / s5b" for m in METHODS)
    print(f"\n| instance | ops | Ideal | {cells} | Full/Static 5b | Full/Dyn 5b "
          f"| Ideal/Full 5b | Full s (5b / s5) |")
    print("|" + "---|" * (8 + len(METHODS)))
    for inst in insts:
        ms: dict[tuple[str, str], int] = {}
        wall: dict[str, float] = {}
        for method in METHODS:
            for timing in ("separate-noc", "shared-noc"):
                print(f"  {inst.name}: {method} {timing}...", file=sys.stderr, flush=True)
                started = time.perf_counter()
                plan = checked(solve(inst, method, SolveOptions(timing=timing)))
                if method == "elk-full":
                    wall[timing] = time.perf_counter() - started
                assert plan.claims is not None
                ms[method, timing] = plan.claims.makespan_ns
        ideal = ideal_bound(inst)
        full = ms["elk-full", "shared-noc"]
        row = " | ".join(f"{ms[m, 'separate-noc'] / 1e3:,.1f} / {ms[m, 'shared-noc'] / 1e3:,.1f}"
                         for m in METHODS)
        print(f"| {inst.name} | {len(inst.ops)} | {ideal / 1e3:,.1f} | {row} "
              f"| {ms['static', 'shared-noc'] / full:.3f} "
              f"| {ms['elk-dyn', 'shared-noc'] / full:.4f} | {100 * ideal / full:.2f}% "
              f"| {wall['shared-noc']:.1f} / {wall['separate-noc']:.1f} "
              f"({wall['shared-noc'] / wall['separate-noc']:.1f}x) |", flush=True)


def ablation(insts: list[Instance]) -> None:
    print("\nElk-Dyn under shared-noc, makespan in us, with its port-aware parts switched on "
          "one at a time (knobs port_prices, port_score, hold_loads):")
    print(f"\n| instance | {' | '.join(name for name, _ in ABLATION)} |")
    print("|" + "---|" * (1 + len(ABLATION)))
    for inst in insts:
        got = []
        for _name, params in ABLATION:
            plan = checked(solve(inst, "elk-dyn",
                                 SolveOptions(timing="shared-noc", params=params)))
            assert plan.claims is not None
            got.append(f"{plan.claims.makespan_ns / 1e3:,.1f}")
        print(f"| {inst.name} | {' | '.join(got)} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calibration", default=CALIBRATION)
    ap.add_argument("--stacks", default="1,4,40", help="layers per calibration stack")
    ap.add_argument("--no-zoo", action="store_true")
    ap.add_argument("--occupancies", default="bytes,bsp")
    ap.add_argument("--chip", default=DEFAULT_CHIP)
    ap.add_argument("--instance", nargs="*", default=[], help="more instance files")
    ap.add_argument("--ablation", action="store_true")
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, Python {platform.python_version()}")
    insts = instances(args)
    if args.ablation:
        ablation(insts)
    else:
        table(insts)


if __name__ == "__main__":
    main()
