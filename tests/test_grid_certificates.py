"""The certificates `benchmarks/grid` keeps (the Figure 17 grid under both cost models, cited
by docs/reproduction.md and BENCHMARKS.md) still hold under the current code: each plan passes
`verify`, its makespan, bound and gap agree with it, and every bound covers its order. Bounds
are not recomputed here (`elk-opt certify --check FILE` does, in minutes per file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from elk_opt.certification.check import check
from elk_opt.io import read_json
from elk_opt.studies.paper import BATCHES, KV_LENS, MODELS

CELLS = Path(__file__).resolve().parent.parent / "benchmarks" / "grid" / "cells"
KEYS = [f"{m}-b{b}-kv{kv}-{c}" for c in ("elk-paper", "analytic") for m in MODELS
        for b in BATCHES for kv in KV_LENS]


@pytest.mark.parametrize("key", KEYS)
def test_a_kept_certificate_holds_and_matches_its_row(key):
    path = CELLS / f"{key}.cert.json.gz"
    doc = read_json(path)
    assert check(doc, str(path), max_recompute_s=0).problems == []
    row = read_json(CELLS / f"{key}.json")
    assert (row["plan_ns"], row["bound_ns"]) == (doc["makespan_ns"], doc["lower_bound_ns"])
