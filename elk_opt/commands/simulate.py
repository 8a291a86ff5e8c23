"""`elk-opt simulate plan.json`: replay a plan with shared HBM, NoC and SRAM ports.

Accepts a plan (`elk-plan/1`, lowered on the fly) or a lowered `elk-device-program/1`.
`--chip` replays on another chip's network (same cores and SRAM per core).
"""

from __future__ import annotations

import argparse
import json
import sys

from elk_opt.chips import load_chip
from elk_opt.evaluate import evaluate_plan
from elk_opt.io import plan_from_dict, read_json, save_json
from elk_opt.lower import DEVICE_FORMAT, device_program_from_dict, lower, retarget
from elk_opt.simulator import SimResult, simulate_program
from elk_opt.simulator.trace import trace_events


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="event simulation with shared HBM, NoC and SRAM ports",
                       description="Replay a plan, or a lowered device program, with shared "
                                   "HBM, NoC and SRAM ports (max-min fair fluid flows).")
    p.add_argument("plan", metavar="plan.json", help="a plan or a lowered device program")
    p.add_argument("--contention", action=argparse.BooleanOptionalAction, default=True,
                   help="share HBM, NoC and SRAM ports between concurrent activities "
                        "(--no-contention reproduces the analytic makespan)")
    p.add_argument("--chip", default=None, metavar="NAME_OR_TOML",
                   help="replay on this chip's network (same cores and SRAM per core)")
    p.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    p.add_argument("--trace", default=None, metavar="trace.json",
                   help="write a Chrome trace-event file (open in ui.perfetto.dev)")
    p.add_argument("--plot", default=None, metavar="timeline.png",
                   help="write a Gantt chart with SRAM and bandwidth timelines")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raw = read_json(args.plan)
    if isinstance(raw, dict) and raw.get("format") == DEVICE_FORMAT:
        dp = device_program_from_dict(raw, args.plan)
        analytic = None  # the replay without contention
        if args.chip is not None:
            dp = retarget(dp, load_chip(args.chip))
    else:
        plan = plan_from_dict(raw, args.plan)
        analytic = evaluate_plan(plan).makespan_ns
        dp = lower(plan, load_chip(args.chip) if args.chip else None)
    print(f"simulating {dp.name}: {len(dp.op_names)} ops on {dp.chip.name} "
          f"({dp.chip.noc.topology}), contention {'on' if args.contention else 'off'}...",
          file=sys.stderr)
    result = simulate_program(dp, contention=args.contention, analytic_ns=analytic)
    if result.peak_sram_bytes > result.sram_bytes:
        print(f"warning: peak SRAM {result.peak_sram_bytes:,} B per core exceeds the "
              f"{result.sram_bytes:,} B available (rule R5)", file=sys.stderr)
    if args.trace:
        save_json(args.trace, trace_events(result))
    if args.plot:
        from elk_opt.simulator.plot import plot_timeline
        plot_timeline(result, dp.chip, args.plot)
    if args.json:
        print(json.dumps(result.summary()))
    else:
        _print_summary(result)
    return 0


def _print_summary(r: SimResult) -> None:
    b = r.breakdown
    mode = "contention" if r.contention else "no contention"
    print(f"{r.chip} ({r.topology}, {mode}): makespan {r.makespan_ns:,} ns, "
          f"{r.slowdown:.3f}x the analytic {r.analytic_makespan_ns:,} ns")
    print(f"  HBM {r.hbm_util:.1%}  NoC {r.noc_util:.1%}  {r.tflops:,.1f} TFLOPS  "
          f"peak SRAM {r.peak_sram_bytes:,} of {r.sram_bytes:,} B per core")
    print(f"  overlapped {b.overlapped_ns:,.0f} ns, exec only {b.exec_only_ns:,.0f} ns, "
          f"preload only {b.preload_only_ns:,.0f} ns, stall {b.stall_ns:,.0f} ns")
    if r.bottlenecks:
        print("  busiest: " + ", ".join(f"{name} {util:.0%}" for name, util in r.bottlenecks))
    print(f"  {r.events:,} events in {r.wall_s:.3f} s")
