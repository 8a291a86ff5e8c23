"""`elk-opt compare`: one table of every heuristic, each plan verified, under either timing."""

from __future__ import annotations

import json

import pytest

from elk_opt.cli import main
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.io import load_plan, save_instance
from elk_opt.methods import heuristics


@pytest.mark.parametrize("timing", ["shared-noc", "separate-noc"])
def test_compare_table_and_json(tmp_path, capsys, timing):
    path = tmp_path / "instance.json"
    save_instance(path, synthetic_instance(ops=36, plans=4, seed=3, tightness=0.6))
    out = tmp_path / "rows.json"
    assert main(["compare", str(path), "--timing", timing, "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["timing"] == timing
    rows = doc["rows"]
    assert [r["method"] for r in rows] == ["ideal", *heuristics()]
    ideal = rows[0]["makespan_ns"]
    for r in rows[1:]:
        assert r["valid"] is True
        assert ideal <= r["makespan_ns"]
        assert 0 < r["ideal_fraction"] <= 1
    assert min(r["vs_best"] for r in rows[1:]) == 1.0
    table = capsys.readouterr().out
    assert "elk-full" in table and "(lower bound)" in table and f"under {timing}" in table


def test_compare_defaults_to_shared_noc(tmp_path):
    path = tmp_path / "instance.json"
    save_instance(path, synthetic_instance(ops=12, plans=2, seed=0))
    out = tmp_path / "rows.json"
    main(["compare", str(path), "--methods", "basic", "--json", str(out)])
    assert json.loads(out.read_text())["timing"] == "shared-noc"


def test_compare_keeps_every_plan_with_o(tmp_path, capsys):
    path = tmp_path / "instance.json"
    save_instance(path, synthetic_instance(ops=12, plans=2, seed=0))
    out = tmp_path / "kept"
    assert main(["compare", str(path), "--methods", "basic,elk-full", "-o", str(out)]) == 0
    rows = json.loads((out / "compare.json").read_text())["rows"]
    assert [r.get("plan") for r in rows] == [None, "basic.plan.json.gz", "elk-full.plan.json.gz"]
    for r in rows[1:]:
        assert load_plan(out / r["plan"]).claims.makespan_ns == r["makespan_ns"]
    capsys.readouterr()
    assert main(["verify", str(out)]) == 0
    assert "2 plans: 2 valid" in capsys.readouterr().out


def test_compare_bad_methods_exit_2(tmp_path, capsys):
    path = tmp_path / "instance.json"
    save_instance(path, synthetic_instance(ops=12, plans=2, seed=0))
    assert main(["compare", str(path), "--methods", "nope"]) == 2
    assert "unknown method 'nope'" in capsys.readouterr().err
