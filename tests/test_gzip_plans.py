"""Gzipped plans read as plain ones everywhere (the loader, `verify`, `simulate`, the API), and
`verify DIR` checks every plan under a folder: one line per failure, a summary, exit 0/1/2."""

from __future__ import annotations

import gzip
import json

import pytest
from hypothesis import given, settings

import elk_opt.files
import verify.cli
from elk_opt.cli import main
from elk_opt.errors import InputError
from elk_opt.io import load_plan, plan_to_dict
from elk_opt.methods import solve
from elk_opt.solution import SolveOptions
from elk_opt.studies.plans import packed
from tests.strategies import random_instances
from verify.cli import json_report


def _plan(seed: int = 1):
    return solve(elk_opt.synthetic_instance(ops=6, plans=2, seed=seed), "elk-full",
                 SolveOptions())


def _write(path, plan, *, gz: bool = True, change=None) -> None:
    doc = plan_to_dict(plan)
    if change:
        change(doc)
    text = json.dumps(doc).encode()
    path.write_bytes(gzip.compress(text) if gz else text)


@settings(max_examples=20, deadline=None)
@given(random_instances(max_ops=5, noc=True))
def test_a_gzipped_plan_reads_and_verifies_as_its_json(tmp_path_factory, instance):
    folder = tmp_path_factory.mktemp("gz")
    plan = solve(instance, "elk-dyn", SolveOptions())
    (folder / "p.plan.json.gz").write_bytes(packed(plan))
    _write(folder / "p.plan.json", plan, gz=False)
    assert load_plan(folder / "p.plan.json.gz") == load_plan(folder / "p.plan.json")
    gz, plain = (json_report(folder / name) for name in ("p.plan.json.gz", "p.plan.json"))
    assert {**gz, "file": None} == {**plain, "file": None} and gz["valid"]
    assert packed(plan) == packed(plan)  # no time stamp: the same plan, the same bytes


def test_the_api_and_simulate_take_gz(tmp_path, capsys):
    plan = _plan()
    path = tmp_path / "p.plan.json.gz"
    path.write_bytes(packed(plan))
    assert elk_opt.load_plan(path).claims.makespan_ns == plan.claims.makespan_ns
    assert elk_opt.verify(path)["valid"]
    assert main(["simulate", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["makespan_ns"] > 0


@pytest.mark.parametrize("data, why", [
    (b"\x1f\x8bnot deflate at all", "not a readable gzip file"),
    (None, "not a readable gzip file"),  # cut short
    (gzip.compress(b"\xff\xfe", mtime=0), "not UTF-8 text"),
    (gzip.compress(b"{", mtime=0), "invalid JSON"),
])
def test_a_broken_gzip_is_unreadable_in_one_line(tmp_path, capsys, data, why):
    path = tmp_path / "bad.plan.json.gz"
    path.write_bytes(packed(_plan())[:-30] if data is None else data)
    assert main(["verify", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"{path}: unreadable") and why in err
    with pytest.raises(InputError, match=why) as caught:
        load_plan(path)
    assert str(caught.value).startswith(str(path))


def test_a_gzip_bomb_is_refused(tmp_path, monkeypatch, capsys):
    path = tmp_path / "big.plan.json.gz"
    path.write_bytes(gzip.compress(b" " * 5000 + b"{}"))
    monkeypatch.setattr(verify.cli, "MAX_GUNZIPPED_BYTES", 4096)
    monkeypatch.setattr(elk_opt.files, "MAX_GUNZIPPED_BYTES", 4096)
    assert main(["verify", str(path)]) == 2
    assert "decompresses to more than 4,096 B" in capsys.readouterr().err
    with pytest.raises(InputError, match="decompresses to more than 4,096 B"):
        load_plan(path)


def test_verify_dir_lists_failures_and_unreadable_outranks_broken(tmp_path, capsys):
    good = _plan()
    (tmp_path / "deep" / "er").mkdir(parents=True)
    _write(tmp_path / "a.plan.json.gz", good)
    _write(tmp_path / "deep" / "b.plan.json", good, gz=False)
    (tmp_path / "notes.json").write_text("{")  # not a plan file: not looked at
    assert main(["verify", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"{tmp_path}: 2 plans: 2 valid, 0 broken, 0 unreadable"]

    def lie(doc):
        doc["claims"]["makespan_ns"] += 1

    broken = tmp_path / "deep" / "er" / "c.plan.json.gz"
    _write(broken, good, change=lie)
    assert main(["verify", str(tmp_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{broken}: INVALID: R6 claims: makespan_ns") and len(out) == 2
    assert out[1] == f"{tmp_path}: 3 plans: 2 valid, 1 broken, 0 unreadable"

    (tmp_path / "z.plan.json.gz").write_bytes(b"\x1f\x8b garbage")
    assert main(["verify", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"{tmp_path / 'z.plan.json.gz'}: unreadable: not a readable")
    assert captured.out.splitlines()[-1].endswith("4 plans: 2 valid, 1 broken, 1 unreadable")
    reports = json.loads(_json_out(tmp_path, capsys))
    assert [r["valid"] for r in reports] == [True, True, False, False]


def _json_out(folder, capsys) -> str:
    capsys.readouterr()
    assert verify.cli.main([str(folder), "--json"]) == 2
    return capsys.readouterr().out


def test_verify_of_a_folder_without_plans_is_unreadable(tmp_path, capsys):
    assert main(["verify", str(tmp_path)]) == 2
    assert "no *.plan.json or *.plan.json.gz files" in capsys.readouterr().err
