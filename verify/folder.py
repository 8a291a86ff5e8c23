"""`verify DIR`: the plan files under a folder, and the one line a failing one gets.

A study keeps every plan it scores as `*.plan.json.gz` (or `*.plan.json`); checking a whole study
prints only what fails (the file and its first broken rule), then one summary line.
"""

from __future__ import annotations

import os
from typing import Any

PLAN_SUFFIXES = (".plan.json", ".plan.json.gz")


def plan_files(folder: str) -> list[str]:
    """Every `*.plan.json` and `*.plan.json.gz` under `folder`, at any depth, sorted."""
    return sorted(os.path.join(root, name) for root, _dirs, files in os.walk(folder)
                  for name in files if name.endswith(PLAN_SUFFIXES))


def failure_line(report: dict[str, Any]) -> str:
    """One line for a plan that is not valid: its file and its first broken rule, or why it
    could not be read."""
    file = report["file"]
    if "malformed" in report:
        return f"{file}: unreadable: {report['malformed']}"
    violations = report["violations"]
    more = len(violations) - 1
    first = violations[0]["message"] if violations else "no rule named"
    return f"{file}: INVALID: {first}" + (f" (and {more} more)" if more > 0 else "")


def summary_line(folder: str, codes: list[int]) -> str:
    valid, broken, unreadable = (codes.count(k) for k in range(3))
    return (f"{folder}: {len(codes)} plan{'' if len(codes) == 1 else 's'}: {valid} valid, "
            f"{broken} broken, {unreadable} unreadable")
