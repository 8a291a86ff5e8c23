"""`polish` at scale: layer windows, the region model and its splice, twins, limits, bounds."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from elk_opt.bounds.cheap import best_cheap_bound
from elk_opt.errors import UsageError
from elk_opt.evaluate import evaluate, evaluate_plan
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.io import load_instance, plan_to_dict
from elk_opt.methods import solve as run_method
from elk_opt.problem import Choice, Plan
from elk_opt.solution import SolveOptions, make_plan
from formulations import polish
from formulations.common import feasible_pairs
from formulations.lns_advance import advance_loads
from formulations.lns_holds import hold_executes
from formulations.lns_periodic import (
    anchors,
    copy_layer,
    copy_twins,
    fit_sram,
    program_of,
    twin_classes,
)
from formulations.lns_region import move_key, region_model, region_of, splice
from formulations.lns_windows import windows
from formulations.polish_search import Search, incumbent_of
from formulations.polish_whole import take_loads_run_whole
from tests.strategies import random_instances, synthetic_instances
from tests.tiny import parse, port_instance, tiny_instance
from verify import check

TIMINGS = ("separate-noc", "shared-noc")


def _holds(plan, start: int) -> int:
    """The plan verifies, its claims hold (R6), it is no worse than its start, and it claims
    at least the best linear-time bound."""
    report = check(plan_to_dict(plan))
    assert report.valid, report.violations
    c = plan.claims
    assert c.makespan_ns == evaluate_plan(plan).makespan_ns == report.makespan_ns
    assert c.makespan_ns <= start
    assert best_cheap_bound(plan.instance, plan.timing) <= c.lower_bound_ns <= c.makespan_ns
    assert (c.params["fluid_bound_ns"] or 0) <= c.lower_bound_ns
    assert (c.status == "optimal") == (c.lower_bound_ns == c.makespan_ns)
    return c.makespan_ns


def test_polish_stops_at_once_when_its_start_meets_the_fluid_bound():
    instance = port_instance([(7, 7, 5, 5)])  # one op: it loads, then runs
    start = run_method(instance, "basic", SolveOptions(timing="shared-noc"))
    plan = run_method(instance, "polish", SolveOptions(
        threads=1, timing="shared-noc", time_limit_s=30, warm_start="basic", warm_plan=start))
    c = plan.claims
    assert c.params["fluid_bound_ns"] == 12 == c.makespan_ns
    assert c.params["stopped"] == "meets the bound" and c.params["windows_solved"] == 0
    assert c.status == "optimal" and _holds(plan, 12) == 12


@settings(max_examples=12, deadline=None)
@given(synthetic_instances(max_ops=30, max_plans=4), st.sampled_from(TIMINGS),
       st.sampled_from(["basic", "elk-dyn"]))
def test_polish_verifies_and_never_worsens_its_start(instance, timing, warm):
    start = run_method(instance, warm, SolveOptions(timing=timing))
    # windows stop on work, not on seconds: a second of wall clock per window let one loaded
    # run of this test take 18 minutes
    plan = run_method(instance, "polish", SolveOptions(
        threads=1, timing=timing, warm_start=warm, warm_plan=start, work_limit=0.1,
        params={"margin": 1}))
    assert plan.claims.params["start_makespan_ns"] == start.claims.makespan_ns
    _holds(plan, start.claims.makespan_ns)


@settings(max_examples=10, deadline=None)
@given(random_instances(max_ops=7, max_plans=3, noc=True), st.sampled_from(TIMINGS))
def test_polish_on_unlayered_instances_verifies(instance, timing):
    start = run_method(instance, "basic", SolveOptions(timing=timing))
    plan = run_method(instance, "polish", SolveOptions(
        threads=1, timing=timing, warm_start="basic", warm_plan=start, work_limit=0.1,
        params={"width": 3, "stride": 2, "margin": 1}))
    _holds(plan, start.claims.makespan_ns)


@settings(max_examples=15, deadline=None)
@given(synthetic_instances(max_ops=40, max_plans=4), st.sampled_from(TIMINGS),
       st.integers(0, 3), st.data())
def test_splicing_the_incumbents_own_region_gives_the_incumbent_back(instance, timing, margin,
                                                                     data):
    plan = run_method(instance, "elk-dyn", SolveOptions(timing=timing))
    pairs = feasible_pairs(instance, timing)
    inc = incumbent_of(instance, pairs, plan, timing)
    w = data.draw(st.sampled_from(windows(instance, 1, 5, 2, data.draw(st.booleans()))))
    r = region_of(instance, inc, w.first, w.stop, margin)
    own = tuple((k, j - r.lo) for k, j in plan.program if r.lo <= j < r.hi)
    choice, program, release = splice(inc, r, list(plan.choice[r.lo:r.hi]), own, {}, 0)
    assert program == plan.program and choice == plan.choice
    assert evaluate(instance, choice, program, release, timing=timing) == inc.schedule
    # following the incumbent's own HBM timeline, with the later loads held at their starts
    s = inc.schedule
    timeline = {j: s.load_start[j] for j in range(r.lo, r.hi) if s.load_end[j] > s.load_start[j]}
    choice, program, release = splice(inc, r, list(plan.choice[r.lo:r.hi]), own, {}, 0,
                                      model_loads=timeline)
    assert evaluate(instance, choice, program, release, timing=timing) == s


@pytest.mark.parametrize("timing", TIMINGS)
@settings(max_examples=20, deadline=None)
@given(synthetic_instances(max_ops=40, max_plans=4), st.integers(0, 2), st.data())
def test_the_incumbent_solves_its_region_model_at_its_value(timing, instance, margin, data):
    # Its own times, beside the later loads the model holds fixed (under 5b their port share
    # included), meet every constraint and give the value polish must beat; the first
    # execute may start long after the region's base (a 9-op case once left the horizon).
    plan = run_method(instance, data.draw(st.sampled_from(["elk-dyn", "elk-full"])),
                      SolveOptions(timing=timing))
    pairs = feasible_pairs(instance, timing)
    inc = incumbent_of(instance, pairs, plan, timing)
    w = data.draw(st.sampled_from(windows(instance, 0, 4, 3, data.draw(st.booleans()))))
    r = region_of(instance, inc, w.first, w.stop, margin, data.draw(st.integers(0, 1)))
    _assert_the_incumbent_solves_its_region(instance, pairs, inc, r, timing)


def test_a_region_that_starts_long_before_its_first_execute_admits_itsincumbent_of():
    # ops 2-8 of this plan: the incoming load of op 2 starts at 36,851 ns, the region's first
    # execute at 99,523, and the region's own loads and executes sum to 186,202 ns, less
    # than its end (187,199): the model's horizon counts from its boundary times
    instance = synthetic_instance(ops=9, plans=1, seed=0, tightness=0.0)
    timing = "separate-noc"
    plan = run_method(instance, "elk-dyn", SolveOptions(timing=timing))
    pairs = feasible_pairs(instance, timing)
    inc = incumbent_of(instance, pairs, plan, timing)
    r = region_of(instance, inc, 6, 9, 0)
    assert (r.lo, r.base, inc.schedule.exec_start[r.lo]) == (2, 0, 99_523)
    _assert_the_incumbent_solves_its_region(instance, pairs, inc, r, timing)


def _assert_the_incumbent_solves_its_region(instance, pairs, inc, r, timing):
    cm, value = region_model(instance, pairs, inc, r, timing)
    solver = cp_model.CpSolver()
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.num_workers = 1
    assert solver.solve(cm.model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    assert round(solver.objective_value) == value == inc.schedule.exec_end[r.hi - 1] - r.base


def test_windows_follow_layers_and_cover_every_op_once():
    instance = synthetic_instance(ops=50, plans=3, seed=1)  # 4 layers of 12 and 2 ops more
    for layers, straddle in ((0, False), (0, True), (1, False), (2, False), (1, True)):
        ws = windows(instance, layers, 5, 2, straddle)
        assert ws[0].first == 0 and ws[-1].stop == 50
        assert all(a.stop == b.first for a, b in zip(ws, ws[1:], strict=False))
    assert [(w.first, w.stop) for w in windows(instance, 1, 24, 12, False)] == [
        (0, 12), (12, 24), (24, 36), (36, 48), (48, 50)]
    assert [(w.first, w.stop) for w in windows(instance, 1, 24, 12, True)] == [
        (0, 6), (6, 18), (18, 30), (30, 42), (42, 49), (49, 50)]
    assert [(w.first, w.stop) for w in windows(instance, 0, 6, 3, False)][:3] == [
        (0, 6), (6, 12), (12, 18)]
    assert [(w.first, w.stop) for w in windows(instance, 0, 6, 3, True)][:3] == [
        (0, 3), (3, 9), (9, 15)]


def test_a_repeated_layer_is_solved_once_and_applied_to_its_twins():
    # Six identical layers from the weakest start: the first layer window to gain is
    # applied to the other layers, each checked whole.
    instance = synthetic_instance(ops=72, plans=4, seed=3, tightness=0.6)
    pairs = feasible_pairs(instance, "shared-noc")
    search = Search(instance, pairs, run_method(instance, "basic", SolveOptions()),
                     "shared-noc")
    r = region_of(instance, search.inc, 24, 36, 1)
    assert search.twin_shifts(r) == [-12, 12, 24]  # the regions [11, 37) shifted a layer
    start = run_method(instance, "basic", SolveOptions(timing="shared-noc"))
    plan = run_method(instance, "polish", SolveOptions(  # windows stop on work, not seconds
        threads=1, timing="shared-noc", warm_start="basic", warm_plan=start, work_limit=0.2,
        params={"margin": 1}))
    params = plan.claims.params
    assert params["twins_applied"] >= 1
    assert params["windows_solved"] < params["passes"] * 7  # not every window of every pass
    _holds(plan, start.claims.makespan_ns)


def test_a_time_limit_returns_the_best_plan_with_the_reason():
    instance = synthetic_instance(ops=96, plans=5, seed=7, tightness=0.6)
    start = run_method(instance, "basic", SolveOptions(timing="shared-noc"))
    options = SolveOptions(threads=1, timing="shared-noc", warm_start="basic", warm_plan=start,
                           time_limit_s=1.0)
    plan = run_method(instance, "polish", options)
    assert plan.claims.params["stopped"] in ("time limit", "local optimum", "whole instance")
    _holds(plan, start.claims.makespan_ns)
    # without a limit it runs to a local optimum (windows on work: 0.5 s of wall clock each
    # cost 70 s of CPU here, a work budget of 0.1 about 9 s)
    plan = run_method(instance, "polish", replace(options, time_limit_s=None, work_limit=0.1))
    assert plan.claims.params["stopped"] == "local optimum"


def test_a_fixed_work_budget_repeats():
    """Polish on a work budget repeats byte for byte (wall_s aside); the heuristics' own
    repeatability is tests/test_solver_limits.py's."""
    instance = synthetic_instance(ops=36, plans=4, seed=5, tightness=0.6)
    start = run_method(instance, "basic", SolveOptions(timing="shared-noc"))
    options = SolveOptions(threads=1, work_limit=0.1, timing="shared-noc", warm_start="basic",
                           warm_plan=start, params={"margin": 1})

    def text(plan) -> str:
        data = plan_to_dict(plan)
        data["claims"].pop("wall_s")
        return json.dumps(data, sort_keys=True)

    assert text(run_method(instance, "polish", options)) == text(
        run_method(instance, "polish", options))


CALIBRATION = Path(__file__).parent / "data" / "elk-artifact-llama2-13b-b32-kv2048-layer.json"


def test_holding_an_execute_back_recovers_most_of_the_calibration_layers_loss():
    # The 5b optimum (193,466 ns) releases the layer's first NoC-heavy execute late so the
    # qkv_proj load has the port; Elk-Full (200,652 ns) holds only loads back.
    instance = load_instance(CALIBRATION)
    full = run_method(instance, "elk-full", SolveOptions(timing="shared-noc"))
    held, count = hold_executes(instance, full, None)
    assert count >= 1 and held.program == full.program and held.choice == full.choice
    after = evaluate_plan(held).makespan_ns
    assert 193_466 <= after < full.claims.makespan_ns
    assert after < 0.97 * full.claims.makespan_ns  # most of the 3.7% gap


@settings(max_examples=15, deadline=None)
@given(random_instances(max_ops=7, max_plans=3, noc=True))
def test_holding_executes_back_never_worsens_a_plan(instance):
    plan = run_method(instance, "elk-dyn", SolveOptions(timing="shared-noc"))
    held, count = hold_executes(instance, plan, None)
    after = evaluate_plan(held)
    assert after.makespan_ns <= plan.claims.makespan_ns
    assert (count == 0) == (held is plan)
    assert after.peak_sram_bytes <= instance.chip.sram_bytes


def test_a_load_issued_sooner_drops_the_release_that_held_it():
    # op 1's load waits for op 0's execute and for a release at its end; issued before E0
    # and released at once, it runs beside E0: 45 -> 35 ns
    instance = port_instance([(10, 0, 20, 0), (10, 0, 5, 0)])
    choice = [Choice(exec=0, preload=0)] * 2
    plan = make_plan(instance, choice, parse("P0 E0 P1 E1"), release_ns={("P", 1): 30},
                     method="test", started=0.0, timing="separate-noc")
    assert plan.claims.makespan_ns == 45
    sooner, count = advance_loads(instance, plan, None)
    assert count == 1 and sooner.program == tuple(parse("P0 P1 E0 E1"))
    assert ("P", 1) not in sooner.release_ns
    assert evaluate_plan(sooner).makespan_ns == 35


def test_loads_are_issued_sooner_again_after_a_pass_of_windows_gains_nothing(monkeypatch):
    """The windows move loads, so the sweep runs again before the windows grow (here the
    second sweep finds 2 moves after the first's 8); `loads_advanced` counts every sweep's.
    The knob `sooner` 1 sweeps once, 0 never."""
    swept: list[int] = []
    found_nothing_on: list[Plan] = []

    def recording(instance, plan, *args, **kwargs):
        # a sweep never runs again on a plan a finished sweep found nothing on (no time limit
        # here, so every sweep finishes)
        assert all(plan is not p for p in found_nothing_on)
        after, count = advance_loads(instance, plan, *args, **kwargs)
        swept.append(count)
        if not count:
            found_nothing_on.append(plan)
        return after, count

    monkeypatch.setattr(polish, "advance_loads", recording)
    instance = synthetic_instance(ops=36, plans=4, seed=5, tightness=0.6)
    start = run_method(instance, "basic", SolveOptions(timing="shared-noc"))
    plan = run_method(instance, "polish", SolveOptions(
        threads=1, work_limit=0.1, timing="shared-noc", warm_start="basic", warm_plan=start,
        params={"margin": 1}))
    _holds(plan, start.claims.makespan_ns)
    # it stops after two passes where neither the windows nor the sweep after them gained
    # (the second pass's sweep is skipped: its plan is the one the last sweep found nothing on)
    assert plan.claims.params["stopped"] == "local optimum"
    assert len(swept) >= 3 and swept[-1] == 0
    assert plan.claims.params["loads_advanced"] == sum(swept) > 0
    for sooner, sweeps in ((1, 1), (0, 0)):  # the knob: once before the windows, or never
        swept.clear()
        found_nothing_on.clear()
        run_method(instance, "polish", SolveOptions(
            threads=1, work_limit=0.1, timing="shared-noc", warm_start="basic",
            warm_plan=start, params={"margin": 1, "sooner": sooner}))
        assert len(swept) == sweeps
    for bad in (3, True, 1.0, "2"):
        with pytest.raises(UsageError, match="sooner 0, 1 or 2"):
            run_method(instance, "polish", SolveOptions(
                warm_start="basic", warm_plan=start, params={"sooner": bad}))


@settings(max_examples=20, deadline=None)
@given(random_instances(max_ops=7, max_plans=3, noc=True), st.sampled_from(TIMINGS),
       st.sampled_from(["basic", "elk-dyn"]), st.data())
def test_issuing_loads_sooner_never_worsens_a_plan_and_keeps_the_rules(instance, timing, warm,
                                                                        data):
    plan = run_method(instance, warm, SolveOptions(timing=timing))
    # releases at the loads' own starts or later, as polish's plans carry
    start = evaluate_plan(plan)
    loads = [j for kind, j in plan.program if kind == "P"]
    held = data.draw(st.lists(st.sampled_from(loads), unique=True, max_size=3)) if loads else []
    release = {("P", j): start.load_start[j] + data.draw(st.integers(0, 20)) for j in held}
    plan = make_plan(instance, plan.choice, plan.program, release_ns=release, method="test",
                     started=0.0, timing=timing)
    sooner, count = advance_loads(instance, plan, None)
    assert (count == 0) == (sooner is plan)
    before, after = evaluate_plan(plan), evaluate_plan(sooner)
    assert move_key(after) <= move_key(before)
    assert count == 0 or move_key(after) < move_key(before)
    assert after.peak_sram_bytes <= instance.chip.sram_bytes
    assert [i for i in sooner.program if i[0] == "E"] == [i for i in plan.program if i[0] == "E"]
    timed = make_plan(instance, sooner.choice, sooner.program, release_ns=sooner.release_ns,
                      method="test", started=0.0, timing=timing)
    report = check(plan_to_dict(timed))
    assert report.valid, report.violations


def test_a_window_covering_the_instance_proves_its_optimum():
    instance = synthetic_instance(ops=10, plans=3, seed=11, tightness=0.6)
    for timing in TIMINGS:
        start = run_method(instance, "basic", SolveOptions(timing=timing))
        plan = run_method(instance, "polish", SolveOptions(  # windows only: no whole solve
            threads=2, timing=timing, warm_start="basic", warm_plan=start,
            params={"width": 10, "layers": 1, "whole": False}))
        _holds(plan, start.claims.makespan_ns)
        params = plan.claims.params
        # the one window, the whole instance, was solved; then either nothing was left to
        # gain or the plan met the fluid floor
        assert params["whole_instance_bound_ns"] is not None
        assert params["stopped"] in ("whole instance", "meets the bound")
        if plan.claims.status == "optimal":  # CP-SAT proved it, or it met the floor
            assert plan.claims.makespan_ns in (params["whole_instance_bound_ns"],
                                               params["fluid_bound_ns"])


@settings(max_examples=8, deadline=None)
@given(synthetic_instances(max_ops=9, max_plans=3), st.sampled_from(TIMINGS))
def test_a_small_instance_solved_whole_gets_cpsats_optimum(instance, timing):
    start = run_method(instance, "basic", SolveOptions(timing=timing))
    plan = run_method(instance, "polish", SolveOptions(
        threads=1, timing=timing, warm_start="basic", warm_plan=start))
    exact = run_method(instance, "cpsat", SolveOptions(threads=1, timing=timing))
    assert exact.claims.status == plan.claims.status == "optimal"
    assert plan.claims.makespan_ns == exact.claims.makespan_ns
    params = plan.claims.params  # proven before any window: by the floor or the whole solve
    assert params["windows_solved"] == 0 and params["stopped"] == "meets the bound"
    assert plan.claims.lower_bound_ns in (params["fluid_bound_ns"],
                                          params["whole_instance_bound_ns"])
    _holds(plan, start.claims.makespan_ns)


def test_polish_with_no_time_left_returns_its_start_without_late_bounds():
    # the warm start took the limit: the start comes back as it is, and no bound is computed
    # after the deadline (the linear-time ones take seconds each at 20,000 ops)
    instance = synthetic_instance(ops=12, plans=3, seed=2)
    start = run_method(instance, "elk-dyn", SolveOptions(timing="shared-noc"))
    plan = run_method(instance, "polish", SolveOptions(
        threads=1, timing="shared-noc", warm_start="elk-dyn", warm_plan=start,
        time_limit_s=1e-9))
    assert check(plan_to_dict(plan)).valid
    assert (plan.choice, plan.program) == (start.choice, start.program)
    c = plan.claims
    assert c.params["stopped"] == "time limit" and c.params["passes"] == 0
    assert c.lower_bound_ns is None and c.status == "feasible"


@settings(max_examples=15, deadline=None)
@given(synthetic_instances(max_ops=40, max_plans=4), st.sampled_from(TIMINGS),
       st.sampled_from(["basic", "elk-dyn", "elk-full"]))
def test_a_program_rebuilt_from_its_anchors_is_the_same_program(instance, timing, method):
    plan = run_method(instance, method, SolveOptions(timing=timing))
    n = len(instance.ops)
    assert program_of(anchors(plan.program, n), n) == plan.program


@settings(max_examples=15, deadline=None)
@given(synthetic_instances(max_ops=60, max_plans=4), st.sampled_from(TIMINGS), st.data())
def test_a_layer_copied_onto_its_twins_gives_a_valid_program(instance, timing, data):
    classes = twin_classes(instance)
    if not classes:
        return
    plan = run_method(instance, data.draw(st.sampled_from(["elk-dyn", "elk-full"])),
                      SolveOptions(timing=timing))
    members = data.draw(st.sampled_from(classes))
    source = data.draw(st.sampled_from(members))
    targets = data.draw(st.lists(st.sampled_from(members), min_size=1, unique=True))
    schedule = evaluate(instance, plan.choice, plan.program, plan.release_ns, timing=timing)
    copied = copy_layer(plan, schedule, source, targets, data.draw(st.booleans()))
    assert sorted(copied.program) == sorted(plan.program)  # every instruction once
    position = {instr: k for k, instr in enumerate(copied.program)}
    assert all(position["P", j] < position["E", j] for j in range(len(instance.ops)))
    assert [i for kind, i in copied.program if kind == "E"] == list(range(len(instance.ops)))
    for first, stop in targets:  # the source's pairs, offset by offset
        assert copied.choice[first:stop] == plan.choice[source[0]:source[1]]
    report = check(plan_to_dict(copied))  # R5 included: the copy's loads are moved to fit
    assert all(v.rule == "R6" for v in report.violations), report.violations


@settings(max_examples=15, deadline=None)
@given(synthetic_instances(max_ops=40, max_plans=4), st.sampled_from(TIMINGS), st.data())
def test_fitting_loads_into_sram_moves_only_what_breaks_r5(instance, timing, data):
    plan = run_method(instance, data.draw(st.sampled_from(["basic", "elk-full"])),
                      SolveOptions(timing=timing))
    n = len(instance.ops)
    anchor = anchors(plan.program, n)
    assert fit_sram(instance, plan.choice, anchor) == anchor  # the plan obeys R5 already
    # every load issued as early as it can be: R5 breaks wherever SRAM is tight
    early = {j: (0, j - n) for j in range(n)}
    fitted = program_of(fit_sram(instance, plan.choice, early), n)
    schedule = evaluate(instance, plan.choice, fitted, timing=timing)
    assert schedule.peak_sram_bytes <= instance.chip.sram_bytes
    position = {instr: k for k, instr in enumerate(fitted)}
    assert all(position["P", j] < position["E", j] for j in range(n))


def _one_good_layer() -> tuple[Plan, Plan, Plan]:
    """Six identical layers: Basic's plan, Elk-Full's, and Basic's with layer 2 Elk-Full's."""
    instance = synthetic_instance(ops=72, plans=4, seed=1, tightness=0.6)
    n = len(instance.ops)
    weak = run_method(instance, "basic", SolveOptions(timing="shared-noc"))
    good = run_method(instance, "elk-full", SolveOptions(timing="shared-noc"))
    anchor, theirs = anchors(weak.program, n), anchors(good.program, n)
    choice = list(weak.choice)
    for j in range(24, 36):
        anchor[j], choice[j] = theirs[j], good.choice[j]
    return weak, good, Plan(instance=instance, choice=tuple(choice),
                            program=program_of(anchor, n), timing="shared-noc")


def test_copying_a_better_layer_onto_its_twins_lowers_the_makespan():
    # The copies give every layer Elk-Full's pairs and load places, and the plan gains.
    _weak, _good, mixed = _one_good_layer()
    instance = mixed.instance
    before = evaluate_plan(mixed)
    assert before.peak_sram_bytes <= instance.chip.sram_bytes
    plan, copies = copy_twins(instance, mixed, before, None)
    after = evaluate_plan(plan)
    assert copies == 1 and after.makespan_ns < 0.85 * before.makespan_ns  # 1,807,416 -> 1,460,368
    assert check(plan_to_dict(plan)).valid


def test_a_refused_windows_layer_copied_onto_its_twins_is_kept_only_if_it_gains():
    # The splice of layer 2 alone (Elk-Full's pairs and load places in a Basic plan) is the
    # window's proposal; copied onto the five twins it beats both the incumbent and itself.
    weak, good, mixed = _one_good_layer()
    instance = mixed.instance
    search = Search(instance, feasible_pairs(instance, "shared-noc"), weak, "shared-noc",
                     periodic=True)
    r = region_of(instance, search.inc, 24, 36, 2)
    assert not search.copy_refused(r, (weak, evaluate_plan(weak)))  # nothing new to copy
    assert search.inc.plan is weak and search.refused_copied == 0
    spliced = evaluate_plan(mixed)
    assert search.copy_refused(r, (mixed, spliced)) and search.refused_copied == 1
    kept = search.inc.plan
    assert search.inc.schedule.makespan_ns < spliced.makespan_ns < evaluate_plan(weak).makespan_ns
    assert all(kept.choice[f:s] == good.choice[24:36] for f, s in twin_classes(instance)[0])
    assert check(plan_to_dict(kept)).valid
    unperiodic = Search(instance, feasible_pairs(instance, "shared-noc"), weak, "shared-noc")
    assert not unperiodic.copy_refused(r, (mixed, spliced))  # the knob off: no copies


def test_after_an_unproven_whole_solve_polish_takes_the_fluid_mip_bound_and_plan():
    # The four-op example (tests/test_fluid_replay.py): the MIP with loads run whole meets
    # the optimum, 24 ns, and its solution replays to a plan of that makespan.
    instance = port_instance([(0, 0, 10, 5), (0, 0, 2, 2), (6, 0, 4, 0), (10, 5, 6, 0)])
    start = run_method(instance, "basic", SolveOptions(timing="shared-noc"))
    assert start.claims.makespan_ns > 24
    pairs = feasible_pairs(instance, "shared-noc")
    options = SolveOptions(threads=1, timing="shared-noc", warm_plan=start)
    search = Search(instance, pairs, start, "shared-noc")
    take_loads_run_whole(search, options, None, 10.0)
    assert (search.bound, search.contiguous, search.replayed) == (24, 24, True)
    assert search.inc.schedule.makespan_ns == 24
    assert check(plan_to_dict(search.inc.plan)).valid
    # a caller that gives a floor runs this MIP itself (`certify`), unless it asks for it;
    # a work limit repeats
    asked = Search(instance, pairs, start, "shared-noc")
    take_loads_run_whole(asked, replace(options, floor_ns=20, loads_run_whole=True), None, 10.0)
    assert (asked.bound, asked.replayed) == (24, True)
    for kept in (replace(options, floor_ns=20), replace(options, work_limit=1.0),
                 replace(options, work_limit=1.0, loads_run_whole=True)):
        search = Search(instance, pairs, start, "shared-noc")
        take_loads_run_whole(search, kept, None, 10.0)
        assert (search.bound, search.replayed, search.inc.plan) == (None, False, start)


def test_a_plan_a_ns_per_interval_above_that_mip_gets_polish_the_bound_in_whole_ns():
    # tests/test_bounds.py's example: the MIP with loads run whole gives 16, the optimum (and
    # Elk-Full's plan) is 17, since every end falls on a whole ns; with whole intervals, 17
    instance = port_instance([(0, 0, 7, 4), (0, 0, 7, 4), (9, 4, 1, 0)])
    start = run_method(instance, "elk-full", SolveOptions(timing="shared-noc"))
    assert start.claims.makespan_ns == 17
    options = SolveOptions(threads=1, timing="shared-noc", warm_plan=start)
    search = Search(instance, feasible_pairs(instance, "shared-noc"), start, "shared-noc")
    take_loads_run_whole(search, options, None, 10.0)
    assert (search.contiguous, search.whole_ns, search.bound) == (16, 17, 17)


@pytest.mark.parametrize("loads_run_whole, floor", [(False, 40), (None, 30)])
def test_polish_floors_with_the_lp_where_the_mip_with_loads_run_whole_follows(loads_run_whole,
                                                                              floor):
    # As in `cpsat` (tests/test_exact_probe.py): each op holds 60 of 100 B, the optimum is
    # 40, the fluid LP 30 and the plain fluid MIP 40. Where polish solves the instance whole
    # and that MIP follows an unproven solve (by default), the floor is the LP alone; the
    # whole solve proves 40 either way.
    instance = tiny_instance([(10, 60, 10, 60, 0), (10, 60, 10, 60, 0)])
    start = run_method(instance, "basic", SolveOptions(timing="shared-noc"))
    plan = run_method(instance, "polish", SolveOptions(
        threads=1, timing="shared-noc", time_limit_s=30, warm_start="basic", warm_plan=start,
        loads_run_whole=loads_run_whole))
    assert plan.claims.params["fluid_bound_ns"] == floor
    assert plan.claims.status == "optimal" and _holds(plan, start.claims.makespan_ns) == 40
