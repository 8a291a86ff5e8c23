"""`elk-opt lower plan.json -o device-program.json`: the Elk paper's device program."""

from __future__ import annotations

import argparse

from elk_opt.commands.flags import output_file
from elk_opt.frontend.chips import load_chip
from elk_opt.io import load_plan
from elk_opt.lower import ExecuteCall, lower, save_device_program


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lower", help="lower a plan to per-core preload_async/execute calls",
                       description="Lower a plan to the abstract device program of the Elk "
                                   "paper (section 4.5): preload_async and execute calls run "
                                   "by every core, with done tags and the tile-to-core "
                                   "mapping. `elk-opt simulate` replays it.")
    p.add_argument("plan", metavar="plan.json")
    p.add_argument("-o", "--output", required=True, type=output_file,
                   metavar="device-program.json")
    p.add_argument("--chip", default=None, metavar="NAME_OR_TOML",
                   help="map onto this chip's network (same cores and SRAM per core)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    plan = load_plan(args.plan)
    dp = lower(plan, load_chip(args.chip) if args.chip else None)
    save_device_program(args.output, dp)
    executes = sum(isinstance(c, ExecuteCall) for c in dp.calls)
    print(f"{dp.name}: {executes} execute and {len(dp.calls) - executes} preload_async calls "
          f"per core, {dp.chip.cores} cores ({dp.scheme} mapping on {dp.chip.noc.topology}) "
          f"-> {args.output}")
    return 0
