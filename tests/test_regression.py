"""Heuristic regression baselines: no heuristic gets worse, nothing beats a proven optimum,
each record checked under the timing it was made under.

The baseline (tests/baselines/heuristics.json, with its instances) is refreshed deliberately
with `elk-opt gap --suite baseline --timing T --update-baseline -o DIR`.
"""

import json
from pathlib import Path

import pytest

from elk_opt.cli import main
from elk_opt.errors import InputError
from elk_opt.methods import heuristics
from elk_opt.studies.baseline import (
    TOLERANCE,
    check_baseline,
    read_baseline,
    recorded_methods,
    write_baseline,
)
from elk_opt.studies.gap import Cell
from elk_opt.studies.suites import parse_suite

BASELINE = Path(__file__).parent / "baselines" / "heuristics.json"


RECORDED = list(json.loads(BASELINE.read_text())["instances"])


# One test per recorded instance (the whole baseline, split so that test processes share it).
@pytest.mark.parametrize("key", RECORDED)
def test_no_heuristic_regresses_and_none_beats_an_optimum(tmp_path, key):
    path, doc = _one_instance_baseline(tmp_path, key)
    path.write_text(json.dumps(doc))
    checked, problems = check_baseline(path)
    assert checked == len(heuristics()) * len(doc["instances"][key]["timings"])
    assert not problems, "\n".join(f"{p.instance} {p.timing} {p.method}: {p.message}"
                                   for p in problems)


def test_every_heuristic_has_a_record_and_optima_are_recorded():
    doc = read_baseline(BASELINE)
    assert doc["tolerance"] == TOLERANCE
    timings = {t for e in doc["instances"].values() for t in e["timings"]}
    assert timings, "no records"
    assert sum(len(e["timings"]) for e in doc["instances"].values()) >= 16
    for timing in timings:
        assert set(heuristics()) <= recorded_methods(BASELINE, timing)
        records = [e["timings"][timing] for e in doc["instances"].values()
                   if timing in e["timings"]]
        optima = [r["optimum_ns"] for r in records]
        # section 5b is harder to prove: cold CP-SAT, 60 s per instance, proved 15 of 32
        share = 3 if timing == "shared-noc" else 2
        assert sum(o is not None for o in optima) >= len(optima) // share
        for record in records:
            if record["optimum_ns"] is not None:
                assert min(record["heuristics"].values()) >= record["optimum_ns"]


def _one_instance_baseline(tmp_path: Path, key: str | None = None) -> tuple[Path, dict]:
    """The baseline cut down to one recorded instance (default the first), beside a copy of
    that instance's file; the caller writes the document to the path."""
    doc = json.loads(BASELINE.read_text())
    key = key or next(iter(doc["instances"]))
    entry = doc["instances"][key]
    doc["instances"] = {key: entry}
    (tmp_path / "instances").mkdir()
    (tmp_path / entry["file"]).write_text((BASELINE.parent / entry["file"]).read_text())
    return tmp_path / "heuristics.json", doc


def test_the_check_catches_a_regression_and_an_impossible_win(tmp_path):
    path, doc = _one_instance_baseline(tmp_path)
    [entry] = doc["instances"].values()
    timing, record = next(iter(entry["timings"].items()))
    best = min(record["heuristics"].values())
    record["heuristics"]["elk-full"] = int(record["heuristics"]["elk-full"] * 0.99)
    record["optimum_ns"] = best + 1
    path.write_text(json.dumps(doc))
    _checked, problems = check_baseline(path)
    messages = [p.message for p in problems if p.timing == timing]
    assert any("worse than the recorded" in m for m in messages)
    assert any("beats the proven optimum" in m for m in messages)


def test_each_record_is_checked_under_its_own_timing(tmp_path):
    """The section-5 records, copied under shared-noc too: only the copy is flagged, since
    sharing the NoC port slows this instance's plans by more than the tolerance."""
    path, doc = _one_instance_baseline(tmp_path)
    [entry] = doc["instances"].values()
    record = entry["timings"]["separate-noc"]
    entry["timings"]["shared-noc"] = json.loads(json.dumps(record))
    path.write_text(json.dumps(doc))
    checked, problems = check_baseline(path)
    assert checked == 2 * len(heuristics())
    assert problems and {p.timing for p in problems} == {"shared-noc"}


SUITE = '[[instance]]\nsource = "synthetic"\nops = 5\nplans = 2\nseed = [1, 2]\n'


def _cells(specs, timing: str, makespan: int) -> list[Cell]:
    return [Cell(s.key, 5, m, fam, status, makespan, None, 0.0, True, None, None, "",
                 timing, 5.0)
            for s in specs for m, fam, status in (("basic", "heuristic", "heuristic"),
                                                  ("cpsat", "exact", "optimal"))]


def test_refreshing_one_timing_keeps_the_others(tmp_path):
    specs = parse_suite(SUITE, "suite")
    path = tmp_path / "heuristics.json"
    assert write_baseline(specs, _cells(specs, "separate-noc", 100), path, "separate-noc") == []
    assert write_baseline(specs, _cells(specs, "shared-noc", 120), path, "shared-noc") == []
    doc = read_baseline(path)
    for entry in doc["instances"].values():
        assert entry["timings"]["separate-noc"] == {"optimum_ns": 100,
                                                    "heuristics": {"basic": 100}}
        assert entry["timings"]["shared-noc"] == {"optimum_ns": 120,
                                                  "heuristics": {"basic": 120}}
        assert (tmp_path / entry["file"]).exists()

    # an instance whose file changes loses the records made on the old file
    changed = specs[0].key
    stored = tmp_path / "instances" / f"{changed}.json"
    stored.write_text(stored.read_text().replace('"ops":', '"note":"old","ops":', 1))
    assert write_baseline(specs, _cells(specs, "shared-noc", 130), path,
                          "shared-noc") == [changed]
    doc = read_baseline(path)
    assert set(doc["instances"][changed]["timings"]) == {"shared-noc"}
    assert set(doc["instances"][specs[1].key]["timings"]) == {"separate-noc", "shared-noc"}


def test_a_baseline_without_timings_is_refused(tmp_path):
    path = tmp_path / "heuristics.json"
    path.write_text(json.dumps({"tolerance": TOLERANCE, "instances": {
        "x": {"file": "instances/x.json", "optimum_ns": 1, "heuristics": {}}}}))
    with pytest.raises(InputError, match=r"instances.x.timings: missing"):
        check_baseline(path)


@pytest.mark.parametrize(("text", "named"), [
    ("{not json", "invalid JSON at line 1"),
    ("[]", "instances: must be an object"),
    ('{"tolerance": 0.001}', "instances: must be an object"),
    ('{"tolerance": "x", "instances": {}}', "tolerance: must be a number"),
    ('{"tolerance": 0.001, "instances": {"x": {"timings": {}}}}', "instances.x.file"),
    ('{"tolerance": 0.001, "instances": {"x": {"file": "x.json", "timings": []}}}',
     "instances.x.timings: must be an object"),
    ('{"tolerance": 0.001, "instances": {"x": {"file": "x.json", "timings": '
     '{"shared-noc": 5}}}}', "instances.x.timings.shared-noc: must hold"),
])
def test_an_unreadable_baseline_is_refused_before_the_study_runs(tmp_path, capsys, text,
                                                                  named):
    path = tmp_path / "heuristics.json"
    path.write_text(text)
    suite = tmp_path / "s.toml"
    suite.write_text('[[instance]]\nsource = "synthetic"\nops = 4\nplans = 2\nseed = 1\n')
    out = tmp_path / "study"
    assert main(["gap", "--suite", str(suite), "--methods", "basic", "-o", str(out),
                 "--baseline", str(path), "--update-baseline", "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and named in err[0], err
    assert not out.exists()  # refused before the study ran
