"""`elk-opt`: the command line. Subcommands live in `elk_opt.commands`, one module each.

Exit codes: 0 done, 1 a plan breaks the rules, 2 unusable input or flags (one line on stderr,
never a traceback), 130 interrupted (SIGINT), 143 terminated (SIGTERM). Interrupts unwind:
temporary files are removed, worker processes ended, finished study cells kept. Outputs are
written atomically. A closed output pipe (`| head`) ends the command quietly, as Unix tools do.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from elk_opt import interrupts
from elk_opt.errors import InputError, UsageError

COMMAND_MODULES = (
    "instance",
    "models",
    "chips",
    "plans",
    "collect",
    "solve",
    "import-solution",
    "bound",
    "certify",
    "verify",
    "demo",
    "compare",
    "gap",
    "sweep",
    "reproduce",
    "simulate",
    "lower",
    "schema",
)
BROKEN_PIPE_EXIT = 141  # 128 + SIGPIPE: what the shell reports for a tool killed by the pipe


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (`elk-opt solve: error: argument ...`)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


DESCRIPTION = """\
Schedule deep-learning models on inter-core-connected AI chips with off-chip
HBM (Graphcore IPU class): per operator, which partition plan runs, how each
core's SRAM is split between execution and preloads, the preload order, and
how many preloads overlap each execute. Heuristics (the Elk paper's Basic,
Static, Elk-Dyn, Elk-Full; an XLA-style LHS), exact CP-SAT and ILP models with
proven optima and lower bounds, an independent checker, an event simulator."""

EPILOG = """\
start here:
  elk-opt demo                           the main job on a built-in model
  elk-opt instance llama2-13b -o i.json  a zoo model (or an ONNX file)
  elk-opt solve i.json --method elk-full -o plan.json
  verify plan.json                       check a plan, from any tool
  elk-opt COMMAND --help                 one command's options

docs, in the repository: README.md, docs/spec.md (formats, rules, timings),
docs/glossary.md (terms, column headers), docs/api.md (Python API)."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="elk-opt", description=DESCRIPTION, epilog=EPILOG,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"elk_opt.commands.{name.replace('-', '_')}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    interrupts.install()
    try:
        code = _run(argv)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return code
    except BrokenPipeError:
        # Nobody reads stdout any more: point it at /dev/null so the flush at exit is silent.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return BROKEN_PIPE_EXIT


def _run(argv: Sequence[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help, or a bad flag already reported in one line
        return e.code if isinstance(e.code, int) else 2
    command = f"elk-opt {args.command}"
    try:
        return int(args.func(args) or 0)
    except (InputError, UsageError) as e:
        print(f"{command}: error: {e}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, interrupts.Terminated) as e:
        notes = "; ".join(getattr(e, "__notes__", []))
        print(f"{command}: interrupted ({interrupts.signal_name(e)})"
              f"{'; ' + notes if notes else ''}", file=sys.stderr)
        return interrupts.exit_code(e)


if __name__ == "__main__":
    sys.exit(main())
