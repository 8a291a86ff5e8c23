"""`elk-opt verify plan.json`: the same checker as the `verify` command."""

from __future__ import annotations

import argparse

from verify.cli import DESCRIPTION
from verify.cli import main as verify_main


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("verify", help="check plans against docs/spec.md section 4",
                       description=DESCRIPTION)
    p.add_argument("plans", nargs="+", metavar="plan.json|DIR")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return verify_main([*args.plans, *(["--json"] if args.json else [])])
