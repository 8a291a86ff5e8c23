"""`elk-opt collect -o table.json`: measure a cost table (GEMM, memory copies) on this machine.

Use it with `elk-opt instance ... --cost-model table:table.json`.
"""

from __future__ import annotations

import argparse
import time

from elk_opt.commands.flags import output_file
from elk_opt.files import save_json


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("collect", help="measure a GEMM and copy cost table on this machine",
                       description=__doc__)
    p.add_argument("-o", "--output", required=True, type=output_file, metavar="table.json")
    p.add_argument("--quick", action="store_true", help="a small grid (seconds, for tests)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from elk_opt.frontend.cost.collect import collect

    started = time.perf_counter()
    table = collect(quick=args.quick)
    save_json(args.output, table)
    print(f"{len(table['gemm'])} GEMM and {len(table['collectives'])} copy points in "
          f"{time.perf_counter() - started:.1f} s -> {args.output}")
    return 0
