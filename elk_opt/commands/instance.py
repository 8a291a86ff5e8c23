"""`elk-opt instance SOURCE -o instance.json`: build a problem instance."""

from __future__ import annotations

import argparse

from elk_opt.errors import UsageError
from elk_opt.io import save_instance
from elk_opt.synthetic import synthetic_instance


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("instance", help="build an elk-instance/1 file",
                       description="Build an instance. SOURCE 'synthetic' draws a seeded "
                                   "synthetic decoder-like instance.")
    p.add_argument("source", metavar="SOURCE", help="'synthetic'")
    p.add_argument("-o", "--output", required=True, metavar="instance.json")
    g = p.add_argument_group("synthetic")
    g.add_argument("--ops", type=int, default=48, help="number of ops (default 48)")
    g.add_argument("--plans", type=int, default=4, help="execute plans per op (default 4)")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--tightness", type=float, default=0.5,
                   help="0 roomy .. 1 tightest feasible SRAM (default 0.5)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.source != "synthetic":
        raise UsageError(f"unknown instance source {args.source!r}; available: synthetic")
    try:
        instance = synthetic_instance(args.ops, args.plans, args.seed, args.tightness)
    except ValueError as e:
        raise UsageError(str(e)) from None
    save_instance(args.output, instance)
    print(f"{instance.name}: {len(instance.ops)} ops, SRAM {instance.chip.sram_bytes:,} B/core "
          f"-> {args.output}")
    return 0
