"""`elk-opt schema instance|plan|certificate`: print a JSON Schema shipped in the package."""

from __future__ import annotations

import argparse

from elk_opt.schemas import NAMES, schema_text


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("schema", help="print the JSON Schema of a format",
                       description="Print the JSON Schema (draft 2020-12) of elk-instance/1, "
                                   "elk-plan/1 or elk-certificate/1. The plan schema refers to "
                                   "instance.schema.json and the certificate schema to "
                                   "plan.schema.json by file name: save them under those "
                                   "names side by side.")
    p.add_argument("name", choices=NAMES)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print(schema_text(args.name), end="")
    return 0
