"""The gap study: resumable, honest gaps, every plan verified, timings kept apart, and
executors that agree."""

import csv
import gzip
import json
from dataclasses import asdict, replace

import pytest

from elk_opt.cli import main
from elk_opt.errors import InputError, UsageError
from elk_opt.io import load_plan
from elk_opt.methods import METHODS
from elk_opt.studies.executors import run_all
from elk_opt.studies.gap import CellTask, run_cell, run_study
from elk_opt.studies.plans import keep
from elk_opt.studies.report import write_report
from elk_opt.studies.suites import BUILTIN_SUITES, load_suite, parse_suite

SUITE = """
[[instance]]
source = "synthetic"
ops = [4, 6]
plans = 2
seed = 5
tightness = [0.2, 0.9]
"""
TIMINGS = ("shared-noc", "separate-noc")


def methods() -> list[str]:
    return [m for m, info in METHODS.items() if info.family in ("heuristic", "exact")]


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    """The suite studied under each timing, in a folder of its own."""
    made = {}
    for timing in TIMINGS:
        out = tmp_path_factory.mktemp(f"gap-{timing}")
        suite = out / "suite.toml"
        suite.write_text(SUITE)
        specs = load_suite(str(suite))
        cells = run_study(specs, methods(), out, time_limit_s=20, timing=timing,
                          executor="serial")
        write_report(cells, out)
        made[timing] = (specs, out)
    return made


@pytest.fixture
def study(studies):
    return studies["shared-noc"]


@pytest.mark.parametrize("timing", TIMINGS)
def test_every_cell_is_verified_and_gaps_are_honest(studies, timing):
    _specs, out = studies[timing]
    rows = list(csv.DictReader((out / "gap.csv").open()))
    assert len(rows) == 4 * len(methods())
    for row in rows:
        assert row["timing"] == timing and float(row["time_limit_s"]) == 20
        assert row["error"] == "" and row["verified"] == "True", row
        if row["reference_kind"] == "optimum":
            assert float(row["gap"]) >= 0
        if row["lower_bound_ns"]:
            assert int(row["lower_bound_ns"]) <= int(row["makespan_ns"])
    summary = (out / "summary.md").read_text()
    assert f"Timing: {timing}" in summary
    assert "PROBLEM" not in summary
    assert (out / "gap_by_method.png").stat().st_size > 0


def test_shared_noc_is_never_faster_than_section_5(studies):
    """Sharing the port only slows a plan: the same method's 5b plan cannot beat the best
    section-5 plan (the section-5 optimum is a bound for 5b)."""
    best = {}
    for row in csv.DictReader((studies["separate-noc"][1] / "gap.csv").open()):
        if row["makespan_ns"]:
            best[row["instance"]] = min(best.get(row["instance"], 10**18),
                                        int(row["makespan_ns"]))
    for row in csv.DictReader((studies["shared-noc"][1] / "gap.csv").open()):
        if row["status"] == "optimal" or row["family"] == "exact":
            assert int(row["makespan_ns"]) >= best[row["instance"]], row


def test_rerunning_a_finished_study_changes_nothing(study, capsys):
    specs, out = study
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    cells = run_study(specs, methods(), out, time_limit_s=20, timing="shared-noc",
                      executor="serial", progress=True)
    write_report(cells, out)
    after = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert before == after
    total = 4 * len(methods())
    assert f"resuming: {total} of {total} cells already done" in capsys.readouterr().err


def test_an_interrupted_study_resumes_only_missing_cells(study, capsys):
    specs, out = study
    victim = next((out / "cells").glob("*__basic.json"))
    victim.unlink()
    run_study(specs, methods(), out, time_limit_s=20, timing="shared-noc", executor="serial",
              progress=True)
    err = capsys.readouterr().err
    assert err.count(" basic: ") == 1 and victim.exists()


def test_every_plan_is_kept_gzipped_and_verify_dir_checks_them(study, capsys):
    _specs, out = study
    cells = [json.loads(p.read_text()) for p in sorted((out / "cells").glob("*.json"))]
    for c in cells:
        assert c["plan"].startswith("plans/") and c["plan"].endswith(".plan.json.gz"), c
        plan = load_plan(out / c["plan"])
        assert plan.claims.makespan_ns == c["makespan_ns"] and plan.timing == c["timing"]
    named = [row["plan"] for row in csv.DictReader((out / "gap.csv").open())]
    assert sorted(named) == sorted(c["plan"] for c in cells)
    capsys.readouterr()
    assert main(["verify", str(out)]) == 0
    assert f"{len(cells)} plans: {len(cells)} valid, 0 broken, 0 unreadable" in \
        capsys.readouterr().out


def test_a_cell_whose_plan_is_gone_runs_again(study, capsys):
    specs, out = study
    victim = next((out / "plans").glob("*__static.plan.json.gz"))
    victim.unlink()
    run_study(specs, methods(), out, time_limit_s=20, timing="shared-noc", executor="serial",
              progress=True)
    assert capsys.readouterr().err.count(" static: ") == 1 and victim.exists()


def test_other_settings_in_the_same_folder_are_refused(study):
    specs, out = study
    with pytest.raises(UsageError, match="other methods"):
        run_study(specs, ["basic"], out, time_limit_s=20, timing="shared-noc",
                  executor="serial")
    with pytest.raises(UsageError, match="other timing"):
        run_study(specs, methods(), out, time_limit_s=20, timing="separate-noc",
                  executor="serial")


def test_cells_of_another_timing_are_never_reused(tmp_path):
    specs = parse_suite(SUITE, "suite")[:1]
    (tmp_path / "cells").mkdir(parents=True)
    stale = run_cell(CellTask(specs[0], "basic", 5.0, 1, "separate-noc")).cell
    name = f"{specs[0].key}__basic.json"
    (tmp_path / "cells" / name).write_text(json.dumps(asdict(stale)))
    [cell] = run_study(specs, ["basic"], tmp_path, time_limit_s=5, timing="shared-noc",
                       executor="serial")
    assert cell.timing == "shared-noc"
    assert json.loads((tmp_path / "cells" / name).read_text())["timing"] == "shared-noc"


def test_a_longer_limit_retries_cells_that_ran_out_of_time(tmp_path, capsys):
    """An exact cell without a proven optimum (or without any plan) ran out of time: a resume
    with a longer limit runs it again; the same or a shorter limit keeps it, and heuristic
    cells are kept whatever the limit."""
    specs = parse_suite(SUITE, "suite")[:1]
    key = specs[0].key
    cells_dir = tmp_path / "cells"
    cells_dir.mkdir()
    done = run_cell(CellTask(specs[0], "basic", 1.0, 1, "shared-noc"))
    heuristic = replace(done.cell, plan=keep(tmp_path, f"{key}__basic", done.plan))
    timed_out = replace(run_cell(CellTask(specs[0], "cpsat", 1.0, 1, "shared-noc")).cell,
                        status="error", makespan_ns=None, error="cpsat found no plan in 1 s")
    for cell in (heuristic, timed_out):
        (cells_dir / f"{key}__{cell.method}.json").write_text(json.dumps(asdict(cell)))

    kept = run_study(specs, ["basic", "cpsat"], tmp_path, time_limit_s=0.5,
                     timing="shared-noc", executor="serial")
    assert kept == [heuristic, timed_out]
    again = run_study(specs, ["basic", "cpsat"], tmp_path, time_limit_s=10,
                      timing="shared-noc", executor="serial", progress=True)
    assert again[0] == heuristic
    assert again[1].time_limit_s == 10 and again[1].makespan_ns is not None
    assert "resuming: 1 of 2 cells already done" in capsys.readouterr().err


def test_a_broken_cell_file_is_named(tmp_path):
    specs = parse_suite(SUITE, "suite")[:1]
    (tmp_path / "cells").mkdir()
    (tmp_path / "cells" / f"{specs[0].key}__basic.json").write_text("{")
    with pytest.raises(InputError, match="not a study cell"):
        run_study(specs, ["basic"], tmp_path, time_limit_s=5, timing="shared-noc",
                  executor="serial")


def test_an_instance_that_cannot_be_built_is_an_error_cell(tmp_path):
    [spec] = parse_suite('[[instance]]\nsource = "file"\npath = "missing.json"\n', "s")
    outcome = run_cell(CellTask(spec, "basic", 5.0, 1, "shared-noc"))
    assert outcome.cell.status == "error" and "no such file" in outcome.cell.error
    assert outcome.plan is None


def test_suite_errors_name_the_field():
    with pytest.raises(Exception, match=r"instance\[0\].ops: must be int"):
        parse_suite('[[instance]]\nsource = "synthetic"\nops = "x"\n', "s.toml")
    with pytest.raises(Exception, match=r"instance\[0\].source: must be one of"):
        parse_suite('[[instance]]\nsource = "nope"\n', "s.toml")
    with pytest.raises(Exception, match=r"instance\[0\].noc_occupancy: must be one of bytes, "
                                         r"bsp, got 'links'"):
        parse_suite('[[instance]]\nsource = "zoo"\nmodel = "llama2-7b"\n'
                    'noc_occupancy = ["bytes", "links"]\n', "s.toml")
    with pytest.raises(InputError, match=r"instance\[0\].source: must be one of .*got \[\]"):
        parse_suite('[[instance]]\nsource = []\n', "s.toml")
    with pytest.raises(InputError, match=r"instance\[0\].ops: an empty list"):
        parse_suite('[[instance]]\nsource = "synthetic"\nops = []\n', "s.toml")
    with pytest.raises(InputError, match=r"instance\[0\]: must be a table"):
        parse_suite('instance = [1]\n', "s.toml")


def test_noc_occupancy_reaches_the_builder_only_when_set(monkeypatch):
    """Each occupancy is an instance of its own (its key says which), passed to the zoo
    builder; a suite that does not name one leaves the builder its chip's default."""
    import elk_opt.frontend.zoo

    seen = []
    monkeypatch.setattr(elk_opt.frontend.zoo, "model_instance",
                        lambda model, **kwargs: seen.append((model, kwargs)))
    specs = parse_suite('[[instance]]\nsource = "zoo"\nmodel = "llama2-7b"\nlayers = 1\n'
                        'noc_occupancy = ["bytes", "bsp"]\n'
                        '[[instance]]\nsource = "zoo"\nmodel = "opt-30b"\nlayers = 1\n', "s")
    assert [s.key for s in specs] == ["llama2-7b-layers1-noc_occupancybytes",
                                      "llama2-7b-layers1-noc_occupancybsp", "opt-30b-layers1"]
    for spec in specs:
        spec.build()
    assert seen == [("llama2-7b", {"layers": 1, "noc_occupancy": "bytes"}),
                    ("llama2-7b", {"layers": 1, "noc_occupancy": "bsp"}),
                    ("opt-30b", {"layers": 1})]


def test_the_small_noc_suite_crosses_the_small_suite_with_both_occupancies():
    assert "small-noc" in BUILTIN_SUITES
    small = {s.key for s in load_suite("small")}
    crossed = load_suite("small-noc")
    zoo = [s for s in crossed if s.source == "zoo"]
    assert {dict(s.fields)["noc_occupancy"] for s in zoo} == {"bytes", "bsp"}
    assert len(crossed) == len(small) + len(zoo) // 2
    stripped = {s.key.replace("-noc_occupancybytes", "").replace("-noc_occupancybsp", "")
                for s in crossed}
    assert stripped == small


@pytest.mark.parametrize("cluster", ["dask", "ray"])
def test_a_local_cluster_gives_the_serial_results(cluster):
    specs = parse_suite(SUITE, "suite")
    tasks = [CellTask(s, "basic", 5.0, 1, "shared-noc") for s in specs]
    with run_all(run_cell, tasks, "serial") as results:
        serial = {t.spec.key: (replace(o.cell, solve_s=0), _program(o.plan)) for t, o in results}
    with run_all(run_cell, tasks, cluster, workers=2) as results:
        remote = {t.spec.key: (replace(o.cell, solve_s=0), _program(o.plan)) for t, o in results}
    assert remote == serial


def _program(packed_plan: bytes) -> tuple:
    plan = json.loads(gzip.decompress(packed_plan))
    return plan["program"], plan["choice"]
