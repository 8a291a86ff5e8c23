"""The certificates `benchmarks/grid` keeps (the Figure 17 grid under both cost models, cited
by docs/reproduction.md and BENCHMARKS.md) still hold under the current code: each plan passes
`verify`, its makespan, bound and gap agree with it, and every bound covers its order. Bounds
are recomputed on two cells only (`elk-opt certify --check FILE` does it on any, in minutes
per file), so that a change to a bound's code that would fail `--check` on the kept
certificates shows here first. So is `benchmarks/artifact`'s certificate of the Elk
implementation's own decoder (docs/calibration.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from elk_opt.certification.check import check
from elk_opt.frontend.artifact import artifact_instance
from elk_opt.io import instance_from_dict
from elk_opt.json_input import read_json
from elk_opt.studies.paper import BATCHES, KV_LENS, MODELS

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
CELLS = BENCHMARKS / "grid" / "cells"
ARTIFACT = BENCHMARKS / "artifact" / "elk-artifact-l40.cert.json.gz"
KEYS = [f"{m}-b{b}-kv{kv}-{c}" for c in ("elk-paper", "analytic") for m in MODELS
        for b in BATCHES for kv in KV_LENS]


@pytest.mark.parametrize("key", KEYS)
def test_a_kept_certificate_holds_and_matches_its_row(key):
    path = CELLS / f"{key}.cert.json.gz"
    doc = read_json(path)
    assert check(doc, str(path), max_recompute_s=0).problems == []
    row = read_json(CELLS / f"{key}.json")
    assert (row["plan_ns"], row["bound_ns"]) == (doc["makespan_ns"], doc["lower_bound_ns"])


# (cell, the longest recorded bound recomputed): the smallest cell, every bound; the largest
# model at batch 64, whose best bound is the fluid MIP split over repeats (its layer windows
# left out)
RECOMPUTED = [("opt-30b-b16-kv2048-analytic", 10.0), ("llama2-70b-b64-kv2048-elk-paper", 10.5)]


@pytest.mark.parametrize(("key", "most_s"), RECOMPUTED)
def test_a_kept_certificate_bounds_come_out_again_with_the_current_code(key, most_s):
    path = CELLS / f"{key}.cert.json.gz"
    doc = read_json(path)
    checked = check(doc, str(path), max_recompute_s=most_s)
    assert checked.problems == [] and checked.unconfirmed == []
    best = max(doc["bounds"], key=lambda b: b["ns"] or 0)["name"]
    assert best in checked.recomputed and "fluid" in checked.recomputed


def test_the_kept_artifact_certificate_holds_on_the_instance_the_command_builds():
    doc = read_json(ARTIFACT)
    assert instance_from_dict(doc["plan"]["instance"]).ops == artifact_instance().ops
    checked = check(doc, str(ARTIFACT), max_recompute_s=10.0)  # all but the layer windows
    assert checked.problems == [] and checked.unconfirmed == []
    assert {"fluid", "fluid-sram"} <= set(checked.recomputed)
