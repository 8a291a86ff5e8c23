"""`elk-opt reproduce`: the quick grid end to end, resumable, honest about what it could not run."""

import csv
import gzip
import json
import math
import shutil
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from elk_opt.cli import main
from elk_opt.io import load_plan
from elk_opt.methods import solve
from elk_opt.solution import SolveOptions
from elk_opt.studies.reproduce import (
    QUICK,
    SETTINGS,
    Cell,
    Config,
    _ideal_cell,
    _plan_cell,
    cell_from_dict,
)
from elk_opt.studies.reproduce_report import problems, summaries
from tests.strategies import random_instances

OUTPUTS = ("fig17.csv", "fig18.csv", "exact.csv", "reproduction.md", "fig17.png", "fig18.png")


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("reproduce")
    rc = main(["reproduce", "--quick", "-o", str(out), "--executor", "serial"])
    return rc, out


def cells(out) -> list[Cell]:
    return [cell_from_dict(json.loads(p.read_text())) for p in (out / "cells").glob("*.json")]


def rows(path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_quick_writes_everything_and_every_plan_verifies(quick):
    rc, out = quick
    assert rc == 0
    for name in OUTPUTS:
        assert (out / name).stat().st_size > 0, name
    for name in ("fig17.png", "fig18.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    done = cells(out)
    analytic = [c for c in done if c.cost_model == "analytic"]
    # 2-layer figure grid and the 1-layer exact slice, every setting: 6 methods + cpsat
    assert len(analytic) == len(SETTINGS) * (len(QUICK.methods) * 2 + 1)
    for c in done:
        assert c.status not in ("error", "unavailable"), c
        if c.method == "ideal":
            assert c.lower_bound_ns and c.makespan_ns is None
            continue
        assert c.verified, c
        assert c.sim_ns == c.makespan_ns  # the exact replay reproduces the plan's timing
        assert c.timing == SETTINGS[c.setting].timing
        parts = (c.overlapped_ns, c.exec_only_ns, c.preload_only_ns, c.stall_ns)
        assert sum(parts) == pytest.approx(c.makespan_ns, abs=4)
        assert c.hbm_util > 0 and c.tflops > 0 and c.full_ns
    by_config: dict[str, list[Cell]] = {}
    for c in done:
        by_config.setdefault(c.config_key, []).append(c)
    for group in by_config.values():
        ideal = next(c.lower_bound_ns for c in group if c.method == "ideal")
        assert all(c.makespan_ns >= ideal for c in group if c.method != "ideal")
    assert problems(done, []) == []
    assert "PROBLEM" not in (out / "reproduction.md").read_text()


def test_a_cell_matches_an_independent_solve(quick):
    """Re-solve one cell outside the study: same plan makespan, and the plan verifies."""
    from elk_opt.io import plan_to_dict
    from verify import check

    _rc, out = quick
    cell = next(c for c in cells(out) if c.method == "elk-full" and c.setting == "shared-bsp"
                and c.layers == QUICK.layers)
    config = Config(cell.model, cell.batch, cell.kv_len, cell.layers, cell.cost_model,
                    cell.setting, QUICK.chip)
    plan = solve(config.build(), "elk-full", SolveOptions(timing="shared-noc"))
    assert check(plan_to_dict(plan)).valid
    assert plan.claims.makespan_ns == cell.makespan_ns


def test_exact_slice_gaps_are_honest(quick):
    _rc, out = quick
    exact = rows(out / "exact.csv")
    assert {r["method"] for r in exact} >= {"basic", "elk-full", "cpsat"}
    slice_of = ("model", "batch", "kv_len", "layers", "cost_model", "setting")
    for r in exact:
        assert r["reference_kind"] in ("optimum", "bound"), r
        assert float(r["gap"]) >= 0
        if r["reference_kind"] == "optimum":
            (cpsat,) = [x for x in exact if x["method"] == "cpsat"
                        and all(x[k] == r[k] for k in slice_of)]
            assert cpsat["status"] == "optimal"
            assert int(r["reference_ns"]) == int(cpsat["makespan_ns"])
    separate = [r for r in exact if r["setting"] == "separate-noc" and r["method"] == "cpsat"]
    assert separate and all(r["status"] == "optimal" for r in separate)  # proves on one layer


def test_rerunning_changes_nothing(quick, capsys):
    rc, out = quick
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*")
              if p.is_file() and p.suffix != ".png"}
    capsys.readouterr()
    assert main(["reproduce", "--quick", "-o", str(out), "--executor", "serial"]) == rc
    assert "resuming" in capsys.readouterr().err
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*")
             if p.is_file() and p.suffix != ".png"}
    assert after == before


def test_verify_dir_checks_every_kept_plan_and_names_a_tampered_one(quick, tmp_path, capsys):
    _rc, out = quick
    done = cells(out)
    kept = [c for c in done if c.method != "ideal"]
    assert all(c.plan is None for c in done if c.method == "ideal")  # a bound, not a plan
    for c in kept:
        assert c.plan.endswith(".plan.json.gz")
        assert load_plan(out / c.plan).claims.makespan_ns == c.makespan_ns
    named = [r["plan"] for name in ("fig17.csv", "exact.csv") for r in rows(out / name)
             if r.get("source", "ours") == "ours" and r["method"] != "ideal"]
    assert named and set(named) == {c.plan for c in kept}  # the CSVs name every kept plan
    assert "re-checks them all" in (out / "reproduction.md").read_text()
    capsys.readouterr()
    assert main(["verify", str(out)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{out}: {len(kept)} plans: {len(kept)} valid, 0 broken, 0 unreadable"]
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    victim = copy / kept[0].plan
    doc = json.loads(gzip.decompress(victim.read_bytes()))
    doc["claims"]["makespan_ns"] -= 1
    victim.write_bytes(gzip.compress(json.dumps(doc).encode()))
    assert main(["verify", str(copy)]) == 1
    failed, summary = capsys.readouterr().out.splitlines()
    assert failed.startswith(f"{victim}: INVALID: R6 claims")
    assert summary.endswith(f"{len(kept)} plans: {len(kept) - 1} valid, 1 broken, 0 unreadable")


def test_the_papers_figures_appear_beside_ours(quick):
    _rc, out = quick
    md = (out / "reproduction.md").read_text()
    for figure in ("1.87x", "1.37x", "94.84%", "34.70%", "46.42%", "51.97%", "62.40%",
                   "64.38%", "89.52%", "81.06", "12,497.8", "6,720.3", "201.8", "191.4"):
        assert figure in md, figure
    fig17 = rows(out / "fig17.csv")
    paper = [r for r in fig17 if r["source"].startswith("paper")]
    assert [(r["speedup_over_basic"], r["speedup_over_static"], r["fraction_of_ideal"])
            for r in paper] == [("1.87", "1.37", "0.9484")]
    artifact = {(r["source"], r["method"]): r for r in fig17 if r["source"].startswith("artif")}
    whole = artifact[("artifact: whole model, its timing with contention", "elk-full")]
    assert float(whole["speedup_over_basic"]) == pytest.approx(12.4978 / 6.7203, rel=1e-5)
    fig18 = {r["method"]: r for r in rows(out / "fig18.csv") if r["source"].startswith("paper")}
    assert [fig18[m]["hbm_util"] for m in ("basic", "static", "elk-dyn", "elk-full", "ideal")] \
        == ["0.347", "0.4642", "0.5197", "0.624", "0.6438"]
    assert (fig18["elk-full"]["noc_util"], fig18["elk-full"]["tflops"]) == ("0.8952", "81.06")
    ours = [r for r in fig17 if r["source"] == "ours" and r["method"] == "elk-full"
            and r["status"] != "unavailable"]
    assert ours and all(float(r["speedup_over_basic"]) > 1 for r in ours)


def test_an_unavailable_cost_model_is_reported_not_dropped(tmp_path, monkeypatch, capsys):
    """Whatever this build knows, a cost model that cannot price is shown as unavailable."""
    import elk_opt.frontend.cost
    from elk_opt.errors import UsageError

    real = elk_opt.frontend.cost.get_cost_model

    def without_elk_paper(spec, chip):
        if spec == "elk-paper":
            raise UsageError("unknown cost model 'elk-paper'")
        return real(spec, chip)

    monkeypatch.setattr(elk_opt.frontend.cost, "get_cost_model", without_elk_paper)
    out = tmp_path / "r"
    assert main(["reproduce", "-o", str(out), "--models", "llama2-13b", "--batches", "32",
                 "--kv", "2048", "--layers", "1", "--settings", "separate-noc",
                 "--methods", "basic,elk-full,ideal", "--exact-layers", "none",
                 "--executor", "serial"]) == 0
    printed = capsys.readouterr().out
    assert "elk-paper   separate-noc        - unavailable" in printed
    fig17 = [r for r in rows(out / "fig17.csv") if r["source"] == "ours"]
    assert {(r["cost_model"], r["method"], r["status"]) for r in fig17
            if r["cost_model"] == "elk-paper"} == {
        ("elk-paper", m, "unavailable") for m in ("basic", "elk-full", "ideal")}
    assert all(r["status"] != "unavailable" for r in fig17 if r["cost_model"] == "analytic")
    md = (out / "reproduction.md").read_text()
    assert "| ours: elk-paper cost model, separate-noc" in md and "unavailable" in md
    assert "unknown cost model 'elk-paper'" in md
    assert not list((out / "cells").glob("*elk-paper*"))  # retried once the model exists


def test_a_plan_that_fails_verify_is_a_problem():
    config = Config("llama2-13b", 32, 2048, 1, "analytic", "separate-noc", QUICK.chip)
    plan = solve(config.build(), "basic", SolveOptions(timing="separate-noc"))
    lying = replace(plan, claims=replace(plan.claims, makespan_ns=plan.claims.makespan_ns - 1))
    base = Cell(model=config.model, batch=32, kv_len=2048, layers=1, cost_model="analytic",
                setting="separate-noc", timing="separate-noc", method="basic",
                family="heuristic", status="")
    cell = _plan_cell(lying, base)
    assert not cell.verified and cell.error.startswith("verify: R6")
    assert any("fails verify" in p for p in problems([cell], []))


def test_speedups_are_per_configuration_means():
    def cell(model: str, method: str, ns: int) -> Cell:
        bound = method == "ideal"
        return Cell(model=model, batch=32, kv_len=2048, layers=1, cost_model="analytic",
                    setting="separate-noc", timing="separate-noc", method=method,
                    family="bound" if bound else "heuristic", status="bound" if bound else
                    "heuristic", makespan_ns=None if bound else ns,
                    lower_bound_ns=ns if bound else None)

    grid = [cell("a", "basic", 200), cell("a", "static", 150), cell("a", "elk-full", 100),
            cell("a", "ideal", 90), cell("b", "basic", 600), cell("b", "static", 200),
            cell("b", "elk-full", 100), cell("b", "ideal", 100)]
    (s,) = summaries(grid)
    assert s.configs == 2
    assert s.over_basic == pytest.approx((2 + 6) / 2)
    assert s.over_basic_geo == pytest.approx(math.sqrt(12))
    assert s.over_static == pytest.approx((1.5 + 2) / 2)
    assert s.pct_of_ideal == pytest.approx((90 + 100) / 2)


def test_a_longer_time_limit_reruns_exact_cells_that_ran_out_of_time(tmp_path, capsys):
    out = str(tmp_path / "r")
    args = ["reproduce", "-o", out, "--models", "llama2-13b", "--batches", "32", "--kv", "2048",
            "--layers", "1", "--settings", "shared-bsp", "--cost-models", "analytic",
            "--methods", "elk-full", "--exact-layers", "1", "--executor", "serial"]
    assert main([*args, "--time-limit", "5"]) == 0
    (cpsat,) = [c for c in cells(tmp_path / "r") if c.method == "cpsat"]
    assert cpsat.time_limit_s == 5
    capsys.readouterr()
    assert main([*args, "--time-limit", "10"]) == 0
    rerun = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[")]
    expected = [] if cpsat.status == "optimal" else ["cpsat"]
    assert [line.split()[2].rstrip(":") for line in rerun] == expected
    assert main([*args, "--time-limit", "5"]) == 0  # a shorter limit keeps what it has
    assert not [line for line in capsys.readouterr().err.splitlines() if line.startswith("[")]


@pytest.mark.parametrize("args, message", [
    (["--settings", "shared"], "unknown settings shared"),
    (["--batches", "x"], "--batches: not a comma-separated list of integers"),
    (["--methods", "cpsat"], "not heuristic methods: cpsat"),
    (["--models", "gpt-9"], "unknown model 'gpt-9'"),
    (["--time-limit", "nan"], "argument --time-limit: must be a finite number"),
    (["--models", "llama2-13b", "--exact-layers", "41"], "llama2-13b has 40 layers"),
])
def test_bad_options_are_one_line_and_exit_2(tmp_path, capsys, args, message):
    assert main(["reproduce", "-o", str(tmp_path / "r"), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_an_output_that_is_a_file_is_a_usage_error(tmp_path, capsys):
    taken = tmp_path / "taken"
    taken.write_text("x")
    assert main(["reproduce", "--quick", "-o", str(taken)]) == 2
    assert "exists and is not a directory" in capsys.readouterr().err
    assert taken.read_text() == "x"


@settings(max_examples=25, deadline=None)
@given(random_instances(max_ops=6, noc=True), st.sampled_from(sorted(SETTINGS)))
def test_every_heuristic_cell_is_consistent_on_generated_instances(instance, setting):
    """What a cell records agrees with itself and hides nothing: the exact replay equals the
    claim, the breakdown covers the makespan, and a plan that fails verify is a problem."""
    timing = SETTINGS[setting].timing
    base = Cell(model="random", batch=1, kv_len=1, layers=1, cost_model="analytic",
                setting=setting, timing=timing, method="", family="heuristic", status="")
    cells = [_ideal_cell(instance, replace(base, method="ideal", family="bound",
                                           status="bound"))]
    for method in QUICK.methods:
        if method == "ideal":
            continue
        plan = solve(instance, method, SolveOptions(timing=timing))
        cell = _plan_cell(plan, replace(base, method=method))
        assert cell.sim_ns == cell.makespan_ns == plan.claims.makespan_ns, cell
        parts = (cell.overlapped_ns, cell.exec_only_ns, cell.preload_only_ns, cell.stall_ns)
        assert sum(parts) == pytest.approx(cell.makespan_ns, abs=4)
        assert cell.full_ns is not None and cell.noc_util >= 0
        assert cell.verified == (cell.error == "")
        cells.append(cell)
    found = problems(cells, [])
    for cell in cells[1:]:
        flagged = any(p.endswith(f" {cell.method}: plan fails verify") for p in found)
        assert flagged == (not cell.verified), (cell, found)
