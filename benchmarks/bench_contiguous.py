"""The fluid MIP with and without one load running at each execute start, on decoder slices.

For the calibration layer and each configuration (a zoo model cut to a few layers, default
chip, bsp occupancy, shared-noc): the fluid MIP (elk_opt.bounds.fluid_milp, the baseline)
and the same MIP with the rows of elk_opt.bounds.contiguous, each with its wall time and
whether it finished, one thread, in the same run. Optional `--plans CERT.json...`: the best
plan of a certificate of the same instance (matched by name), for the gap each bound leaves.

    PYTHONPATH=. python benchmarks/bench_contiguous.py [--configs llama2-13b:64:2048:1,...]
        [--cost-model elk-paper] [--time-limit 120] [--plans CERT.json ...]
"""

from __future__ import annotations

import json
import platform

from bench_fluid_milp import instances, slice_arguments

from elk_opt.bounds.fluid_milp import fluid_milp_bound
from elk_opt.json_input import read_json

DEFAULT_CONFIGS = ("llama2-13b:64:2048:1,llama2-70b:64:2048:1,opt-30b:64:4096:1,"
                   "gemma2-27b:64:4096:1,llama2-13b:64:2048:2")


def best_plans(paths: list[str]) -> dict[str, int]:
    """Instance name -> the makespan of the best plan a certificate records."""
    out: dict[str, int] = {}
    for path in paths:
        cert = read_json(path)
        # certify of a plan keeps it and records a better one found on the way
        made = (cert.get("better_plan") or cert)["makespan_ns"]
        name = cert["plan"]["instance"]["name"]
        out[name] = min(out.get(name, made), made)
    return out


def main() -> None:
    ap = slice_arguments(__doc__, DEFAULT_CONFIGS)
    ap.add_argument("--plans", nargs="*", default=[])
    args = ap.parse_args()
    plans = best_plans(args.plans)
    print(f"machine: {platform.machine()}, {platform.python_version()}, "
          f"cost model {args.cost_model}, one thread, time limit {args.time_limit:g} s")
    print("| instance | ops | fluid-milp ns (s) | fluid-contiguous ns (s) | adds | best plan ns "
          "| gap before | gap after |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, instance in instances(args.configs, args.cost_model):
        cells = []
        values = []
        for contiguous in (False, True):
            fb = fluid_milp_bound(instance, "shared-noc", args.time_limit, contiguous=contiguous)
            values.append(fb.bound_ns)
            late = "" if fb.complete else ", stopped"
            shown = "-" if fb.bound_ns is None else f"{fb.bound_ns:,}"
            cells.append(f"{shown} ({fb.wall_s:.1f}{late})")
        before, after = values
        adds = (f"{after / before - 1:+.2%}" if before and after else "-")
        made = plans.get(instance.name)
        gaps = [f"{made / v - 1:.2%}" if made and v else "-" for v in values]
        print(f"| {name} | {len(instance.ops)} | {cells[0]} | {cells[1]} | {adds} | "
              f"{'-' if made is None else f'{made:,}'} | {gaps[0]} | {gaps[1]} |", flush=True)
    print(json.dumps({"configs": args.configs, "time_limit_s": args.time_limit}))


if __name__ == "__main__":
    main()
