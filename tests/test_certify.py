"""`elk-opt certify`: certificates hold (their plan verifies, their bound is below every plan
and below the exhaustive optimum), `--check` catches every tampering, a given plan is kept, bad
input is one line and exit 2 with nothing written, and an interrupt writes the best so far.

The searches share one worker process (its solver imports paid once); budgets are small, and
no test depends on how fast the machine is: they assert what a certificate holds, not how
close its gap got.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import elk_opt
from elk_opt.bounds.recompute import recompute
from elk_opt.bounds.rows import MIN_SOLVER_S, Limits
from elk_opt.bounds.run_all import BUDGET_SPENT, _capped, lower_bounds
from elk_opt.bounds.window import window_key
from elk_opt.certification import found as found_module
from elk_opt.certification import search as search_module
from elk_opt.certification.certificate import build, exec_order
from elk_opt.certification.check import check
from elk_opt.certification.found import Found
from elk_opt.certification.run import certify, prepare_continued
from elk_opt.certification.search import (
    ELK_FULL_SHARE,
    HEURISTIC_SHARE,
    HEURISTICS,
    _heuristics,
)
from elk_opt.certification.worker import Task, TimedOut, Worker
from elk_opt.cli import main
from elk_opt.errors import UsageError
from elk_opt.io import plan_from_dict, plan_to_dict, save_instance, save_plan
from elk_opt.methods import solve
from elk_opt.problem import TIMINGS
from elk_opt.solution import SolveOptions, make_plan
from formulations.enumerate import enumerate_optimum, enumerate_shared_optimum
from tests.processes import descendants, wait_gone
from tests.schemas import certificate_validator, closed_certificate_validator, errors
from tests.strategies import random_instances
from tests.tiny import branching, parse, tiny_instance

STOPS = {"gap closed", "time limit", "nothing left to try"}


@pytest.fixture(scope="module")
def worker():
    with Worker() as w:
        yield w


@pytest.fixture(scope="module")
def certified(worker):
    instance = elk_opt.synthetic_instance(ops=6, plans=2, seed=3)
    return certify(instance, time_limit_s=8, threads=1, worker=worker)


def assert_holds(doc: dict) -> None:
    """What every certificate must satisfy, whatever the search found."""
    assert errors(certificate_validator(), doc) == []
    assert errors(closed_certificate_validator(), doc) == []  # every key it has is described
    assert elk_opt.verify(doc["plan"])["valid"]
    makespan, lower = doc["makespan_ns"], doc["lower_bound_ns"]
    assert 0 < lower <= makespan
    assert doc["gap"] == pytest.approx(makespan / lower - 1)
    assert lower == max(b["ns"] for b in doc["bounds"] if b["ns"] is not None)
    for b in doc["bounds"]:
        assert doc["timing"] in b["timings"], b
    claims = doc["plan"].get("claims")
    if claims is not None:
        assert claims["lower_bound_ns"] == lower
        assert (claims["status"] == "optimal") == (lower == makespan)
    assert doc["search"]["stopped"] in STOPS
    assert check(doc).problems == []


@pytest.mark.parametrize("where", [(), ("bounds", 0), ("search",), ("search", "phases", 0)])
def test_a_key_the_schema_does_not_describe_is_caught(certified, where):
    doc = copy.deepcopy(certified)
    node = doc
    for step in where:
        node = node[step]
    node["undescribed"] = 1
    assert any("undescribed" in e for e in errors(closed_certificate_validator(), doc))


def test_a_certificate_holds_and_lists_every_bound_run_all_offers(certified):
    assert_holds(certified)
    names = {b["name"] for b in certified["bounds"]}
    assert {"ideal", "hbm-cut", "port-total", "port-cut"} <= names  # shared-noc by default
    assert certified["timing"] == "shared-noc"
    for b in certified["bounds"]:
        assert b["exec_order"] in ("any", "instance") and isinstance(b["params"], dict)
    if certified["gap"] == 0:
        assert certified["plan"]["claims"]["status"] == "optimal"


def _retotal(doc: dict) -> None:
    """Make lower_bound_ns and gap agree with the (tampered) bounds, as a careful forger would."""
    doc["lower_bound_ns"] = max(b["ns"] for b in doc["bounds"] if b["ns"] is not None)
    doc["gap"] = doc["makespan_ns"] / doc["lower_bound_ns"] - 1


def _raise_bound(doc: dict) -> None:
    row = next(b for b in doc["bounds"] if b["name"] == "ideal")
    row["ns"] = doc["makespan_ns"]
    _retotal(doc)


def _lower_makespan(doc: dict) -> None:
    doc["makespan_ns"] -= 1
    doc["gap"] = max(0.0, doc["makespan_ns"] / doc["lower_bound_ns"] - 1)


def _worse_plan(doc: dict) -> None:
    plan = load_plan_from(doc["plan"])
    worse = solve(plan.instance, "basic", SolveOptions(timing=plan.timing))
    assert worse.claims.makespan_ns > doc["makespan_ns"]
    doc["plan"] = plan_to_dict(worse)


def _edit_gap(doc: dict) -> None:
    doc["gap"] = doc["gap"] / 2 if doc["gap"] else 0.01


def _edit_claims(doc: dict) -> None:
    doc["plan"]["claims"]["makespan_ns"] -= 1


def _other_timing(doc: dict) -> None:
    doc["timing"] = "separate-noc"


TAMPERINGS = {"a raised bound": _raise_bound, "a lowered makespan": _lower_makespan,
              "a plan swapped for a worse one": _worse_plan, "an edited gap": _edit_gap,
              "a plan's claims edited": _edit_claims, "another timing": _other_timing}


def load_plan_from(document: dict):
    from elk_opt.io import plan_from_dict

    return plan_from_dict(copy.deepcopy(document))


@pytest.mark.parametrize("name", TAMPERINGS)
def test_check_catches_each_tampering(certified, name, tmp_path, capsys):
    doc = copy.deepcopy(certified)
    TAMPERINGS[name](doc)
    # only a raised bound needs its bound recomputed to be caught; the others are caught by
    # what every check does (the untampered certificate's test recomputes them all)
    limit = 30.0 if name == "a raised bound" else 1e-9
    assert check(doc, max_recompute_s=limit).problems, name
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["certify", "--check", str(path), "-q", "--max-recompute-s", str(limit)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{path}: INVALID:") and len(out) >= 2


def test_a_time_limited_bound_recomputed_lower_matters_only_if_the_claim_rests_on_it(certified):
    # on a busier machine a solver stopped by its clock reaches less: that alone is no sign
    # the recorded bound is wrong, unless lower_bound_ns has nothing else to rest on
    doc = copy.deepcopy(certified)
    row = next(b for b in doc["bounds"] if b["name"] == "fluid")
    row["status"], row["params"] = "time-limit", {**row["params"], "time_limit_s": 1e-9}
    assert row["ns"] <= max(b["ns"] for b in doc["bounds"] if b is not row and b["ns"])
    checked = check(doc)
    assert checked.problems == []
    assert [line.split(":")[0] for line in checked.unconfirmed] == [
        f"bounds[{doc['bounds'].index(row)}] fluid"]
    row["ns"] = doc["lower_bound_ns"] + 1  # now the claim rests on it alone
    _retotal(doc)
    assert any("rests on it" in line for line in check(doc).problems)


def test_an_untampered_certificate_passes_the_command(certified, tmp_path, capsys):
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(certified))
    assert main(["certify", "--check", str(path), "-q"]) == 0
    assert capsys.readouterr().out.startswith(f"{path}: valid:")
    assert elk_opt.check_certificate(path) == []


def test_only_bounds_found_within_max_recompute_s_are_recomputed(certified):
    every = check(certified, max_recompute_s=1e9)
    assert every.problems == []
    assert set(every.recomputed) == {b["name"] for b in certified["bounds"]
                                     if b["ns"] is not None and b["status"] != "solver-proved"}
    quick = check(certified, max_recompute_s=1e-9)
    slow = [b["name"] for b in certified["bounds"]
            if b["ns"] is not None and b["wall_s"] > 1e-9 and b["status"] != "solver-proved"]
    assert sorted(quick.recomputed) == sorted(set(every.recomputed) - set(slow))
    assert all(any(n in line for line in quick.not_recomputed) for n in slow)


def test_a_certificate_whose_plan_is_unreadable_is_exit_2(certified, tmp_path, capsys):
    doc = copy.deepcopy(certified)
    doc["plan"]["program"] = "P0 E0"
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["certify", "--check", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "plan" in err[0], err


@pytest.mark.parametrize(("where", "field"), [((), "gap"), (("bounds", 0), "ns")])
def test_a_certificate_missing_a_required_key_is_exit_2(certified, tmp_path, capsys, where,
                                                         field):
    doc = copy.deepcopy(certified)
    node = doc
    for step in where:
        node = node[step]
    del node[field]
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["certify", "--check", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    named = ".".join([*(str(s) for s in where), field]).replace(".0.", "[0].")
    assert len(err) == 1 and str(path) in err[0] and named in err[0], err


@settings(max_examples=8)
@given(random_instances(max_ops=3, max_plans=2, noc=True, max_ns=10),
       st.sampled_from(TIMINGS))
def test_the_certified_bound_never_exceeds_the_exhaustive_optimum(worker, instance, timing):
    doc = certify(instance, timing=timing, time_limit_s=6, threads=1, worker=worker)
    if timing == "shared-noc":
        best = enumerate_shared_optimum(instance).makespan_ns
    else:
        best = enumerate_optimum(instance).makespan_ns
    assert doc["lower_bound_ns"] <= best <= doc["makespan_ns"]
    assert_holds(doc)


def test_a_given_plan_is_kept_and_a_better_one_reported(worker):
    instance = elk_opt.synthetic_instance(ops=8, plans=3, seed=2)
    given_plan = solve(instance, "basic", SolveOptions(timing="separate-noc"))
    doc = certify(given_plan, time_limit_s=20, threads=1, worker=worker)
    assert doc["timing"] == "separate-noc"  # the plan's own
    kept = plan_to_dict(given_plan)
    for key in ("choice", "program", "instance"):
        assert doc["plan"][key] == kept[key]
    assert doc["makespan_ns"] == given_plan.claims.makespan_ns
    better = doc.get("better_plan")
    elk_dyn = solve(instance, "elk-dyn", SolveOptions(timing="separate-noc")).claims.makespan_ns
    assert elk_dyn < doc["makespan_ns"]  # the instance is one where Basic is beaten
    assert better is not None and better["makespan_ns"] <= elk_dyn  # heuristics run first
    assert better["makespan_ns"] < doc["makespan_ns"]
    assert elk_opt.verify(better["plan"])["valid"]
    assert better["plan"]["claims"]["makespan_ns"] == better["makespan_ns"]
    assert_holds(doc)


def test_a_plan_in_another_execution_order_gets_only_bounds_for_any_order(worker):
    instance = tiny_instance([(10, 5, 20, 8, 1), (30, 5, 10, 8, 0)], inputs=[(), ()])
    plan = make_plan(instance, [elk_opt.Choice(0, 0)] * 2, parse("P1 E1 P0 E0"),
                     method="tool", started=0.0, timing="separate-noc")
    assert exec_order(plan) == "free"
    doc = certify(plan, time_limit_s=4, threads=1, worker=worker)
    assert doc["plan"]["program"] == ["P1", "E1", "P0", "E0"]
    assert {b["exec_order"] for b in doc["bounds"]} == {"any"}
    assert doc["exec_order"] == "any"
    assert_holds(doc)
    doc["bounds"][0]["exec_order"] = "instance"
    assert any("execution order" in p for p in check(doc).problems)


def test_a_start_from_another_tool_is_searched_from_and_certified_if_fastest(worker):
    instance = elk_opt.synthetic_instance(ops=6, plans=2, seed=3)
    best = enumerate_optimum(instance)
    start = make_plan(instance, best.choice, best.program, method="other-tool", started=0.0,
                      timing="separate-noc")
    doc = certify(instance, timing="separate-noc", time_limit_s=6, threads=1, worker=worker,
                  starts=[("theirs.json", start)])
    first = doc["search"]["phases"][0]
    assert first["phase"] == "start"
    assert first["outcome"] == f"theirs.json: {best.makespan_ns:,} ns (other-tool) (best so far)"
    # nothing beats the optimum, and a plan that only ties it does not replace it
    assert doc["makespan_ns"] == best.makespan_ns
    assert doc["plan"]["claims"]["method"] == "other-tool"
    assert doc["plan"]["claims"]["params"] == {"start": "theirs.json"}
    assert doc["plan"]["program"] == plan_to_dict(start)["program"]
    assert_holds(doc)


def test_a_start_in_another_execution_order_is_recorded_but_not_kept(worker):
    instance = tiny_instance([(10, 5, 20, 8, 1), (30, 5, 10, 8, 0)], inputs=[(), ()])
    start = make_plan(instance, [elk_opt.Choice(0, 0)] * 2, parse("P1 E1 P0 E0"),
                      method="tool", started=0.0, timing="separate-noc")
    doc = certify(instance, timing="separate-noc", time_limit_s=3, threads=1, worker=worker,
                  starts=[("free.json", start)])
    first = doc["search"]["phases"][0]
    assert first["phase"] == "start" and "not kept" in first["outcome"]
    assert exec_order(plan_from_dict(doc["plan"])) == "instance"
    assert_holds(doc)


def _bounds_by_name(doc: dict) -> dict[str, int]:
    return {b["name"]: b["ns"] for b in doc["bounds"] if b["ns"] is not None}


def _bound_rounds_in(doc: dict) -> list[int]:
    """The bound rounds that finished (their outcome names the best bound)."""
    return [int(p["phase"].split()[-1][:-1]) for p in doc["search"]["phases"]
            if p["phase"].startswith("bounds (round ") and p["outcome"].startswith("best ")]


def test_a_continued_certificate_is_never_worse_and_keeps_its_bounds(worker):
    instance = elk_opt.synthetic_instance(ops=40, plans=3, seed=6)
    first = certify(instance, time_limit_s=3, threads=1, worker=worker)
    assert first["search"]["certified_plan"] == "found"
    again = certify(copy.deepcopy(first), time_limit_s=3, threads=1, worker=worker)
    assert_holds(again)
    assert again["search"]["certified_plan"] == "found"
    assert again["makespan_ns"] <= first["makespan_ns"]
    assert again["lower_bound_ns"] >= first["lower_bound_ns"]
    kept = _bounds_by_name(again)
    for name, ns in _bounds_by_name(first).items():
        assert kept[name] >= ns, name
    gave = {p["phase"] for p in first["search"]["phases"]
            if p["phase"] in HEURISTICS and p["outcome"][0].isdigit()}
    assert gave and set(first["search"]["done"]) & set(HEURISTICS) == gave
    older = copy.deepcopy(again)  # as written before `bound_rounds`: its phases say
    del older["search"]["bound_rounds"]
    third = certify(older, time_limit_s=3, threads=1, worker=worker)
    assert_holds(third)
    for before, after in ((first, again), (again, third)):  # bound rounds go on, not anew
        rounds = _bound_rounds_in(after)
        assert all(r > before["search"]["bound_rounds"] for r in rounds)
        assert after["search"]["bound_rounds"] == max(rounds, default=before["search"]
                                                      ["bound_rounds"])
    for doc in (again, third):  # their plans are the start's to beat, continued twice too
        phases = [p["phase"] for p in doc["search"]["phases"]]
        assert phases[0] == "continued" and not gave & set(phases)
        assert gave <= set(doc["search"]["done"])


def test_a_bound_round_that_did_not_finish_is_run_again_when_continued(certified):
    doc = copy.deepcopy(certified)
    del doc["search"]["bound_rounds"]  # as written before the key: its phases say
    doc["search"]["phases"] = [
        {"phase": "bounds (round 1)", "wall_s": 9.0, "outcome": "best 1 ns (raised)"},
        {"phase": "bounds (round 2)", "wall_s": 9.0, "outcome": "stopped at the round's "
                                                                "deadline"}]
    assert prepare_continued(doc, time_limit_s=1)[1].bound_rounds == 1
    doc["search"]["bound_rounds"] = 0  # none finished: the next search starts at round 1
    _instance, found = prepare_continued(doc, time_limit_s=1)
    assert found.bound_rounds == 0 and not found.deferred


@pytest.mark.parametrize(("revision", "again"), [
    (found_module.BOUNDS_REVISION, False), (search_module.SOLVED_SINCE, False),
    (search_module.SOLVED_SINCE - 1, True)])
def test_a_bound_that_finished_is_solved_again_only_when_its_code_has_changed(
        certified, monkeypatch, revision, again):
    doc = copy.deepcopy(certified)
    doc["search"]["bounds_revision"] = revision
    instance, found = prepare_continued(doc, time_limit_s=60)
    found.bounds["fluid-sram"] = {"name": "fluid-sram", "ns": 1, "status": "complete",
                                  "note": ""}
    calls = []
    monkeypatch.setattr(search_module, "call",
                        lambda found, worker, task, deadline: calls.append(task) or
                        {"bounds": []})
    search_module._bound_round(instance, found, None, found.bound_rounds + 1, progress=False)
    assert calls
    assert (calls[0].args.get("fluid_sram_max_ops") != 0) is again


@pytest.mark.parametrize(("recorded", "revision", "runs"), [
    (None, found_module.BOUNDS_REVISION, True), (0.5, found_module.BOUNDS_REVISION, True),
    (1e6, found_module.BOUNDS_REVISION, False),
    (1e6, None, True)])  # bounds an earlier revision found (before the key): a round anyway
def test_a_continued_search_retries_a_timed_out_bound_only_with_more_time_or_new_bounds(
        certified, monkeypatch, recorded, revision, runs):
    doc = copy.deepcopy(certified)
    doc["search"]["bound_rounds"] = 2  # nothing deferred: only time can raise a bound now
    if recorded is None:  # as written before the key: no round to compare with
        del doc["search"]["bound_budget_s"]
    else:
        doc["search"]["bound_budget_s"] = recorded
    if revision is None:
        del doc["search"]["bounds_revision"]
    else:
        doc["search"]["bounds_revision"] = revision
    instance, found = prepare_continued(doc, time_limit_s=60)
    assert found.bound_budget == (recorded or 0.0)
    found.bounds["fluid"] = {"name": "fluid", "ns": 1, "status": "time-limit", "note": ""}
    calls = []
    monkeypatch.setattr(search_module, "call",
                        lambda found, worker, task, deadline: calls.append(task) or
                        {"bounds": []})
    search_module._bound_round(instance, found, None, found.bound_rounds + 1, progress=False)
    assert bool(calls) is runs
    assert found.summary()["bounds_revision"] == (
        found_module.BOUNDS_REVISION if runs or revision else 1)
    assert found.summary()["bound_budget_s"] == pytest.approx(
        max(recorded or 0.0, calls[0].args["time_budget_s"] if calls else 0.0), abs=1e-3)


@pytest.mark.parametrize(("key", "value"), [
    ("bound_rounds", "two"), ("bound_rounds", -1), ("bound_rounds", True),
    ("bound_budget_s", -1.0), ("bound_budget_s", "10"), ("done", "elk-full"),
    ("bounds_revision", 0), ("bounds_revision", "2"),
    ("done", [1]), ("certified_plan", "mine"), ("phases", ["bounds (round 1)"]),
    (None, "not an object")])
def test_a_search_record_a_continuation_cannot_read_is_exit_2(certified, tmp_path, capsys,
                                                              key, value):
    doc = copy.deepcopy(certified)
    if key is None:
        doc["search"] = value
    else:
        doc["search"][key] = value
    source = tmp_path / "cert.json"
    source.write_text(json.dumps(doc))
    out = tmp_path / "more.json"
    capsys.readouterr()
    assert main(["certify", str(source), "--time-limit", "2", "-q", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    for word in (str(source), "search" + (f".{key}" if key else ""), repr(value)):
        assert word in err[0], (word, err[0])
    assert not out.exists()


@pytest.mark.parametrize("marked", [True, False])
def test_a_continued_certificate_of_a_given_plan_keeps_certifying_it(worker, marked):
    instance = elk_opt.synthetic_instance(ops=8, plans=3, seed=2)
    given_plan = solve(instance, "basic", SolveOptions(timing="separate-noc"))
    first = certify(given_plan, time_limit_s=4, threads=1, worker=worker)
    assert first["search"]["certified_plan"] == "given" and "better_plan" in first
    if not marked:  # written before the key existed: the better plan says it was given
        del first["search"]["certified_plan"]
    again = certify(first, time_limit_s=4, threads=1, worker=worker)
    assert_holds(again)
    for key in ("choice", "program"):
        assert again["plan"][key] == plan_to_dict(given_plan)[key]
    assert again["search"]["certified_plan"] == "given"
    assert again["better_plan"]["makespan_ns"] <= first["better_plan"]["makespan_ns"]


def test_the_api_refuses_a_timing_mismatch_and_a_zero_limit(certified):
    plan = load_plan_from(certified["plan"])
    with pytest.raises(UsageError, match="shared-noc.*separate-noc"):
        elk_opt.certify(plan, timing="separate-noc", time_limit_s=1)
    with pytest.raises(UsageError, match="time limit"):
        elk_opt.certify(plan.instance, time_limit_s=0)


def test_run_all_honours_a_total_budget():
    instance = elk_opt.synthetic_instance(ops=24, plans=3, seed=4)
    spent = lower_bounds(instance, time_budget_s=0)["bounds"]
    cheap = {r["bound"] for r in spent if r["status"] == "complete"}
    assert cheap == {"ideal", "hbm-cut", "port-total", "port-cut"}
    assert all(r["note"] == BUDGET_SPENT for r in spent if r["bound"] not in cheap)
    rows = lower_bounds(instance, time_budget_s=3.0, window=6, threads=1)["bounds"]
    for row in rows:
        limit = row["params"].get("time_limit_s")
        assert limit is None or limit <= 3.0, row
        if row["bound"].startswith("window") and row["ns"] is not None:
            # its distinct windows share it (rounded): each is solved once
            distinct = {window_key(instance, a, a + 6) for a in range(0, 24, 6)}
            assert row["params"]["time_limit_s"] * len(distinct) <= 3.0 + 0.01
    with pytest.raises(UsageError):
        lower_bounds(instance, time_budget_s=-1)


def test_a_phase_past_its_deadline_is_ended_and_the_worker_serves_on(worker):
    instance = elk_opt.synthetic_instance(ops=200, plans=4, seed=1)
    task = Task("solve", instance, {"method": "elk-full", "options": SolveOptions()})
    with pytest.raises(TimedOut):
        worker.call(task, time.perf_counter() + 0.05)
    small = elk_opt.synthetic_instance(ops=4, plans=2, seed=1)
    plan = worker.call(Task("solve", small, {"method": "static", "options": SolveOptions()}),
                       None)
    assert plan.claims.method == "static"


def test_a_short_budget_still_gives_a_certificate_saying_what_was_cut(worker):
    instance = elk_opt.synthetic_instance(ops=300, plans=4, seed=2)
    doc = certify(instance, time_limit_s=1.0, threads=1, worker=worker)
    assert_holds(doc)
    phases = doc["search"]["phases"]
    assert phases[0]["phase"] == "linear-time bounds, basic"
    assert doc["search"]["stopped"] in ("time limit", "gap closed")
    for phase in phases:  # each says how long it took and how it ended
        assert phase["wall_s"] >= 0 and phase["outcome"]


# ---------------------------------------------------------------------------- command line

@pytest.fixture
def files(tmp_path):
    instance = elk_opt.synthetic_instance(ops=4, plans=2, seed=1)
    inst = tmp_path / "i.json"
    save_instance(inst, instance)
    plan = tmp_path / "p.json"
    save_plan(plan, solve(instance, "elk-dyn", SolveOptions(timing="separate-noc")))
    return inst, plan


def test_the_command_certifies_an_instance_and_checks_it(files, tmp_path, capsys):
    inst, _ = files
    cert = tmp_path / "cert.json"
    assert main(["certify", str(inst), "--time-limit", "6", "--threads", "1", "-q",
                 "-o", str(cert)]) == 0
    out = capsys.readouterr().out
    assert "lower bound" in out and "gap" in out and str(cert) in out
    doc = json.loads(cert.read_text())
    assert_holds(doc)
    assert main(["certify", "--check", str(cert), "-q"]) == 0


@pytest.mark.parametrize("as_start", [False, True])
def test_a_plan_breaking_the_rules_is_not_certified_nor_started_from(files, tmp_path, capsys,
                                                                     as_start):
    inst, plan = files
    doc = json.loads(plan.read_text())
    doc["claims"]["makespan_ns"] += 1  # R6
    plan.write_text(json.dumps(doc))
    cert = tmp_path / "cert.json"
    source = [str(inst), "--start", str(plan)] if as_start else [str(plan)]
    assert main(["certify", *source, "-q", "-o", str(cert)]) == 1
    err = capsys.readouterr().err
    assert str(plan) in err and "R6" in err
    assert not cert.exists()


def test_the_command_takes_a_start_and_names_it_in_the_certificate(files, tmp_path):
    inst, plan = files
    cert = tmp_path / "cert.json"
    assert main(["certify", str(inst), "--start", str(plan), "--time-limit", "4",
                 "--threads", "1", "-q", "-o", str(cert)]) == 0
    doc = json.loads(cert.read_text())
    assert doc["search"]["phases"][0]["phase"] == "start"
    assert doc["search"]["phases"][0]["outcome"].startswith(f"{plan}: ")
    assert_holds(doc)


def _bad(kind: str, inst: Path, plan: Path, tmp_path: Path) -> tuple[list[str], list[str]]:
    """argv and the words its one error line must hold."""
    cert = str(tmp_path / "cert.json")
    if kind == "timing mismatch":
        return ["certify", str(plan), "--timing", "shared-noc", "-o", cert], \
            [str(plan), "separate-noc", "shared-noc"]
    if kind == "zero time limit":
        return ["certify", str(inst), "--time-limit", "0", "-o", cert], ["--time-limit", "'0'"]
    if kind == "negative time limit":
        return ["certify", str(inst), "--time-limit", "-3", "-o", cert], ["--time-limit"]
    if kind == "missing file":
        return ["certify", str(tmp_path / "none.json"), "-o", cert], ["none.json", "no such file"]
    if kind == "not JSON":
        inst.write_text("{")
        return ["certify", str(inst), "-o", cert], [str(inst), "invalid JSON"]
    if kind == "neither format":
        inst.write_text('{"format": "elk-schedule/1"}')
        return ["certify", str(inst), "-o", cert], [str(inst), "format", "elk-schedule/1"]
    if kind == "certificate to continue unreadable":
        inst.write_text('{"format": "elk-certificate/1"}')
        return ["certify", str(inst), "-o", cert], [str(inst), "timing"]
    if kind == "output folder missing":
        return ["certify", str(inst), "-o", str(tmp_path / "no" / "cert.json")], \
            ["does not exist"]
    if kind == "start of another instance":
        other = tmp_path / "other.json"
        save_plan(other, solve(elk_opt.synthetic_instance(ops=5, plans=2, seed=1), "basic",
                               SolveOptions(timing="separate-noc")))
        return ["certify", str(inst), "--start", str(other), "-o", cert], \
            [str(other), "instance"]
    if kind == "start unreadable":
        bad = tmp_path / "bad.json"
        bad.write_text("{")
        return ["certify", str(inst), "--start", str(bad), "-o", cert], [str(bad), "JSON"]
    if kind == "start with --check":
        return ["certify", "--check", str(plan), "--start", str(plan)], ["--start"]
    if kind == "unreadable certificate":
        inst.write_text('{"format": "elk-certificate/1", "timing": "shared-noc"}')
        return ["certify", "--check", str(inst)], [str(inst), "makespan_ns"]
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["timing mismatch", "zero time limit", "negative time limit",
                                  "missing file", "not JSON", "neither format",
                                  "certificate to continue unreadable",
                                  "output folder missing", "unreadable certificate",
                                  "start of another instance", "start unreadable",
                                  "start with --check"])
def test_bad_input_is_one_line_exit_2_and_nothing_written(kind, files, tmp_path, capsys):
    inst, plan = files
    argv, words = _bad(kind, inst, plan, tmp_path)
    before = set(tmp_path.rglob("*"))
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("elk-opt certify: error:"), err
    for word in words:
        assert word in err[0], (word, err[0])
    assert set(tmp_path.rglob("*")) == before


@pytest.mark.parametrize("kind", ["lowered makespan", "raised bound", "timing mismatch"])
def test_a_certificate_that_does_not_hold_is_not_continued(kind, certified, tmp_path, capsys):
    doc = copy.deepcopy(certified)
    argv = []
    if kind == "lowered makespan":
        doc["makespan_ns"] -= 1
        words = ["makespan_ns"]
    elif kind == "raised bound":
        doc["bounds"][0]["ns"] = doc["makespan_ns"] + 1
        words = ["lower_bound_ns"]
    else:
        argv = ["--timing", "separate-noc"]
        words = ["shared-noc", "separate-noc"]
    source = tmp_path / "cert.json"
    source.write_text(json.dumps(doc))
    out = tmp_path / "more.json"
    capsys.readouterr()
    assert main(["certify", str(source), *argv, "--time-limit", "2", "-q", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(source) in err[0], err
    for word in words:
        assert word in err[0], (word, err[0])
    assert not out.exists()


@pytest.mark.parametrize("name", ["instance", "plan", "certificate"])
def test_the_schema_command_prints_the_shipped_schema(name, capsys):
    assert main(["schema", name]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == elk_opt.schema(name)
    assert printed["title"] == {"instance": "elk-instance/1", "plan": "elk-plan/1",
                                "certificate": "elk-certificate/1"}[name]


def test_a_script_calling_certify_without_a_main_guard_is_told_why_it_failed(tmp_path):
    script = tmp_path / "unguarded.py"
    script.write_text("import elk_opt\n"
                      "instance = elk_opt.synthetic_instance(ops=6, plans=2, seed=3)\n"
                      "elk_opt.certify(instance, time_limit_s=5, threads=1)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert "WorkerEnded" in last and 'if __name__ == "__main__":' in last, done.stderr[-2000:]


# ---------------------------------------------------------------------------- interrupts

@contextlib.contextmanager
def certify_running(tmp_path: Path, cert: Path, line: str
                    ) -> Iterator[tuple[subprocess.Popen, Path]]:
    """`elk-opt certify` (600 s budget) on a 60-op synthetic instance, in a session of its own,
    once its progress on stderr shows `line`; the whole group is killed on the way out."""
    inst, log = tmp_path / "i.json", tmp_path / "err.txt"
    save_instance(inst, elk_opt.synthetic_instance(ops=60, plans=4, seed=5))
    with log.open("w") as err:
        proc = subprocess.Popen(["elk-opt", "certify", str(inst), "--time-limit", "600",
                                 "--threads", "1", "-o", str(cert)],
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while line not in log.read_text():
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield proc, log
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_writes_the_best_certificate_so_far(signum, tmp_path):
    cert = tmp_path / "cert.json"
    with certify_running(tmp_path, cert, "linear-time bounds and Basic") as (proc, log):
        if signum == signal.SIGINT:
            os.killpg(proc.pid, signum)  # Ctrl-C: the whole group, worker included
        else:
            proc.send_signal(signum)  # SIGTERM: elk-opt alone
        assert proc.wait(timeout=30) == 128 + signum, log.read_text()
    text = log.read_text()
    assert "interrupted" in text and "best certificate so far" in text, text
    doc = json.loads(cert.read_text())
    assert doc["search"]["stopped"].startswith("interrupted")
    assert_holds_interrupted(doc)
    assert not list(tmp_path.glob(".*.tmp"))


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
def test_sigkill_to_certify_ends_its_solver_worker(tmp_path):
    # SIGKILL runs no clean-up: the worker, mid-solve (minutes left), must end on its own
    cert = tmp_path / "cert.json"
    with certify_running(tmp_path, cert, "running the solver-backed bounds") as (proc, _log):
        started = descendants(proc.pid)
        assert started, "the solver worker is traced"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert not wait_gone(started, seconds=10), "the worker outlived the killed certify"
    assert not cert.exists()


def assert_holds_interrupted(doc: dict) -> None:
    assert elk_opt.verify(doc["plan"])["valid"]
    assert doc["lower_bound_ns"] <= doc["makespan_ns"]
    assert check(doc).problems == []


def test_a_free_order_plan_is_certified_with_bounds_for_every_order(worker):
    """CP-SAT's free-order optimum on two chains that join: certify solves over every order
    too, so its proof (and the any-order cuts) close the gap."""
    instance = branching()
    plan = solve(instance, "cpsat", SolveOptions(timing="separate-noc", exec_order="free",
                                                 threads=1))
    assert exec_order(plan) == "free" and plan.claims.status == "optimal"
    doc = certify(plan, time_limit_s=8, threads=1, worker=worker)
    assert {b["exec_order"] for b in doc["bounds"]} == {"any"}
    assert {"ideal", "hbm-cut-any"} <= {b["name"] for b in doc["bounds"]}
    assert doc["lower_bound_ns"] == doc["makespan_ns"] == plan.claims.makespan_ns
    assert_holds(doc)


def test_a_budget_is_split_over_distinct_windows_only():
    instance = elk_opt.synthetic_instance(ops=36, plans=1, seed=3, tightness=0.6)  # 3 layers
    lim = Limits("shared-noc", 2000, 120.0, 0, 0, 0, 0, 12, 30.0, 1, 30.0, 0, 120.0, 1, False)
    capped = _capped(lim, 6.0, instance)
    # 3 windows of 12 ops and 3 layers, 2 of each distinct (the first, then the repeated one)
    assert capped.window_time_s == 3.0
    assert capped.layers_time_s == 1.5
    assert _capped(lim, 0.01, instance) is None


def test_the_layer_windows_and_their_lp_stay_within_a_budget(monkeypatch):
    import elk_opt.bounds.fluid_layers as fluid_layers

    instance = elk_opt.synthetic_instance(ops=36, plans=1, seed=3, tightness=0.6)
    lower_bounds(instance, window=0, layers=0, fluid_sram_max_ops=0, lp_max_ops=0)  # imports
    given: list[float] = []
    real = fluid_layers.fluid_layers_bound

    def spy(*args, **kwargs):
        given.append(args[3])  # lp_time_s
        return real(*args, **kwargs)

    monkeypatch.setattr(fluid_layers, "fluid_layers_bound", spy)
    budget = 6.0
    rows = {r["bound"]: r for r in lower_bounds(instance, time_budget_s=budget, window=0,
                                                threads=1, fluid_sram_max_ops=0,
                                                lp_max_ops=0)["bounds"]}
    if rows["layers1"]["status"] == "skipped":
        return  # the fluid LP spent the budget on a loaded machine: nothing to check
    # the LP is limited to what the windows left, not to what was left before them
    assert given and given[0] <= max(MIN_SOLVER_S, budget - rows["layers1"]["wall_s"]) + 0.01
    # its row records the uncapped limit, under which `recompute` reaches the same optimum
    if rows["fluid-layers"]["ns"] is not None:
        assert recompute(instance, "shared-noc", "fluid-layers",
                         rows["fluid-layers"]["params"]) == rows["fluid-layers"]["ns"]


def test_elk_full_keeps_its_share_when_the_earlier_heuristics_spent_theirs():
    # the search is HEURISTIC_SHARE - ELK_FULL_SHARE into its budget: Static, LHS and Elk-Dyn
    # are not started, Elk-Full still runs under its own limit and hands back a valid plan
    instance = elk_opt.synthetic_instance(ops=40, plans=3, seed=2)
    found = Found(timing="separate-noc", time_limit_s=20.0, threads=1)
    found.started -= (HEURISTIC_SHARE - ELK_FULL_SHARE) * found.time_limit_s
    with Worker() as worker:
        _heuristics(instance, found, SolveOptions(timing="separate-noc", threads=1), worker,
                    progress=False)
    outcome = {p["phase"]: p["outcome"] for p in found.phases}
    assert all(outcome[m].startswith("not started") for m in ("static", "lhs", "elk-dyn"))
    assert outcome["elk-full"].split()[0].replace(",", "").isdigit(), outcome  # a plan came
    assert found.best is not None and found.best.claims.method == "elk-full"
    assert elk_opt.verify(plan_to_dict(found.best))["valid"]


def test_of_bounds_that_tie_the_certificate_names_one_check_recomputes():
    instance = elk_opt.synthetic_instance(ops=6, plans=2, seed=0)
    plan = solve(instance, "elk-full", SolveOptions(timing="shared-noc"))
    entry = {"ns": 1, "wall_s": 0.0, "exec_order": "instance", "timings": ["shared-noc"],
             "params": {}, "note": ""}
    proved = {**entry, "name": "cpsat", "status": "solver-proved"}
    ideal = {**entry, "name": "ideal", "status": "complete"}
    for bounds in ([proved, ideal], [ideal, proved]):
        assert build(plan, "shared-noc", bounds)["best_bound"] == "ideal"
