"""The plans a study keeps: every plan it scores, gzipped, where its cell can name it.

A worker packs the plan (`packed`: the `elk-plan/1` JSON, gzipped, ~50 times smaller than the
text for a whole model), so a cluster worker needs no shared disk; the study's own process
writes it (`keep`), atomically, before the cell that names it, so a cell never names a missing
file. `verify DIR` re-checks them all; every reader of plans takes `.json.gz` as `.json`.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from elk_opt.files import ensure_dir, write_atomic
from elk_opt.io import plan_to_dict
from elk_opt.problem import Plan

PLANS_DIR = "plans"
SUFFIX = ".plan.json.gz"

C = TypeVar("C")


@dataclass(frozen=True)
class Outcome(Generic[C]):
    """What a worker sends back: its cell, and the plan packed (None: no plan, e.g. an error)."""

    cell: C
    plan: bytes | None


def packed(plan: Plan) -> bytes:
    """The plan's JSON, gzipped; the same plan gives the same bytes (no time stamp)."""
    text = json.dumps(plan_to_dict(plan), separators=(",", ":")).encode("utf-8")
    return gzip.compress(text, mtime=0)


def keep(out: Path, name: str, data: bytes, folder: str = PLANS_DIR) -> str:
    """Write `data` to `out/folder/NAME.plan.json.gz` atomically; the path relative to `out`,
    which the cell records."""
    relative = Path(folder) / f"{file_stem(name)}{SUFFIX}"
    ensure_dir(out / relative.parent)
    write_atomic(out / relative, lambda f: f.write(data), mode="wb")
    return relative.as_posix()


def file_stem(name: str) -> str:
    """A cell name as a file name: anything but letters, digits, '.', '_', '-' and '@' becomes
    '_' (a chip given as a TOML path, for one)."""
    return re.sub(r"[^A-Za-z0-9._@-]+", "_", name)
