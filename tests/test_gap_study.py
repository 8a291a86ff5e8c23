"""The gap study: resumable, honest gaps, every plan verified, and executors that agree."""

import csv
from dataclasses import replace

import pytest

from elk_opt.errors import UsageError
from elk_opt.methods import METHODS
from elk_opt.studies.executors import run_all
from elk_opt.studies.gap import CellTask, run_cell, run_study
from elk_opt.studies.report import write_report
from elk_opt.studies.suites import load_suite, parse_suite

SUITE = """
[[instance]]
source = "synthetic"
ops = [4, 6]
plans = 2
seed = 5
tightness = [0.2, 0.9]
"""


def methods() -> list[str]:
    return [m for m, info in METHODS.items() if info.family in ("heuristic", "exact")]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    out = tmp_path_factory.mktemp("gap")
    suite = out / "suite.toml"
    suite.write_text(SUITE)
    specs = load_suite(str(suite))
    cells = run_study(specs, methods(), out, time_limit_s=20, executor="serial")
    write_report(cells, out)
    return specs, out


def test_every_cell_is_verified_and_gaps_are_honest(study):
    _specs, out = study
    rows = list(csv.DictReader((out / "gap.csv").open()))
    assert len(rows) == 4 * len(methods())
    for row in rows:
        assert row["error"] == "" and row["verified"] == "True", row
        if row["reference_kind"] == "optimum":
            assert float(row["gap"]) >= 0
        if row["lower_bound_ns"]:
            assert int(row["lower_bound_ns"]) <= int(row["makespan_ns"])
    summary = (out / "summary.md").read_text()
    assert "PROBLEM" not in summary
    assert (out / "gap_by_method.png").stat().st_size > 0


def test_rerunning_a_finished_study_changes_nothing(study, capsys):
    specs, out = study
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    cells = run_study(specs, methods(), out, time_limit_s=20, executor="serial")
    write_report(cells, out)
    after = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert before == after
    total = 4 * len(methods())
    assert f"resuming: {total} of {total} cells already done" in capsys.readouterr().err


def test_an_interrupted_study_resumes_only_missing_cells(study, capsys):
    specs, out = study
    victim = next((out / "cells").glob("*__basic.json"))
    victim.unlink()
    run_study(specs, methods(), out, time_limit_s=20, executor="serial")
    err = capsys.readouterr().err
    assert err.count(" basic: ") == 1 and victim.exists()


def test_other_settings_in_the_same_folder_are_refused(study):
    specs, out = study
    with pytest.raises(UsageError, match="other settings"):
        run_study(specs, ["basic"], out, time_limit_s=20, executor="serial")


def test_suite_errors_name_the_field():
    with pytest.raises(Exception, match=r"instance\[0\].ops: must be int"):
        parse_suite('[[instance]]\nsource = "synthetic"\nops = "x"\n', "s.toml")
    with pytest.raises(Exception, match=r"instance\[0\].source: must be one of"):
        parse_suite('[[instance]]\nsource = "nope"\n', "s.toml")


def test_dask_cluster_gives_the_local_results():
    specs = parse_suite(SUITE, "suite")
    tasks = [CellTask(s, "basic", 5.0, 1) for s in specs]
    serial = {t.spec.key: replace(c, solve_s=0) for t, c in run_all(run_cell, tasks, "serial")}
    on_dask = {t.spec.key: replace(c, solve_s=0)
               for t, c in run_all(run_cell, tasks, "dask", workers=2)}
    assert on_dask == serial
