"""`elk-opt`: the command line. Subcommands live in `elk_opt.commands`, one module each.

Every expected failure (bad input, unknown names, infeasible requests) ends in one clear line
on stderr and exit code 2; an interrupt exits 130. Outputs are written atomically.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from elk_opt.errors import InputError, UsageError

COMMAND_MODULES = (
    "instance",
    "models",
    "chips",
    "plans",
    "collect",
    "solve",
    "bound",
    "verify",
    "demo",
    "compare",
    "gap",
    "sweep",
    "reproduce",
    "simulate",
    "lower",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="elk-opt", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"elk_opt.commands.{name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (InputError, UsageError) as e:
        print(f"elk-opt {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"elk-opt {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
