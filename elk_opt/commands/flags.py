"""Flag types and flag groups shared by every command, so a flag means the same everywhere.

Each type rejects a value the command could not use, before any work starts: argparse then
prints one line naming the flag and the value, and the command exits 2. Numbers must be
finite; counts positive and seeds non-negative, both within what the solvers take (a 32-bit
int); relative gaps within [0, 1]; an output file must be writable and not a directory (`-`
is standard output; a device or FIFO is written through, never replaced); an output folder
must not be an existing file. `check_outputs` refuses an output that is also an input.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from elk_opt.errors import InputError, UsageError
from elk_opt.files import STDOUT, check_writable
from elk_opt.problem import DEFAULT_TIMING, EXEC_ORDERS, TIMINGS


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def positive_float(text: str) -> float:
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return value


def unit_fraction(text: str) -> float:
    """A relative gap or a tightness: a number within [0, 1]."""
    value = _finite(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be within [0, 1], got {text!r}")
    return value


INT32_MAX = 2**31 - 1  # what OR-Tools, HiGHS and numpy's default integers take
MAX_THREADS = 1024  # threads or worker processes: far above any machine this runs on


def _bounded(text: str, low: int, high: int, what: str) -> int:
    value = _integer(text)
    if value < low:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    if value > high:
        raise argparse.ArgumentTypeError(f"must be at most {high:,}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    return _bounded(text, 1, INT32_MAX, "a positive integer")


def nonnegative_int(text: str) -> int:
    return _bounded(text, 0, INT32_MAX, "a non-negative integer")


def thread_count(text: str) -> int:
    """Threads or worker processes."""
    return _bounded(text, 1, MAX_THREADS, "a positive integer")


class OutputPath(str):
    """A path the command writes (an `output_file` flag's value); `-` is standard output."""


def output_file(text: str) -> OutputPath:
    """A file the command will write (atomically); checked before the work that fills it."""
    try:
        check_writable(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return OutputPath(text)


def check_outputs(args: argparse.Namespace) -> list[OutputPath]:
    """The command's outputs, once refused if one would overwrite an input named on the
    command line or another output, or if more than one is standard output."""
    outputs = [v for v in vars(args).values() if isinstance(v, OutputPath)]
    if sum(out == STDOUT for out in outputs) > 1:
        raise UsageError("only one output can be standard output (-)")
    inputs = [v for value in vars(args).values()
              for v in (value if isinstance(value, list) else [value])
              if isinstance(v, str) and not isinstance(v, OutputPath) and v != STDOUT]
    files = [out for out in outputs if out != STDOUT]
    for k, out in enumerate(files):
        for other in files[k + 1:]:
            if _same_file(out, other):
                raise UsageError(f"{out}: named as two outputs")
        for name in inputs:
            if _same_file(out, name) and os.path.isfile(out):
                raise UsageError(f"{out}: is also an input ({name}); name another output")
    return outputs


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # either absent or unreadable: not one existing file
        return os.path.realpath(a) == os.path.realpath(b) if a and b else False


def output_dir(text: str) -> str:
    """A folder the command will create if needed."""
    if not text:
        raise argparse.ArgumentTypeError("output folder is empty")
    try:
        if Path(text).exists() and not Path(text).is_dir():
            raise argparse.ArgumentTypeError(f"{text}: exists and is not a directory")
    except OSError as e:  # a name longer than the file system allows, a loop of links
        raise argparse.ArgumentTypeError(f"{text[:40]}...: {e.strerror or e}") from None
    return text


def add_timing(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timing", choices=TIMINGS, default=DEFAULT_TIMING,
                   help="the semantics every method optimizes and claims: shared-noc "
                        "(docs/spec.md 5b, the default) or separate-noc (section 5)")


def add_exec_order(p: argparse.ArgumentParser, study: bool = False) -> None:
    more = (" A study runs every method in the order asked: a default method list drops the "
            "methods that cannot (and says so); naming one of those is refused"
            if study else "")
    p.add_argument("--exec-order", choices=EXEC_ORDERS, default=None,
                   help="instance: execute the ops in the instance's order; free: any order "
                        "the dependencies allow (docs/spec.md R2). Default: the method's own "
                        "(instance for every method that lists no other)." + more)


def default_methods_in_order(listed: Sequence[str], exec_order: str | None) -> list[str]:
    """A study's default method list under `--exec-order`: the methods that cannot solve in
    that order are dropped and named on stderr (a method the user names is refused instead:
    `elk_opt.methods.solving_in`)."""
    from elk_opt.methods import skipped_for_order, solving_in

    skipped = skipped_for_order(listed, exec_order)  # type: ignore[arg-type]
    if skipped:
        print(f"--exec-order {exec_order}: skipping {', '.join(skipped)} (they solve only in "
              "the instance's order)", file=sys.stderr)
    return solving_in(listed, exec_order, named=False)  # type: ignore[arg-type]


def add_cold(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cold", action="store_true",
                   help="exact methods start without a warm start (default: from the best "
                        "heuristic plan, named in their claims; it changes no claim)")


def add_executor(p: argparse.ArgumentParser, executors: tuple[str, ...]) -> None:
    p.add_argument("--executor", choices=executors, default="local")
    p.add_argument("--workers", type=thread_count, default=None,
                   help="worker processes (default: one per CPU)")
    p.add_argument("--address", default=None, help="scheduler address of an existing cluster")


def add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress on stderr (a bar on a terminal, else plain lines); "
                        "errors still show")
