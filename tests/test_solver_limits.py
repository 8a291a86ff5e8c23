"""Solvers under limits: the exact models' time limits cover model building, SIGINT stops
every exact method at once with its best plan, HiGHS stays silent unless asked, and runs
repeat (heuristics always; exact methods when they finish or stop on a work limit)."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import highspy
import pytest
from ortools.sat.python import cp_model

from elk_opt.errors import UsageError
from elk_opt.evaluate import evaluate
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.io import plan_to_dict, save_instance
from elk_opt.methods import heuristics, solve
from elk_opt.solution import SolveOptions
from formulations import cpsat, cpsat_model, cpsat_prepare, ilp
from formulations.cpsat_probe import Probed
from formulations.highs_run import new_highs, run_interruptible
from tests.tiny import tiny_instance

SECTION_5 = "separate-noc"  # what the ILP models today; the plans here are checked under it


@pytest.mark.parametrize("method", [ilp, cpsat])
def test_time_limit_covers_model_building(method):
    # Building either model alone takes seconds to tens of seconds; the limit must stop it.
    # The contract, not a speed: a plan comes back whose status says why it is not proven
    # (the build was cut, or the solver ran out of time on a slow day), never worse than the
    # warm start; without a warm start, a plan or one clear error.
    instance = synthetic_instance(ops=400, plans=4, seed=0)
    warm = solve(instance, "elk-dyn", SolveOptions(timing=SECTION_5))
    plan = method.solve(instance, SolveOptions(time_limit_s=1.0, threads=1, timing=SECTION_5,
                                               warm_start="elk-dyn", warm_plan=warm))
    c = plan.claims
    assert c.status in ("feasible", "optimal") and c.lower_bound_ns <= c.makespan_ns
    assert c.makespan_ns <= warm.claims.makespan_ns
    assert c.makespan_ns == evaluate(instance, plan.choice, plan.program, plan.release_ns,
                                     timing=SECTION_5).makespan_ns
    if c.params["solver_status"] == "time limit reached before the model was built":
        assert plan.choice == warm.choice and plan.program == warm.program
    else:  # the model was built in time: the solver's own word for stopping
        assert c.params["solver_status"] in ("UNKNOWN", "FEASIBLE", "OPTIMAL",
                                             "Time limit reached", "Optimal")
    try:
        alone = method.solve(instance, SolveOptions(time_limit_s=1.0, threads=1,
                                                    timing=SECTION_5))
    except UsageError as e:
        assert re.search(r"(could not build its model of 400 ops|found no plan) within 1",
                         str(e))
    else:
        assert alone.claims.lower_bound_ns <= alone.claims.makespan_ns


@pytest.mark.parametrize("timing", ["separate-noc", "shared-noc"])
def test_a_limit_no_model_can_meet_returns_the_warm_start_or_says_so(timing):
    instance = synthetic_instance(ops=120, plans=4, seed=0)
    warm = solve(instance, "basic", SolveOptions(timing=timing))
    for method in (ilp, cpsat):
        plan = method.solve(instance, SolveOptions(time_limit_s=1e-4, threads=1, timing=timing,
                                                   warm_start="basic", warm_plan=warm))
        assert plan.choice == warm.choice and plan.program == warm.program
        assert "before the" in plan.claims.params["solver_status"]
        with pytest.raises(UsageError, match="could not build its model"):
            method.solve(instance, SolveOptions(time_limit_s=1e-4, threads=1, timing=timing))


def test_cpsat_cut_after_its_section5_phase_returns_the_best_plan_it_has(monkeypatch):
    # under 5b, a limit (or a SIGINT) that comes after the section-5 solve keeps its plan
    from formulations.deadline import OutOfTime
    from verify.cli import json_report

    def cut(*_args, **_kw):
        raise OutOfTime

    def build(*args, **kw):  # the section-5 model is built; the 5b model is not
        return cut() if kw.get("timing") == "shared-noc" else cpsat_model.build(*args, **kw)

    instance = synthetic_instance(ops=12, plans=3, seed=2, tightness=0.6)
    warm = solve(instance, "basic", SolveOptions(timing="shared-noc"))
    monkeypatch.setattr(cpsat_prepare, "build", build)
    plan = cpsat.solve(instance, SolveOptions(threads=1, timing="shared-noc",
                                              warm_start="basic", warm_plan=warm))
    c = plan.claims
    assert c.params["solver_status"] == "time limit reached before the 5b model was solved"
    assert c.makespan_ns <= warm.claims.makespan_ns
    assert c.params["section5_bound_ns"] <= c.lower_bound_ns <= c.makespan_ns
    assert json_report(plan_to_dict(plan))["valid"]


def test_cpsat_whose_retiming_runs_out_searches_from_the_starts_as_they_are(monkeypatch):
    # the starts are re-timed only when the probes find no plan; a deadline there keeps the
    # better start as it is, and the open search goes on from it
    from formulations.deadline import OutOfTime
    from verify.cli import json_report

    calls = []

    def cut(*_args, **_kw):
        calls.append(1)
        raise OutOfTime

    def nothing_found(_capped, _options, _started, lower, _upper, _ops):
        return Probed(lower, cp_model.UNKNOWN, None)

    instance = synthetic_instance(ops=12, plans=3, seed=2, tightness=0.6)
    warm = solve(instance, "basic", SolveOptions(timing="shared-noc"))
    monkeypatch.setattr(cpsat, "probe", nothing_found)
    monkeypatch.setattr(cpsat_prepare, "retimed_start", cut)
    plan = cpsat.solve(instance, SolveOptions(threads=1, timing="shared-noc", time_limit_s=20,
                                              warm_start="basic", warm_plan=warm))
    assert calls
    c = plan.claims
    assert c.makespan_ns <= warm.claims.makespan_ns
    assert c.params["section5_bound_ns"] <= c.lower_bound_ns <= c.makespan_ns
    assert json_report(plan_to_dict(plan))["valid"]


@pytest.mark.parametrize("timing", ["separate-noc", "shared-noc"])
@pytest.mark.parametrize("method", ["basic", "static", "elk-dyn", "elk-full", "lhs", "ideal",
                                    "polish", "cpsat", "ilp"])
def test_every_method_takes_a_time_limit_and_returns_a_true_plan(method, timing):
    from verify.cli import json_report

    instance = synthetic_instance(ops=60, plans=4, seed=4, tightness=0.6)
    options = SolveOptions(time_limit_s=1e-4, threads=1, timing=timing,
                           warm_start="basic" if method in ("cpsat", "ilp") else None)
    plan = solve(instance, method, options)
    report = json_report(plan_to_dict(plan))
    assert report["valid"], report["violations"]
    c = plan.claims
    assert c.lower_bound_ns is None or c.lower_bound_ns <= c.makespan_ns


@pytest.mark.parametrize("method", ["elk-dyn", "elk-full"])
def test_a_cut_search_returns_its_best_so_far_and_says_so(method):
    instance = synthetic_instance(ops=200, plans=4, seed=1, tightness=0.6)
    cut = solve(instance, method, SolveOptions(time_limit_s=1e-4))
    assert cut.claims.params["stopped"] == "time limit"
    assert cut.claims.status == "heuristic"
    assert "stopped" not in solve(instance, method, SolveOptions()).claims.params


def test_lp_bound_time_limit_covers_model_building(monkeypatch):
    """A limit that passes while the LP is built ends the build itself (OutOfTime from
    `build`), and the bound is None: nothing is handed to HiGHS after the limit."""
    from formulations.deadline import OutOfTime

    built = ilp.build
    ended: list[str] = []

    def watched(*args, **kw):
        try:
            return built(*args, **kw)
        except OutOfTime:
            ended.append("build")
            raise

    monkeypatch.setattr(ilp, "build", watched)
    instance = synthetic_instance(ops=400, plans=4, seed=0)
    assert ilp.lp_bound(instance, 0.0) is None
    assert ended == ["build"]
    assert ilp.lp_bound(tiny_instance([(3, 10, 5, 20, 0), (4, 10, 6, 20, 1)]), None) is not None


# The limit the interrupted runs are given: one that stops before it was stopped by the signal.
# (How fast a run stops is not asserted: a loaded machine must not fail the suite.)
LIMIT_S = 120


def _hard_knapsack() -> highspy.Highs:
    rng = random.Random(1)
    h = new_highs(verbose=False)
    xs = [h.addBinary() for _ in range(150)]
    for _ in range(60):
        h.addConstr(sum(rng.randint(1, 100) * x for x in xs) <= 3000)
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    for x in xs:
        h.changeColCost(x.index, rng.randint(1, 100))
    h.setOptionValue("threads", 1)
    h.setOptionValue("time_limit", float(LIMIT_S))
    return h


def test_sigint_stops_highs_at_once_with_its_incumbent():
    h = _hard_knapsack()
    timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        interrupted = run_interruptible(h)
    finally:
        timer.cancel()
    assert interrupted
    assert h.getModelStatus() == highspy.HighsModelStatus.kInterrupt
    assert h.getInfo().primal_solution_status == 2  # the incumbent is kept


def test_an_error_inside_highs_reaches_the_caller():
    class Failing(highspy.Highs):
        def run(self):
            raise RuntimeError("solver failed")

    with pytest.raises(RuntimeError, match="solver failed"):
        run_interruptible(Failing())


def _started(tmp_path: Path, args: list[str], ready: str) -> tuple[subprocess.Popen, Path]:
    """`elk-opt` running on a hard instance, once it printed `ready` on stderr; and its output."""
    inst, out = tmp_path / "i.json", tmp_path / "out.json"
    save_instance(inst, synthetic_instance(ops=96, plans=4, seed=3, tightness=0.6))
    proc = subprocess.Popen([sys.executable, "-m", "elk_opt.cli", args[0], str(inst), *args[1:],
                             "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        if ready in line:
            break
    return proc, out


def _interrupt(tmp_path: Path, args: list[str], ready: str, after_s: float):
    """Run `elk-opt` on a hard instance and SIGINT it `after_s` after it printed `ready` on
    stderr; returns (exit code, the output's JSON)."""
    proc, out = _started(tmp_path, args, ready)
    time.sleep(after_s)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=LIMIT_S)
    return proc.returncode, json.loads(out.read_text()) if out.exists() else None


def _interrupt_solve(tmp_path: Path, method: str, ready: str, *extra: str):
    return _interrupt(tmp_path, ["solve", "--method", method, "--time-limit", str(LIMIT_S),
                                 "--threads", "1", "--timing", SECTION_5, *extra], ready, 3.0)


def test_sigint_stops_cpsat_at_once_and_writes_its_best_plan(tmp_path):
    code, plan = _interrupt_solve(tmp_path, "cpsat", "solving", "--warm-start", "elk-dyn")
    assert code == 0
    claims = plan["claims"]
    assert claims["wall_s"] < LIMIT_S  # the signal ended it, not its limit
    assert claims["status"] == "feasible" and claims["lower_bound_ns"] <= claims["makespan_ns"]


def test_sigint_stops_ilp_at_once_and_writes_its_best_plan(tmp_path):
    code, plan = _interrupt_solve(tmp_path, "ilp", "solving", "--warm-start", "elk-dyn")
    assert code == 0
    claims = plan["claims"]
    assert claims["params"]["solver_status"] in (
        "Interrupted by user", "interrupted before the model was built")
    assert claims["status"] == "feasible" and claims["lower_bound_ns"] <= claims["makespan_ns"]


def test_sigint_ends_polish_with_its_incumbent(tmp_path):
    # CP-SAT swallows the SIGINT of each window it solves; polish must still stop.
    # under 5b its windows take seconds each, so the signal lands mid-search
    code, plan = _interrupt(tmp_path, ["solve", "--method", "polish", "--time-limit",
                                       str(LIMIT_S), "--threads", "1", "--timing",
                                       "shared-noc"], "polish: start", 3.0)
    assert code == 0
    claims = plan["claims"]
    assert claims["params"]["interrupted"] is True
    assert claims["makespan_ns"] <= claims["params"]["start_makespan_ns"]


def test_sigint_ends_the_window_bound_with_the_windows_bounded(tmp_path):
    code, report = _interrupt(
        tmp_path, ["bound", "--window", "24", "--window-time", "60", "--threads", "1",
                   "--lp-max-ops", "0", "--fluid-max-ops", "0", "--fluid-sram-max-ops", "0",
                   "--fluid-milp-max-ops", "0", "--layers", "0"],
        "window bound", 3.0)
    assert code == 0
    window = next(r for r in report["bounds"] if r["bound"] == "window24")
    assert re.fullmatch(r"interrupted: the first [123] of 4 windows", window["note"])
    assert 0 <= window["ns"] <= report["best"]["ns"]


def test_sigint_stops_cpsat_under_shared_noc_in_any_phase_with_its_best_plan(tmp_path):
    # under 5b CP-SAT solves a section-5 model first; a SIGINT there ends the whole method
    code, plan = _interrupt(tmp_path, ["solve", "--method", "cpsat", "--time-limit",
                                       str(LIMIT_S), "--threads", "1", "--timing",
                                       "shared-noc", "--warm-start", "elk-dyn"],
                            "solving", 3.0)
    assert code == 0
    claims = plan["claims"]
    assert claims["wall_s"] < LIMIT_S  # the signal ended it, not its limit
    assert claims["status"] == "feasible" and claims["lower_bound_ns"] <= claims["makespan_ns"]


@pytest.mark.parametrize("args, ready", [
    (["solve", "--method", "cpsat", "--time-limit", str(LIMIT_S), "--threads", "1", "--timing",
      "shared-noc"], "solving"),
    (["bound", "--window", "24", "--window-time", "60", "--threads", "1", "--lp-max-ops", "0",
      "--fluid-max-ops", "0", "--fluid-milp-max-ops", "0"], "window bound"),
    (["bound", "--window", "0", "--layers", "0", "--threads", "1", "--lp-max-ops", "0"],
     "fluid MIP"),  # HiGHS's branch and bound, 96 ops: it runs for its whole time limit
])
def test_sigterm_stops_native_solvers_before_unwinding(tmp_path, args, ready):
    # a process that exits while CP-SAT's threads run aborts ("terminate called ...")
    proc, out = _started(tmp_path, args, ready)
    time.sleep(3.0)
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "terminate called" not in err and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].endswith("interrupted (SIGTERM)")
    assert not out.exists()


def test_highs_prints_nothing_unless_verbose(tmp_path, capfd):
    """HiGHS writes to the process's own descriptors, so capfd sees all it prints."""
    from elk_opt.cli import main

    inst, plan = tmp_path / "i.json", tmp_path / "p.json"
    save_instance(inst, tiny_instance([(3, 10, 5, 20, 0), (4, 10, 6, 20, 1)]))
    for args in (["solve", str(inst), "--method", "ilp", "-o", str(plan)],
                 ["solve", str(inst), "--method", "polish", "--param", "certify=true",
                  "-o", str(plan)],
                 ["bound", str(inst), "--window", "0"]):
        capfd.readouterr()
        assert main(args) == 0
        out, err = capfd.readouterr()
        assert "HiGHS" not in out + err, args
    capfd.readouterr()
    assert main(["solve", str(inst), "--method", "ilp", "--verbose", "-o", str(plan)]) == 0
    out, err = capfd.readouterr()
    assert "HiGHS" in err and "HiGHS" not in out


# --- determinism: what repeats byte for byte (wall_s aside) ---

def _bytes(plan) -> str:
    data = plan_to_dict(plan)
    data["claims"].pop("wall_s")
    return json.dumps(data, sort_keys=True)


@pytest.mark.parametrize(("threads", "work"), [(1, 0.3), (2, 0.02)])
def test_cpsat_stopped_by_its_work_limit_repeats(threads, work):
    instance = synthetic_instance(ops=16, plans=4, seed=0, tightness=0.6)
    options = SolveOptions(threads=threads, work_limit=work, timing=SECTION_5)
    first, second = (solve(instance, "cpsat", options) for _ in range(2))
    assert first.claims.params["solver_status"] == "FEASIBLE"  # the budget stopped it
    assert _bytes(first) == _bytes(second)


def test_exact_runs_that_finish_repeat_and_the_ilp_refuses_a_work_limit():
    # CP-SAT searches before it proves this one, in 0.3 s of CPU (8 ops, seed 2 took 6 s;
    # most other seeds of 6-8 ops are proved in presolve)
    instance = synthetic_instance(ops=6, plans=3, seed=0, tightness=0.6)
    for method in ("ilp", "cpsat"):
        options = SolveOptions(threads=1, timing=SECTION_5)
        first, second = (solve(instance, method, options) for _ in range(2))
        assert first.claims.status == "optimal" and _bytes(first) == _bytes(second)
    with pytest.raises(UsageError, match="no deterministic work limit"):
        solve(instance, "ilp", SolveOptions(work_limit=1.0, timing=SECTION_5))


def test_heuristics_repeat():
    """Polish on a work budget repeats too: tests/test_polish.py (its 13 s of CPU per run were
    paid twice, here and there)."""
    instance = synthetic_instance(ops=24, plans=4, seed=5, tightness=0.6)
    for method in heuristics():
        options = SolveOptions(threads=1, work_limit=0.2)
        assert _bytes(solve(instance, method, options)) == _bytes(
            solve(instance, method, options)), method


def _scaled(instance, factor: int):
    """The instance with every time multiplied by `factor` (sizes unchanged)."""
    from elk_opt.io import instance_from_dict, instance_to_dict

    def scale(x):
        if isinstance(x, dict):
            return {k: v * factor if k.endswith("_ns") and isinstance(v, int) else scale(v)
                    for k, v in x.items()}
        return [scale(v) for v in x] if isinstance(x, list) else x
    return instance_from_dict(scale(instance_to_dict(instance)), "scaled", "")


@pytest.mark.parametrize("timing", ["separate-noc", "shared-noc"])
def test_the_ilp_refuses_horizons_highs_cannot_solve_and_solves_the_rest(tmp_path, timing):
    # HiGHS 1.16 lost rows (PuLP's IndexError) or crashed on 6-op models scaled by 2**30-2**32
    base = synthetic_instance(ops=6, plans=4, seed=3)
    big = tmp_path / "big.json"
    save_instance(big, _scaled(base, 2**30))
    from elk_opt.cli import main
    out = tmp_path / "p.json"
    assert main(["solve", str(big), "--method", "ilp", "--timing", timing, "-q",
                 "-o", str(out)]) == 2
    assert not out.exists()
    with pytest.raises(ilp.TooLarge):
        ilp.lp_bound(_scaled(base, 2**30))
    # inside the limit (times in seconds rather than microseconds) it solves, and agrees with
    # CP-SAT (on a budget of deterministic work: under section 5 it does not prove this one)
    mid = _scaled(base, 2**8)
    got = ilp.solve(mid, SolveOptions(timing=timing, time_limit_s=60, threads=1))
    exact = cpsat.solve(mid, SolveOptions(timing=timing, work_limit=1.0, threads=1))
    assert got.claims.makespan_ns == evaluate(mid, got.choice, got.program, got.release_ns,
                                              timing=timing).makespan_ns
    if got.claims.status == exact.claims.status == "optimal":
        assert got.claims.makespan_ns == exact.claims.makespan_ns
    assert got.claims.lower_bound_ns <= exact.claims.makespan_ns
