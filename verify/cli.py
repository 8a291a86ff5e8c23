"""Command line of the checker: exit 0 valid, 1 rules broken, 2 unreadable or malformed.

Files may be gzipped; a folder stands for every plan file under it (verify/folder.py).

Like other Unix tools it stops quietly when its reader goes away (`verify --json *.json | head`,
exit 141 = 128 + SIGPIPE) and exits 130 on an interrupt; it writes no files.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import signal
import sys
import time
import zlib
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from verify.checker import Report, check
from verify.folder import failure_line, plan_files, summary_line
from verify.jsontext import parse
from verify.reading import Malformed

VALID, BROKEN, UNREADABLE = 0, 1, 2
PIPE_CLOSED = 128 + signal.SIGPIPE
INTERRUPTED = 130
GZIP_MAGIC = b"\x1f\x8b"
MAX_GUNZIPPED_BYTES = 2**30  # far above a 100,000-op plan
PROGRESS_INTERVAL_S = 10.0  # a folder of large plans: a count line on stderr at most this often
DESCRIPTION = ("Check elk-plan/1 files (plain or gzipped) against the rules a plan must obey "
               "(R1-R6: every op loaded and run once, dependencies, load before run, chosen "
               "plans exist, SRAM fits, claims true; docs/spec.md section 4). A folder"
               " checks every *.plan.json and "
               "*.plan.json.gz under it and prints one line per plan that fails, then a "
               "summary. Exit 0 all valid, 1 rules broken, 2 unreadable (2 wins over 1: any "
               "unreadable file gives 2).")


MAX_BYTES = 2**30  # the most read of one file (an endless /dev/zero stops here)
_CHUNK = 2**24  # read in pieces: an interrupt is handled between two
NO_STDIN = "standard input is not supported: give a file name"


def read(path: str) -> Any:
    """The parsed JSON document of a plain or gzipped file (told by its first two bytes);
    raises Malformed with the file's problem."""
    if path == "-":
        raise Malformed(NO_STDIN)
    try:
        data = bytearray()
        with open(path, "rb") as f:
            while chunk := f.read(min(_CHUNK, MAX_BYTES + 1 - len(data))):
                data += chunk
                if len(data) > MAX_BYTES:
                    raise Malformed(f"larger than {MAX_BYTES:,} bytes, the most verify reads")
        data = bytes(data)
    except OSError as e:
        raise Malformed(f"cannot read: {e.strerror or e}") from None
    if data[:2] == GZIP_MAGIC:
        data = _gunzip(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Malformed(f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    return parse(text)


def _gunzip(data: bytes) -> bytes:
    """A gzip stream's content, at most MAX_GUNZIPPED_BYTES of it (a gzip bomb is refused)."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            out = f.read(MAX_GUNZIPPED_BYTES + 1)
    except (OSError, EOFError, zlib.error) as e:
        raise Malformed(f"not a readable gzip file ({e})") from None
    if len(out) > MAX_GUNZIPPED_BYTES:
        raise Malformed(f"gzip data decompresses to more than {MAX_GUNZIPPED_BYTES:,} B")
    return out


def verify_file(path: str) -> tuple[int, dict[str, Any], str]:
    """(exit code, JSON report, human text) for one plan file."""
    return _verify(path, path)


def json_report(plan: str | os.PathLike | Any, file: str | None = None) -> dict[str, Any]:
    """The report `verify --json` prints for one plan: `plan` is a path to a plan file, or a
    parsed `elk-plan/1` document, named `file` in the report (null when not given).

    An unreadable or malformed plan gives `{"file", "valid": false, "malformed": why}`.
    """
    if isinstance(plan, str | os.PathLike):
        plan = os.fspath(plan)
        file = plan if file is None else file
    return _verify(plan, file)[1]


def _verify(source: Any, file: str | None) -> tuple[int, dict[str, Any], str]:
    """Check a path (str) or a parsed document: (exit code, JSON report, human text)."""
    try:
        report = check(read(source) if isinstance(source, str) else source)
    except Malformed as e:
        text = f"{file}: unreadable: {e}"
        return UNREADABLE, {"file": file, "valid": False, "malformed": str(e)}, text
    return (VALID if report.valid else BROKEN), _as_json(file, report), _as_text(file, report)


def _as_json(path: str | None, report: Report) -> dict[str, Any]:
    return {"file": path, "valid": report.valid, "ops": report.ops, "timing": report.timing,
            "makespan_ns": report.makespan_ns, "peak_sram_bytes": report.peak_sram_bytes,
            "peak_at": report.peak_at, "sram_bytes": report.sram_bytes,
            "unchecked": list(report.unchecked),
            "violations": [asdict(v) for v in report.violations]}


def _as_text(path: str | None, report: Report) -> str:
    facts = [f"{report.ops} ops", f"{report.timing} timing"]
    if report.makespan_ns is not None:
        facts.append(f"makespan {report.makespan_ns:,} ns")
    if report.peak_sram_bytes is not None:
        facts.append(f"peak SRAM {report.peak_sram_bytes:,} B of {report.sram_bytes:,} B "
                     f"at {report.peak_at}")
    if report.claims:
        facts.append(f"claims {report.claims.get('method')!s}/{report.claims.get('status')!s}")
    head = f"{path}: {'valid' if report.valid else 'INVALID'}: {', '.join(facts)}"
    if report.valid:
        return head
    rules = sorted({v.rule for v in report.violations})
    count = len(report.violations)
    lines = [head, f"{count} violation{'' if count == 1 else 's'} of {', '.join(rules)}:"]
    lines += [f"  {v.message}" for v in report.violations]
    if report.unchecked:
        lines.append(f"not checked, the program cannot be timed: {', '.join(report.unchecked)}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="verify", description=DESCRIPTION)
    parser.add_argument("plans", nargs="+", metavar="plan.json|DIR")
    parser.add_argument("--json", action="store_true", help="print a machine-readable report")
    args = parser.parse_args(argv)
    for stream in (sys.stdout, sys.stderr):  # a lone surrogate in a name prints escaped
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    try:
        return _run(args.plans, args.json)
    except BrokenPipeError:
        # Nobody reads on: stop quietly, and keep Python from failing again at its final flush.
        _silence_stdout()
        return PIPE_CLOSED
    except KeyboardInterrupt:
        print("verify: interrupted", file=sys.stderr)
        return INTERRUPTED
    except OSError as e:  # stdout on a full device (ENOSPC) or a failing disk (EIO)
        if e.filename is not None:
            raise
        print(f"verify: error: cannot write standard output ({e.strerror or e})",
              file=sys.stderr)
        _silence_stdout()
        return UNREADABLE


def _silence_stdout() -> None:
    if sys.stdout is not None:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _run(paths: list[str], as_json: bool) -> int:
    if sys.stdout is None:  # started with stdout closed (`>&-`): the verdict is the exit code
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (lives as long as the process)
    worst = VALID
    reports = []
    for path in paths:
        if os.path.isdir(path):
            code, found = _run_folder(path, as_json)
            reports += found
        else:
            code, report, text = verify_file(path)
            if as_json:
                reports.append(report)
            else:
                print(text, file=sys.stdout if code != UNREADABLE else sys.stderr, flush=True)
        worst = max(worst, code)
    if as_json:
        one_file = len(paths) == 1 and not os.path.isdir(paths[0])
        print(json.dumps(reports[0] if one_file else reports, indent=2), flush=True)
    return worst


def _run_folder(folder: str, as_json: bool) -> tuple[int, list[dict[str, Any]]]:
    """Check every plan file under `folder`: (worst exit code, their JSON reports). A folder
    with no plan file is unreadable input (exit 2): nothing was checked."""
    files = plan_files(folder)
    if not files:
        print(f"{folder}: no *.plan.json or *.plan.json.gz files under it", file=sys.stderr)
        return UNREADABLE, []
    codes, reports = [], []
    started = last = time.monotonic()
    for k, path in enumerate(files, 1):
        code, report, _text = verify_file(path)
        codes.append(code)
        reports.append(report)
        if code != VALID and not as_json:
            print(failure_line(report), file=sys.stdout if code != UNREADABLE else sys.stderr,
                  flush=True)
        now = time.monotonic()
        if now - last >= PROGRESS_INTERVAL_S and k < len(files):
            print(f"verify {folder}: {k}/{len(files)} plans checked, {now - started:.0f} s",
                  file=sys.stderr, flush=True)
            last = now
    if not as_json:
        print(summary_line(folder, codes), flush=True)
    return max(codes), reports
