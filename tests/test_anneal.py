"""Annealing a plan (`formulations.anneal`) and `cpsat`'s use of it before its search runs again."""

from __future__ import annotations

import time
from types import SimpleNamespace
from unittest import mock

import pytest
from hypothesis import given, settings
from ortools.sat.python import cp_model

from elk_opt.evaluate import evaluate
from elk_opt.io import plan_to_dict
from elk_opt.methods import solve as run_method
from elk_opt.solution import SolveOptions, make_plan
from formulations import anneal as anneal_module
from formulations import cpsat, cpsat_after, polish_whole
from formulations.anneal import anneal
from formulations.deadline import NO_DEADLINE, Deadline
from tests.strategies import random_instances
from tests.tiny import port_instance
from verify import check

TIMINGS = ("separate-noc", "shared-noc")


def _soon(seconds: float) -> Deadline:
    return Deadline.after(seconds, time.perf_counter())


@settings(max_examples=25, deadline=None)
@given(random_instances(max_ops=6, noc=True))
def test_an_annealed_plan_verifies_and_is_no_slower_than_its_start(instance):
    for timing in TIMINGS:
        start = run_method(instance, "basic", SolveOptions(timing=timing))
        # short rounds end the search after a few hundred tries (PATIENCE rounds that gain
        # nothing), long before a deadline that no loaded machine reaches first
        with mock.patch.object(anneal_module, "ROUND", 200):
            found = anneal(instance, start.choice, start.program, start.release_ns, timing,
                           _soon(60))
        assert found is not None and found.tries > 0
        assert found.makespan_ns <= start.claims.makespan_ns
        plan = make_plan(instance, found.choice, found.program, method="anneal",
                         started=time.perf_counter(), timing=timing,
                         release_ns=found.release_ns)
        report = check(plan_to_dict(plan))
        assert report.valid, report.violations
        schedule = evaluate(instance, found.choice, found.program, found.release_ns,
                            timing=timing)
        assert report.makespan_ns == found.makespan_ns == schedule.makespan_ns
        for instr in found.release_ns:  # each release left binds
            fewer = {k: v for k, v in found.release_ns.items() if k != instr}
            assert evaluate(instance, found.choice, found.program, fewer,
                            timing=timing) != schedule


# port-heavy executes beside loads: `basic` issues each load one execute ahead, 33 ns; the
# optimum (CP-SAT proves it) issues them elsewhere, 26 ns
PORT_BOUND = [(5, 4, 10, 8), (1, 1, 5, 1), (12, 0, 5, 0)]


def test_annealing_reaches_the_proven_optimum_of_a_small_port_instance():
    instance = port_instance(PORT_BOUND)
    start = run_method(instance, "basic", SolveOptions(timing="shared-noc"))
    best = run_method(instance, "cpsat", SolveOptions(timing="shared-noc", threads=1))
    assert best.claims.status == "optimal" and best.claims.makespan_ns < start.claims.makespan_ns
    # it stops on reaching the optimum or after PATIENCE idle rounds, well before a deadline
    # a loaded machine could reach
    found = anneal(instance, start.choice, start.program, start.release_ns, "shared-noc",
                   _soon(120), floor=best.claims.makespan_ns)
    assert found is not None and found.makespan_ns == best.claims.makespan_ns


def test_annealing_needs_a_deadline_with_a_time():
    instance = port_instance([(3, 3, 3, 3)])
    start = run_method(instance, "basic", SolveOptions(timing="shared-noc"))
    with pytest.raises(ValueError, match="deadline"):
        anneal(instance, start.choice, start.program, None, "shared-noc", NO_DEADLINE)


# `basic` 30 ns; the fluid floor 27 ns is the optimum
NOT_MET = [(1, 1, 5, 3), (12, 10, 1, 1), (7, 0, 7, 7)]


def _unproven(monkeypatch):
    """Every search of `cpsat` proves and finds nothing, and the fluid MIP with loads run
    whole after it gives nothing: what is left to find the optimum is the annealing."""

    def unproven(instance, restrict, started, ready):
        return cp_model.UNKNOWN, SimpleNamespace(best_objective_bound=0.0,
                                                 status_name=lambda _: "UNKNOWN"), None, ready

    monkeypatch.setattr(cpsat, "_probe_then_search", unproven)
    monkeypatch.setattr(cpsat, "loads_run_whole", lambda *args: None)


def test_cpsat_anneals_its_best_plan_before_the_search_continues(monkeypatch):
    _unproven(monkeypatch)
    instance = port_instance(NOT_MET)
    start = run_method(instance, "basic", SolveOptions(timing="shared-noc"))
    assert start.claims.makespan_ns == 30
    plan = run_method(instance, "cpsat", SolveOptions(
        timing="shared-noc", time_limit_s=5, threads=1, warm_start="basic", warm_plan=start))
    assert plan.claims.params["annealed_ns"] == 27 == plan.claims.makespan_ns
    assert plan.claims.status == "optimal" and plan.claims.lower_bound_ns == 27
    assert check(plan_to_dict(plan)).valid


@pytest.mark.parametrize("options", [
    SolveOptions(timing="shared-noc", threads=1),  # no time limit: annealing counts seconds
    SolveOptions(timing="shared-noc", threads=1, time_limit_s=5, work_limit=10.0),
    SolveOptions(timing="shared-noc", threads=1, time_limit_s=5, params={"max_pending": 2}),
    SolveOptions(timing="shared-noc", threads=1, time_limit_s=5, exec_order="free"),
], ids=["no time limit", "work limit", "restricted", "free order"])
def test_cpsat_anneals_only_with_a_time_limit_in_the_instance_order_unrestricted(options):
    instance = port_instance(NOT_MET)
    start = run_method(instance, "basic", SolveOptions(timing="shared-noc"))
    started = time.perf_counter()
    assert cpsat_after.annealed_start(start, 27, options, started) is None
    timed = SolveOptions(timing="shared-noc", threads=1, time_limit_s=5)
    annealed = cpsat_after.annealed_start(start, 27, timed, started)
    assert annealed is not None and annealed.claims.makespan_ns == 27


@pytest.mark.parametrize("start_timing", TIMINGS)
def test_polish_anneals_its_incumbent_after_an_unproven_whole_solve(monkeypatch, start_timing):
    # the whole solve hands back its start unproven and the MIP after it gives nothing: the
    # annealing finds the optimum, which the windows then keep. A start timed under
    # separate-noc (27 ns there, 30 under 5b, no annealing gain under its own timing) is
    # annealed under polish's timing all the same.
    instance = port_instance(NOT_MET)
    start = run_method(instance, "basic", SolveOptions(timing=start_timing))
    monkeypatch.setattr(polish_whole, "solve_cpsat", lambda instance, options: options.warm_plan)
    monkeypatch.setattr(polish_whole, "loads_run_whole", lambda *args: None)
    plan = run_method(instance, "polish", SolveOptions(
        timing="shared-noc", time_limit_s=5, threads=1, warm_start="basic", warm_plan=start))
    assert plan.claims.params["annealed_ns"] == 27 == plan.claims.makespan_ns
    assert check(plan_to_dict(plan)).valid
    unlimited = run_method(instance, "polish", SolveOptions(
        timing="shared-noc", threads=1, warm_start="basic", warm_plan=start))
    assert unlimited.claims.params["annealed_ns"] is None
