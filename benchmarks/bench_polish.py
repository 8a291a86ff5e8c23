"""`polish` at scale under section 5b: Elk-Full, then polish from it at several time limits.

python benchmarks/bench_polish.py [--limits 60,120,300] [--cases l70,g27,cal] [--threads 2]
                                  [--bounds l70=NS,g27=NS,cal=NS] [--periodic on|off|both]

Cases (default chip, `--cost-model elk-paper`, bsp NoC occupancy, shared-noc): `l70` Llama2-70B
decode b64 KV4096, `g27` Gemma2-27B decode b64 KV4096, `g27s` Gemma2-27B decode b64 KV2048,
`cal` the Elk artifact's Llama2-13B
calibration layer (elk_opt/frontend/cost/data). Elk-Full runs once per case (its plan is the
warm start of every polish run, so each limit is the polish's own time). Every plan is checked
by `verify` (5b) before it is reported. `--bounds` gives the best bound `elk-opt bound` reports
per case (run separately: its fluid LP and window bound take minutes), against which gaps are
quoted; without it, the best linear-time bound. `--periodic both` runs each limit with and
without polish's whole-layer copies (`formulations/lns_periodic.py`), one after the other.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

from elk_opt.bounds.cheap import best_cheap_bound
from elk_opt.frontend.zoo import model_instance
from elk_opt.io import load_instance, plan_to_dict
from elk_opt.methods import solve
from elk_opt.problem import Instance, Plan
from elk_opt.solution import SolveOptions
from verify import check

CAL = Path(__file__).resolve().parents[1] / "elk_opt/frontend/cost/data" \
    / "elk-artifact-llama2-13b-b32-kv2048-layer.json"
TIMING = "shared-noc"
MODELS = {"l70": ("llama2-70b", 4096), "g27": ("gemma2-27b", 4096), "g27s": ("gemma2-27b", 2048),
          "o30": ("opt-30b", 4096), "l13": ("llama2-13b", 2048)}


def case(name: str) -> Instance:
    if name == "cal":
        return load_instance(CAL)
    model, kv_len = MODELS[name]
    return model_instance(model, batch=64, kv_len=kv_len, cost_model="elk-paper",
                          noc_occupancy="bsp")


def checked(plan: Plan) -> Plan:
    report = check(plan_to_dict(plan))
    if not report.valid or report.makespan_ns != plan.claims.makespan_ns:
        raise SystemExit(f"INVALID plan from {plan.claims.method}: {report.violations[:3]}")
    return plan


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limits", default="60,120,300")
    ap.add_argument("--cases", default="l70,g27,cal")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bounds", default="", help="case=NS,... from `elk-opt bound`")
    ap.add_argument("--periodic", choices=("on", "off", "both"), default="on")
    args = ap.parse_args()
    bounds = dict(kv.split("=") for kv in args.bounds.split(",") if kv)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}; threads {args.threads}")
    print("| case | ops | method | limit s | makespan ns | wall s | bound ns | gap | "
          "windows solved / improved / twins applied / layers copied | stopped |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    periodic = {"on": (True,), "off": (False,), "both": (True, False)}[args.periodic]
    for name in args.cases.split(","):
        instance = case(name)
        bound = int(bounds.get(name, 0)) or best_cheap_bound(instance, TIMING)
        t = time.perf_counter()
        full = checked(solve(instance, "elk-full", SolveOptions(timing=TIMING)))
        wall = time.perf_counter() - t

        row(name, bound, "-", full, wall)
        for limit in (float(x) for x in args.limits.split(",")):
            for copies in periodic:
                t = time.perf_counter()
                plan = checked(solve(instance, "polish", SolveOptions(
                    timing=TIMING, time_limit_s=limit, threads=args.threads,
                    warm_start="elk-full", warm_plan=full, params={"periodic": copies})))
                row(name, bound, f"{limit:g}", plan, time.perf_counter() - t)


def row(name: str, bound: int, limit: str, plan: Plan, wall: float) -> None:
    ms = plan.claims.makespan_ns
    p = plan.claims.params
    method = plan.claims.method
    counts = (f"{p['windows_solved']} / {p['windows_improved']} / {p['twins_applied']} / "
              f"{p['layers_copied'] if p['periodic'] else 'off'}" if method == "polish" else "-")
    print(f"| {name} | {len(plan.instance.ops)} | {method} | {limit} | {ms:,} | {wall:.1f} | "
          f"{bound:,} | {100 * (ms / bound - 1):.2f}% | {counts} | {p.get('stopped', '-')} |",
          flush=True)


if __name__ == "__main__":
    main()
