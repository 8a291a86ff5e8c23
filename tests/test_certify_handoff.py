"""What `certify` spares its solvers. A floor the caller gives (`SolveOptions.floor_ns`;
`certify` passes its best bound) replaces the fluid floor in `cpsat` and `polish`: it is not
computed again, it is claimed, a search from it still ends at the optimum, and a value that is
no lower bound on its face is refused with a line naming it. On instances CP-SAT solves whole,
the layer windows wait for the second bound round, and on a decoder layer CP-SAT runs the MIP
with loads run whole itself: it gets the floor and is asked for that MIP until a bound round
has run it."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import elk_opt
from elk_opt.certification import found as found_module
from elk_opt.certification import search as search_module
from elk_opt.certification import slices as slices_module
from elk_opt.certification.run import certify
from elk_opt.certification.worker import Worker
from elk_opt.errors import UsageError
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.io import plan_to_dict
from elk_opt.methods import solve
from elk_opt.solution import SolveOptions
from formulations.enumerate import enumerate_optimum, enumerate_shared_optimum
from tests.test_exact_shared import contended_instances
from tests.tiny import port_instance, tiny_instance
from verify import check

SHARED = SolveOptions(threads=1, timing="shared-noc", time_limit_s=20)
# Each op holds 60 of 100 B, so P1 cannot be pending at E0: the 5b optimum is 40 (the fluid
# LP alone says 30)
TWO_OPS = [(10, 60, 10, 60, 0), (10, 60, 10, 60, 0)]


@pytest.fixture
def no_fluid_floor(monkeypatch):
    def refuse(*_args, **_kwargs):
        raise AssertionError("the fluid floor was computed though a floor was given")

    monkeypatch.setattr("formulations.cpsat_prepare.fluid_floor", refuse)
    monkeypatch.setattr("formulations.polish_whole.fluid_floor", refuse)


@pytest.mark.parametrize("floor", [0, 30, 40])
def test_cpsat_under_5b_takes_the_given_floor_and_still_proves_the_optimum(floor,
                                                                         no_fluid_floor):
    plan = solve(tiny_instance(TWO_OPS), "cpsat", replace(SHARED, floor_ns=floor))
    c = plan.claims
    assert c.params["given_floor_ns"] == floor and c.params["fluid_bound_ns"] is None
    assert c.status == "optimal" and c.makespan_ns == c.lower_bound_ns == 40


def test_cpsat_under_section_5_takes_the_given_floor(no_fluid_floor):
    instance = synthetic_instance(ops=6, plans=2, seed=3)
    optimum = enumerate_optimum(instance).makespan_ns
    options = SolveOptions(threads=1, timing="separate-noc", floor_ns=optimum)
    plan = solve(instance, "cpsat", options)
    assert plan.claims.params["given_floor_ns"] == optimum
    assert plan.claims.status == "optimal" and plan.claims.makespan_ns == optimum


@settings(max_examples=15, deadline=None)
@given(contended_instances(max_ops=4), st.floats(0, 1))
def test_from_any_valid_given_floor_the_bound_never_passes_the_optimum(instance, share):
    optimum = enumerate_shared_optimum(instance).makespan_ns
    floor = int(share * optimum)
    plan = solve(instance, "cpsat", replace(SHARED, floor_ns=floor))
    c = plan.claims
    assert floor <= c.lower_bound_ns <= optimum <= c.makespan_ns
    if c.status == "optimal":
        assert c.makespan_ns == optimum


def test_polish_stops_at_once_when_its_start_meets_the_given_floor(no_fluid_floor):
    instance = synthetic_instance(ops=8, plans=3, seed=1, tightness=0.6)
    start = solve(instance, "elk-full", SHARED)
    options = replace(SHARED, warm_start="elk-full", warm_plan=start,
                      floor_ns=start.claims.makespan_ns)
    plan = solve(instance, "polish", options)
    c = plan.claims
    assert c.params["stopped"] == "meets the bound" and c.params["windows_solved"] == 0
    assert c.params["given_floor_ns"] == start.claims.makespan_ns
    assert c.status == "optimal" and c.lower_bound_ns == c.makespan_ns
    assert elk_opt.verify(plan)["valid"]


@pytest.mark.parametrize("floor", [-1, True, 1.5, "40"])
def test_a_floor_that_is_not_a_whole_number_of_ns_is_refused(floor):
    with pytest.raises(UsageError, match="floor_ns"):
        solve(tiny_instance(TWO_OPS), "cpsat", replace(SHARED, floor_ns=floor))


def test_a_floor_above_the_warm_start_is_refused():
    instance = tiny_instance(TWO_OPS)
    start = solve(instance, "elk-full", SHARED)
    options = replace(SHARED, warm_start="elk-full", warm_plan=start,
                      floor_ns=start.claims.makespan_ns + 1)
    for method in ("cpsat", "polish"):
        with pytest.raises(UsageError, match="floor_ns .* above the warm start's makespan"):
            solve(instance, method, options)


def test_a_floor_above_polishs_start_under_its_own_timing_is_refused():
    # the warm start is timed under section 5; the check times it under 5b, as polish does
    instance = tiny_instance(TWO_OPS)
    start = solve(instance, "elk-full", replace(SHARED, timing="separate-noc"))
    five_b = solve(instance, "polish", replace(SHARED, warm_start="elk-full", warm_plan=start))
    floor = five_b.claims.params["start_makespan_ns"] + 1
    options = replace(SHARED, warm_start="elk-full", warm_plan=start, floor_ns=floor)
    with pytest.raises(UsageError, match=f"floor_ns {floor:,} is above the warm start's "
                                          f"makespan {floor - 1:,} ns under shared-noc"):
        solve(instance, "polish", options)


def test_a_floor_above_a_plan_cpsat_finds_is_refused():
    # no warm start to compare with: the section-5 model's plan, 40 ns under 5b, shows it
    with pytest.raises(UsageError, match="floor_ns 41 is above"):
        solve(tiny_instance(TWO_OPS), "cpsat", replace(SHARED, floor_ns=41))


def test_certify_hands_its_best_bound_to_cpsat_as_the_floor(monkeypatch):
    monkeypatch.setattr(search_module, "CPSAT_CONTIGUOUS_MAX_OPS", 4)  # not on 9 ops
    instance = synthetic_instance(ops=9, plans=3, seed=2, tightness=0.8)
    with Worker() as worker:
        doc = certify(instance, time_limit_s=10, threads=1, worker=worker)
    rows = [b for b in doc["bounds"] if b["name"] == "cpsat"]
    if not rows:  # the heuristics and bounds closed the gap first: nothing was handed on
        assert doc["gap"] == 0
        return
    floor = rows[0]["params"]["floor_ns"]
    assert floor is not None and floor <= rows[0]["ns"] <= doc["lower_bound_ns"]


def _bound_rounds(monkeypatch) -> list[dict]:
    """The arguments of every bound round `certify` runs from now on."""
    rounds: list[dict] = []
    real = search_module.call

    def spy(found, worker, task, deadline):
        if task.kind == "bounds":
            rounds.append(dict(task.args))
        return real(found, worker, task, deadline)

    monkeypatch.setattr(search_module, "call", spy)
    return rounds


def test_on_instances_cpsat_solves_whole_the_layer_windows_and_the_contiguous_mip_wait(
        monkeypatch):
    rounds = _bound_rounds(monkeypatch)
    # solvers that find nothing: the gap stays open, so a second round comes
    monkeypatch.setattr(search_module, "_plan_round", lambda *_args, **_kwargs: False)
    instance = synthetic_instance(ops=9, plans=3, seed=2, tightness=0.8)
    with Worker() as worker:
        doc = certify(instance, time_limit_s=8, threads=1, worker=worker)
    assert len(rounds) >= 2 and rounds[0]["layers"] == 0 and "layers" not in rounds[1]
    assert rounds[0]["fluid_contiguous_max_ops"] == 0
    # round two solves what round one did not, and not again the MIP round one finished
    assert "fluid_contiguous_max_ops" not in rounds[1] and rounds[1]["fluid_milp_max_ops"] == 0
    assert {"layers1", "fluid-layers", "fluid-milp", "fluid-contiguous"} <= {
        b["name"] for b in doc["bounds"]}


def test_on_a_layer_cpsat_gets_the_floor_and_is_asked_to_run_the_contiguous_mip(monkeypatch):
    rounds = _bound_rounds(monkeypatch)
    asked: list[SolveOptions] = []
    real = search_module.call

    def spy(found, worker, task, deadline):
        if task.kind == "solve" and task.args["method"] == "cpsat":
            asked.append(task.args["options"])
        return real(found, worker, task, deadline)

    monkeypatch.setattr(search_module, "call", spy)
    instance = synthetic_instance(ops=9, plans=3, seed=2, tightness=0.8)
    # a budget that leaves CP-SAT its turn on a loaded machine too (it proves in about a
    # second, and the search stops there)
    with Worker() as worker:
        doc = certify(instance, time_limit_s=30, threads=1, worker=worker)
    assert rounds[0]["fluid_contiguous_max_ops"] == 0 and rounds[0]["replay"] is True
    # the bounds and heuristics leave this instance open: CP-SAT runs from the best bound,
    # asked for the MIP no bound round has run, and does not compute the fluid floor again
    assert asked and asked[0].floor_ns is not None and asked[0].loads_run_whole is True
    rows = [b for b in doc["bounds"] if b["name"] == "cpsat"]
    assert rows and rows[0]["params"]["floor_ns"] == asked[0].floor_ns


def test_a_contiguous_mip_cpsat_finished_is_listed_and_not_solved_again(monkeypatch):
    rounds: list[dict] = []
    real = search_module.call

    def spy(found, worker, task, deadline):
        if task.kind == "bounds":
            rounds.append(dict(task.args))
        if task.kind == "solve" and task.args["method"] == "cpsat":  # as if it ran the MIP
            warm = task.args["options"].warm_plan
            params = {"fluid_contiguous_ns": 1, "fluid_contiguous_complete": True,
                      "fluid_contiguous_s": 0.1}
            return replace(warm, claims=replace(warm.claims, method="cpsat", status="feasible",
                                                lower_bound_ns=1, params=params))
        return real(found, worker, task, deadline)

    monkeypatch.setattr(search_module, "call", spy)
    monkeypatch.setattr(search_module, "POLISH_SHARE", 0.0)  # polish does not run
    instance = synthetic_instance(ops=9, plans=3, seed=2, tightness=0.8)
    with Worker() as worker:
        doc = certify(instance, time_limit_s=8, threads=1, worker=worker)
    listed = [b for b in doc["bounds"] if b["name"] == "fluid-contiguous"]
    assert listed and listed[0]["note"].startswith("solved by cpsat")
    assert len(rounds) >= 2 and rounds[1]["fluid_contiguous_max_ops"] == 0


@pytest.mark.parametrize(("ops", "status", "leaves"), [
    (9, None, True), (9, "skipped", True), (9, "complete", False), (9, "time-limit", False),
    (40, None, False)])
def test_cpsat_runs_the_contiguous_mip_on_small_instances_until_a_bound_round_did(
        ops, status, leaves):
    found = found_module.Found(timing="shared-noc", time_limit_s=60, threads=1)
    if status is not None:
        found.bounds["fluid-contiguous"] = {"name": "fluid-contiguous", "ns": 1,
                                            "status": status}
    instance = synthetic_instance(ops=ops, plans=2, seed=0)
    assert search_module._leaves_contiguous_to_cpsat(instance, found) is leaves


def test_above_what_cpsat_solves_whole_the_first_round_has_the_layer_windows(monkeypatch):
    rounds = _bound_rounds(monkeypatch)
    monkeypatch.setattr(found_module, "CPSAT_MAX_OPS", 4)
    instance = synthetic_instance(ops=9, plans=3, seed=2, tightness=0.8)
    with Worker() as worker:
        certify(instance, time_limit_s=6, threads=1, worker=worker)
    assert rounds and "layers" not in rounds[0]


def test_a_polish_phase_record_says_what_its_moves_did():
    instance = synthetic_instance(ops=24, plans=3, seed=1, tightness=0.6)
    start = solve(instance, "basic", SHARED)
    plan = solve(instance, "polish", replace(SHARED, time_limit_s=5, warm_start="basic",
                                             warm_plan=start))
    said = search_module._moves(plan)
    params = plan.claims.params
    assert plan.claims.makespan_ns < start.claims.makespan_ns  # Basic leaves room here
    assert (f"{params['windows_improved']} windows improved" in said) == \
        (params["windows_improved"] > 0)
    assert said != "; no move gained"
    assert search_module._moves(start) == ""


def test_above_what_cpsat_solves_whole_a_slice_is_solved_once_and_tiled(monkeypatch):
    # seven identical layers: Elk-Full's plans of the first few and CP-SAT's of one slice,
    # tiled onto all seven, beat Basic's plan of the whole and verify
    monkeypatch.setattr(found_module, "CPSAT_MAX_OPS", 30)
    # a share no loaded machine spends on Elk-Full's slices (well under a second each), and
    # CP-SAT ended by a deterministic work limit, not by the share
    monkeypatch.setattr(slices_module, "SLICE_SHARE", 0.5)
    instance = synthetic_instance(ops=84, plans=3, seed=5, tightness=0.6)
    found = found_module.Found(timing="shared-noc", time_limit_s=600, threads=1)
    basic = solve(instance, "basic", SolveOptions(timing="shared-noc"))
    found_module.offer_plan(found, basic)
    with Worker() as worker:
        worker.start()
        options = SolveOptions(timing="shared-noc", threads=1, work_limit=0.1)
        assert slices_module.slice_phase(instance, found, options, worker, False)
        assert not slices_module.slice_phase(instance, found, options, worker, False)
    best = found.best
    assert best.claims.method == "tiled" and best.claims.params["slice_layers"] in (3, 4, 5, 6)
    assert best.claims.makespan_ns < basic.claims.makespan_ns
    assert check(plan_to_dict(best)).valid
    # Elk-Full on slices of 3 to 6 of the 7 layers, then CP-SAT on one of them, then one
    # pair per op class on that one
    assert [p["phase"] for p in found.phases] == (["slice, elk-full"] * 4
                                                  + ["slice, cpsat", "slice, pairs per class"])
    assert [p["outcome"].split(":")[0] for p in found.phases][:4] == [
        f"{k} layers" for k in (3, 4, 5, 6)]
    assert found.phases[-1]["outcome"].split(":")[0] == found.phases[-2]["outcome"].split(":")[0]


@pytest.mark.parametrize(("budget_before", "deferred", "runs"), [
    (0.0, False, True),  # none before in this search (a continued certificate's first round)
    (1000.0, False, False),  # a bound ran out of time with more than this round has
    (1000.0, True, True),  # what the round before deferred runs whatever the time
])
def test_a_later_bound_round_runs_only_with_more_time_or_for_what_was_deferred(
        monkeypatch, budget_before, deferred, runs):
    calls = []

    def fake(found, worker, task, deadline):
        calls.append(task.args["time_budget_s"])
        return {"bounds": []}

    monkeypatch.setattr(search_module, "call", fake)
    found = found_module.Found(timing="shared-noc", time_limit_s=600, threads=1,
                               bound_budget=budget_before, deferred=deferred)
    found.bounds["fluid"] = {"name": "fluid", "ns": 1, "status": "time-limit", "note": ""}
    instance = synthetic_instance(ops=9, plans=2, seed=0)
    search_module._bound_round(instance, found, None, 2, progress=False)
    assert bool(calls) is runs
    if runs:
        assert found.bound_budget == max(budget_before, calls[0])


def test_elk_full_reschedules_the_best_plans_pairs_once_per_best_plan(monkeypatch):
    monkeypatch.setattr(found_module, "CPSAT_MAX_OPS", 20)  # CP-SAT would take it whole
    instance = synthetic_instance(ops=24, plans=3, seed=1, tightness=0.6)
    basic = solve(instance, "basic", SHARED)
    held = slices_module.held_to_pairs(instance, basic)
    assert all(len(op.exec_plans) == len(op.preload_plans) == len(op.warmup) == 1
               for op in held.ops)
    found = found_module.Found(timing="shared-noc", time_limit_s=600, threads=1)
    found_module.offer_plan(found, basic)
    with Worker() as worker:
        worker.start()
        options = SolveOptions(timing="shared-noc", threads=1)
        assert slices_module.elk_full_at_best_pairs(instance, found, options, worker, False)
        again = found.best  # an Elk-Full plan: nothing to hold to
        assert not slices_module.elk_full_at_best_pairs(instance, found, options, worker,
                                                        False)
    assert again.claims.method == "elk-full" and again.choice == basic.choice
    assert again.claims.makespan_ns < basic.claims.makespan_ns  # Basic preloads only the next op
    assert again.claims.makespan_ns == solve(held, "elk-full", SHARED).claims.makespan_ns
    assert check(plan_to_dict(again)).valid
    assert [p["phase"] for p in found.phases] == [slices_module.HELD_PAIRS]


def test_the_pairs_descent_runs_again_once_from_a_later_best_plan(monkeypatch):
    # seven identical layers: the slice phase ran before (here: in a certificate this search
    # continues), so the descent runs once more, from the best plan's pairs, and only once
    monkeypatch.setattr(found_module, "CPSAT_MAX_OPS", 30)
    instance = synthetic_instance(ops=84, plans=3, seed=5, tightness=0.6)
    basic = solve(instance, "basic", SolveOptions(timing="shared-noc"))
    options = SolveOptions(timing="shared-noc", threads=1)
    with Worker() as worker:
        worker.start()
        fresh = found_module.Found(timing="shared-noc", time_limit_s=600, threads=1)
        found_module.offer_plan(fresh, basic)
        # before any slice phase: that phase runs the descent itself
        assert not slices_module.pairs_from_best(instance, fresh, options, worker, False)
        found = found_module.Found(timing="shared-noc", time_limit_s=600, threads=1,
                                   sliced=True)
        found_module.offer_plan(found, basic)
        gained = slices_module.pairs_from_best(instance, found, options, worker, False)
        assert not slices_module.pairs_from_best(instance, found, options, worker, False)
    assert fresh.phases == []
    assert [p["phase"] for p in found.phases] == [slices_module.PAIRS]
    assert found.phases[0]["outcome"].startswith(f"{slices_module.PAIRS_AGAIN_LAYERS} layers")
    assert found.started_from[slices_module.PAIRS] is basic
    best = found.best
    assert gained == (best is not basic)
    assert best.claims.makespan_ns <= basic.claims.makespan_ns
    assert check(plan_to_dict(best)).valid


@pytest.mark.parametrize(("revision", "kept"), [
    (found_module.BOUNDS_REVISION, 100),  # this revision's bound: the higher one stays
    (found_module.BOUNDS_REVISION - 1, 98),  # an earlier one's: what --check recomputes
])
def test_a_bound_round_after_a_revision_keeps_this_revisions_value(monkeypatch, revision,
                                                                   kept):
    row = {"bound": "fluid", "ns": 98, "status": "complete", "wall_s": 1.0,
           "order": "instance", "timings": "shared-noc", "params": {}, "note": ""}
    monkeypatch.setattr(search_module, "call", lambda *_args: {"bounds": [row]})
    found = found_module.Found(timing="shared-noc", time_limit_s=600, threads=1,
                               bounds_revision=revision, deferred=True)
    found.bounds["fluid"] = {"name": "fluid", "ns": 100, "status": "complete", "note": "",
                             "exec_order": "instance"}
    instance = synthetic_instance(ops=9, plans=2, seed=0)
    search_module._bound_round(instance, found, None, 2, progress=False)
    assert found.bounds["fluid"]["ns"] == kept
    assert found.bounds_revision == found_module.BOUNDS_REVISION


# fluid-contiguous is 16 ns here, fluid-whole-ns 17, the optimum (tests/test_bounds.py)
WHOLE_NS = [(0, 0, 7, 4), (0, 0, 7, 4), (9, 4, 1, 0)]


def _within_reach(whole_ns: dict | None = None):
    """A search whose best plan lies a ns above a fluid-contiguous that finished in 0.5 s,
    and the fluid-whole-ns entry given, if any."""
    instance = port_instance(WHOLE_NS)
    plan = solve(instance, "basic", SolveOptions(timing="shared-noc"))
    found = found_module.Found(timing="shared-noc", time_limit_s=600, threads=1,
                               bound_budget=1000.0)
    found_module.offer_plan(found, plan)
    makespan = plan.claims.makespan_ns
    found.bounds["fluid-contiguous"] = {"name": "fluid-contiguous", "ns": makespan - 1,
                                        "status": "complete", "wall_s": 0.5, "note": "",
                                        "exec_order": "instance"}
    if whole_ns is not None:
        found.bounds["fluid-whole-ns"] = {**found.bounds["fluid-contiguous"],
                                          "name": "fluid-whole-ns", **whole_ns}
    return instance, found, makespan


@pytest.mark.parametrize(("whole_ns", "again"), [
    (None, True),  # not tried yet
    ({"status": "time-limit", "wall_s": 0.7}, True),  # cut short by a round's budget
    ({"status": "time-limit", "wall_s": 2.1}, False),  # stopped at its cap, 4 x 0.5 s
    ({"status": "complete", "wall_s": 1.0}, False),
], ids=["not tried", "cut short", "at its cap", "finished"])
def test_a_bound_round_runs_the_whole_ns_mip_once_the_plan_is_within_its_reach(
        monkeypatch, whole_ns, again):
    calls = []

    def fake(found, worker, task, deadline):
        calls.append(task.args)
        return {"bounds": []}

    monkeypatch.setattr(search_module, "call", fake)
    monkeypatch.setattr(search_module, "_bounds_could_grow", lambda found: False)
    # nothing else could grow and the round has no more time than one before had: a round
    # runs only for a whole-ns MIP not tried yet
    instance, found, makespan = _within_reach(whole_ns)
    search_module._bound_round(instance, found, None, 2, progress=False)
    assert len(calls) == (whole_ns is None)
    # a round that runs: the whole-ns MIP after the fluid-contiguous already finished, unless
    # it finished too or stopped at its cap
    instance, found, makespan = _within_reach(whole_ns)
    found.bound_budget = 0.0
    monkeypatch.setattr(search_module, "_bounds_could_grow", lambda found: True)
    calls.clear()
    search_module._bound_round(instance, found, None, 2, progress=False)
    (args,) = calls
    assert args["whole_ns"] and args["plan_ns"] == makespan
    assert args["fluid_contiguous_max_ops"] == 0
    assert args.get("contiguous_done") == ((makespan - 1, 0.5) if again else None)


def test_polish_waits_for_the_bound_round_while_the_whole_ns_mip_may_prove_the_plan(
        monkeypatch):
    asked = []

    def fake(found, worker, task, deadline):
        asked.append(task.args["method"])
        return task.args["options"].warm_plan

    monkeypatch.setattr(search_module, "call", fake)
    instance, found, _ = _within_reach()
    options = SolveOptions(timing="shared-noc", threads=1)
    search_module._plan_round(instance, found, options, None, progress=False)
    assert asked == ["cpsat"]
    found.bounds["fluid-whole-ns"] = {**found.bounds["fluid-contiguous"],
                                      "name": "fluid-whole-ns", "status": "time-limit"}
    found.started_from.clear()
    asked.clear()
    search_module._plan_round(instance, found, options, None, progress=False)
    assert asked == ["cpsat", "polish"]
