"""Heuristic regression baselines: no heuristic gets worse, nothing beats a proven optimum.

The baseline (tests/baselines/heuristics.json, with its instances) is refreshed deliberately
with `elk-opt gap --suite baseline --update-baseline -o DIR`.
"""

import json
from pathlib import Path

from elk_opt.methods import heuristics
from elk_opt.studies.baseline import TOLERANCE, check_baseline, recorded_methods

BASELINE = Path(__file__).parent / "baselines" / "heuristics.json"


def test_no_heuristic_regresses_and_none_beats_an_optimum():
    checked, problems = check_baseline(BASELINE)
    assert checked >= len(heuristics()) * 16
    assert not problems, "\n".join(f"{p.instance} {p.method}: {p.message}" for p in problems)


def test_every_heuristic_has_a_record_and_optima_are_recorded():
    assert set(heuristics()) <= recorded_methods(BASELINE)
    doc = json.loads(BASELINE.read_text())
    assert doc["tolerance"] == TOLERANCE
    optima = [e["optimum_ns"] for e in doc["instances"].values()]
    assert sum(o is not None for o in optima) >= len(optima) // 2
    for entry in doc["instances"].values():
        if entry["optimum_ns"] is not None:
            assert min(entry["heuristics"].values()) >= entry["optimum_ns"]


def test_the_check_catches_a_regression_and_an_impossible_win(tmp_path):
    doc = json.loads(BASELINE.read_text())
    key, entry = next(iter(doc["instances"].items()))
    doc["instances"] = {key: entry}
    (tmp_path / "instances").mkdir()
    (tmp_path / entry["file"]).write_text((BASELINE.parent / entry["file"]).read_text())
    best = min(entry["heuristics"].values())
    entry["heuristics"]["elk-full"] = int(entry["heuristics"]["elk-full"] * 0.99)
    entry["optimum_ns"] = best + 1
    path = tmp_path / "heuristics.json"
    path.write_text(json.dumps(doc))
    _checked, problems = check_baseline(path)
    messages = [p.message for p in problems]
    assert any("worse than the recorded" in m for m in messages)
    assert any("beats the proven optimum" in m for m in messages)
