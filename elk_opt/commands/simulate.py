"""`elk-opt simulate plan.json`: replay a plan with shared HBM, NoC and SRAM ports.

Accepts a plan (`elk-plan/1`, lowered on the fly) or a lowered `elk-device-program/1`.
`--sharing` picks what is shared: `full` (HBM, NoC and SRAM ports; the default, also
`--contention`), `port` (only the NoC port: section 5b exactly) or `none` (section 5 exactly,
also `--no-contention`). `--chip` replays on another chip's network (same cores and SRAM per
core).
"""

from __future__ import annotations

import argparse
import json
import sys

from elk_opt.commands.flags import output_file
from elk_opt.files import save_json
from elk_opt.frontend.chips import load_chip
from elk_opt.io import plan_from_dict
from elk_opt.json_input import read_json
from elk_opt.lower import DEVICE_FORMAT, device_program_from_dict, lower, retarget
from elk_opt.simulator import (
    EXACT_SHARING,
    SHARINGS,
    SimResult,
    analytic_makespans,
    exact_makespan,
    simulate_program,
)
from elk_opt.simulator.trace import trace_events


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="event simulation with shared HBM, NoC and SRAM ports",
                       description="Replay a plan, or a lowered device program, with shared "
                                   "HBM, NoC and SRAM ports (max-min fair fluid flows).")
    p.add_argument("plan", metavar="plan.json", help="a plan or a lowered device program")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--sharing", choices=SHARINGS, default="full",
                      help="what a load and an execute share: full (HBM, NoC and SRAM ports, "
                           "max-min fair; default), port (only the NoC port: section 5b "
                           "exactly) or none (section 5 exactly)")
    mode.add_argument("--contention", dest="sharing", action="store_const", const="full",
                      help="same as --sharing full")
    mode.add_argument("--no-contention", dest="sharing", action="store_const", const="none",
                      help="same as --sharing none")
    p.add_argument("--chip", default=None, metavar="NAME_OR_TOML",
                   help="replay on this chip's network (same cores and SRAM per core)")
    p.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    p.add_argument("--trace", default=None, type=output_file, metavar="trace.json",
                   help="write a Chrome trace-event file (open in ui.perfetto.dev)")
    p.add_argument("--plot", default=None, type=output_file, metavar="timeline.png",
                   help="write a Gantt chart with SRAM and bandwidth timelines")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    raw = read_json(args.plan)
    method = layers = None  # what the plot can say about the plan: a device program has neither
    if isinstance(raw, dict) and raw.get("format") == DEVICE_FORMAT:
        dp = device_program_from_dict(raw, args.plan)
        analytic = shared_noc = None  # the program's exact replays
        if args.chip is not None:  # the analytic makespan on the program's own chip
            analytic = exact_makespan(dp, EXACT_SHARING[dp.timing])
            dp = retarget(dp, load_chip(args.chip))
    else:
        plan = plan_from_dict(raw, args.plan)
        method = plan.claims.method if plan.claims else None
        layers = [op.layer for op in plan.instance.ops]
        chip = load_chip(args.chip) if args.chip else None
        analytic, shared_noc = analytic_makespans(plan, chip)
        dp = lower(plan, chip)
    print(f"simulating {dp.name}: {len(dp.op_names)} ops on {dp.chip.name} "
          f"({dp.chip.noc.topology}), sharing {args.sharing}...", file=sys.stderr)
    result = simulate_program(dp, sharing=args.sharing, analytic_ns=analytic,
                              shared_noc_ns=shared_noc)
    if result.peak_sram_bytes > result.sram_bytes:
        print(f"warning: peak SRAM {result.peak_sram_bytes:,} B per core exceeds the "
              f"{result.sram_bytes:,} B available (rule R5)", file=sys.stderr)
    if args.trace:
        save_json(args.trace, trace_events(result))
    if args.plot:
        from elk_opt.simulator.plot import plot_timeline
        plot_timeline(result, dp.chip, args.plot, method=method, name=dp.name, layers=layers)
    if args.json:
        print(json.dumps(result.summary()))
    else:
        _print_summary(result)
    return 0


def _print_summary(r: SimResult) -> None:
    b = r.breakdown
    print(f"{r.chip} ({r.topology}, {r.label}): makespan {r.makespan_ns:,} ns")
    print(f"  {r.slowdown:.3f}x the plan's analytic {r.analytic_makespan_ns:,} ns ({r.timing}), "
          f"{r.slowdown_vs_shared_noc:.3f}x section 5b's {r.shared_noc_makespan_ns:,} ns")
    print(f"  HBM {r.hbm_util:.1%}  NoC {r.noc_util:.1%}  {r.tflops:,.1f} TFLOPS  "
          f"peak SRAM {r.peak_sram_bytes:,} of {r.sram_bytes:,} B per core")
    print(f"  overlapped {b.overlapped_ns:,.0f} ns, exec only {b.exec_only_ns:,.0f} ns, "
          f"preload only {b.preload_only_ns:,.0f} ns, stall {b.stall_ns:,.0f} ns")
    if r.bottlenecks:
        print("  busiest: " + ", ".join(f"{name} {util:.0%}" for name, util in r.bottlenecks))
    print(f"  {r.events:,} events in {r.wall_s:.3f} s")
