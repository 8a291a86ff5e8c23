"""Flag types and flag groups shared by every command, so a flag means the same everywhere.

Each type rejects a value the command could not use, before any work starts: argparse then
prints one line naming the flag and the value, and the command exits 2. Numbers must be
finite; counts positive; seeds non-negative; relative gaps within [0, 1]; an output file must
be writable and not a directory; an output folder must not be an existing file.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from elk_opt.errors import InputError
from elk_opt.io import check_writable
from elk_opt.problem import DEFAULT_TIMING, TIMINGS


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


def positive_int(text: str) -> int:
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def nonnegative_int(text: str) -> int:
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}")
    return value


def output_file(text: str) -> str:
    """A file the command will write (atomically); checked before the work that fills it."""
    try:
        check_writable(text)
    except InputError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def output_dir(text: str) -> str:
    """A folder the command will create if needed."""
    if not text:
        raise argparse.ArgumentTypeError("output folder is empty")
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text}: exists and is not a directory")
    return text


def add_timing(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timing", choices=TIMINGS, default=DEFAULT_TIMING,
                   help="the semantics every method optimizes and claims: shared-noc "
                        "(DESIGN.md 5b, the default) or separate-noc (section 5)")


def add_cold(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cold", action="store_true",
                   help="exact methods start without a warm start (default: from the best "
                        "heuristic plan, named in their claims; it changes no claim)")


def add_executor(p: argparse.ArgumentParser, executors: tuple[str, ...]) -> None:
    p.add_argument("--executor", choices=executors, default="local")
    p.add_argument("--workers", type=positive_int, default=None,
                   help="worker processes (default: one per CPU)")
    p.add_argument("--address", default=None, help="scheduler address of an existing cluster")


def add_quiet(p: argparse.ArgumentParser) -> None:
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress on stderr (a bar on a terminal, else plain lines); "
                        "errors still show")
