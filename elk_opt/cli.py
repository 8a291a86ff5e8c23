"""`elk-opt`: the command line. Subcommands live in `elk_opt.commands`, one module each.

Exit codes: 0 done, 1 a plan breaks the rules, 2 unusable input or flags (one line on stderr,
never a traceback), 130 interrupted (SIGINT), 143 terminated (SIGTERM). Interrupts unwind:
temporary files are removed, worker processes ended, finished study cells kept. Outputs are
written atomically; `-` is standard output (messages then go to stderr); a device or FIFO is
written through, never replaced; an output that is also an input is refused. A closed output
pipe (`| head`) ends the command quietly, as Unix tools do; standard output on a full device
is one error line and exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import io
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from elk_opt import interrupts
from elk_opt.commands.flags import check_outputs
from elk_opt.errors import InputError, UsageError
from elk_opt.files import STDOUT, data_on_stdout

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
    "profile",
    "tile",
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
    _fill_closed_descriptors()
    for stream in (sys.stdout, sys.stderr):  # a lone surrogate in a name prints escaped
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    try:
        return _run(argv)
    except BrokenPipeError:
        _silence_stdout()  # nobody reads stdout any more: the flush at exit must be silent
        return BROKEN_PIPE_EXIT


def _fill_closed_descriptors() -> None:
    """Started with stdin, stdout or stderr closed (`>&-`): put /dev/null there, so that no
    file the command opens (or a solver's log) takes its number. sys.stdout stays None, and
    an output to `-` is refused."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)


def _silence_stdout() -> None:
    if sys.stdout is not None:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _stdout_failed(e: OSError) -> bool:
    """An OSError from writing stdout (ENOSPC on /dev/full, EIO), not from a named file."""
    return e.filename is None and e.errno in _STDOUT_ERRNOS


_STDOUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG, errno.EBADF})


def _run(argv: Sequence[str] | None) -> int:
    command = "elk-opt"
    try:
        try:
            args = build_parser().parse_args(argv)  # imports every command: may take seconds
        except SystemExit as e:  # --help, or a bad flag already reported in one line
            return e.code if isinstance(e.code, int) else 2
        command = f"elk-opt {args.command}"
        outputs = check_outputs(args)
        with data_on_stdout() if STDOUT in outputs else contextlib.nullcontext():
            code = int(args.func(args) or 0)
        if sys.stdout is not None:
            sys.stdout.flush()  # a closed pipe or a full device shows here, not at exit
        return code
    except (InputError, UsageError) as e:
        print(f"{command}: error: {e}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, interrupts.Terminated) as e:
        return _interrupted(command, e)
    except Exception as e:
        if interrupts.terminated():  # a library turned the Terminated into an error of its own
            return _interrupted(command, interrupts.Terminated())
        if isinstance(e, BrokenPipeError) or not (isinstance(e, OSError) and _stdout_failed(e)):
            raise
        print(f"{command}: error: cannot write standard output ({e.strerror or e})",
              file=sys.stderr)
        _silence_stdout()
        return 2


def _interrupted(command: str, e: BaseException) -> int:
    notes = "; ".join(getattr(e, "__notes__", []))
    print(f"{command}: interrupted ({interrupts.signal_name(e)})"
          f"{'; ' + notes if notes else ''}", file=sys.stderr)
    return interrupts.exit_code(e)


if __name__ == "__main__":
    sys.exit(main())
