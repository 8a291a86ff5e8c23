"""`ilp --param solver=NAME`: every MILP solver PuLP finds here reaches the in-process HiGHS
optimum with the same options, and claims only what it reports (HiGHS and CBC run here; the
others are skipped, with the reason, where they are not installed)."""

from __future__ import annotations

from dataclasses import replace

import pulp
import pytest

from elk_opt.cli import main
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.io import plan_to_dict, save_instance
from elk_opt.methods import solve
from elk_opt.problem import TIMINGS
from elk_opt.solution import SolveOptions
from formulations import ilp
from formulations.ilp_solvers import ALIASES, available
from verify import check

HERE = available()
NAMES = list(ALIASES) + sorted({s.lower() for s in pulp.listSolvers()}
                               - {full.lower() for full in ALIASES.values()})
OPTIONS = SolveOptions(threads=1)


def _solver(name: str) -> str:
    if name not in HERE:
        pytest.skip(f"{name} is not installed here (available: {', '.join(HERE)})")
    return name


@pytest.mark.parametrize("timing", TIMINGS)
@pytest.mark.parametrize("name", NAMES)
def test_every_available_solver_reaches_the_highs_optimum(name, timing):
    solver = _solver(name)
    instance = synthetic_instance(ops=5 if timing == "separate-noc" else 3, plans=2, seed=6)
    options = replace(OPTIONS, timing=timing)
    reference = ilp.solve(instance, options)
    plan = ilp.solve(instance, replace(options, params={"solver": solver}))
    assert plan.claims.params["solver"] == solver
    assert plan.claims.status == "optimal"
    assert plan.claims.makespan_ns == reference.claims.makespan_ns
    assert plan.claims.lower_bound_ns == plan.claims.makespan_ns
    assert check(plan_to_dict(plan)).valid


@pytest.mark.parametrize("name", NAMES)
def test_a_gap_is_never_claimed_as_a_proof(name):
    """At a 50 % gap a solver may stop early; the claim holds whatever it reports."""
    solver = _solver(name)
    instance = synthetic_instance(ops=8, plans=3, seed=2)
    options = replace(OPTIONS, timing="separate-noc", gap=0.5, params={"solver": solver})
    plan = ilp.solve(instance, options)
    exact = ilp.solve(instance, replace(OPTIONS, timing="separate-noc"))
    c = plan.claims
    assert c.lower_bound_ns <= exact.claims.makespan_ns <= c.makespan_ns
    assert (c.status == "optimal") == (c.lower_bound_ns == c.makespan_ns)


@pytest.mark.parametrize("name", NAMES)
def test_warm_start_and_time_limit_reach_every_solver(name):
    """Under a short limit a plan comes back, never worse than the warm start it was given, and
    its claims say how the solver ended: proven optimal exactly when its bound meets it. The
    warm start is Basic's plan: a timed ILP run found none within its limit on a loaded
    machine."""
    solver = _solver(name)
    instance = synthetic_instance(ops=12, plans=3, seed=5)
    warm = solve(instance, "basic", replace(OPTIONS, timing="separate-noc"))
    plan = ilp.solve(instance, replace(OPTIONS, timing="separate-noc", time_limit_s=1.0,
                                       warm_start="basic", warm_plan=warm,
                                       params={"solver": solver}))
    c = plan.claims
    assert c.makespan_ns <= warm.claims.makespan_ns
    assert c.params["solver_status"] and c.status in ("optimal", "feasible")
    assert c.lower_bound_ns <= c.makespan_ns
    assert (c.status == "optimal") == (c.lower_bound_ns == c.makespan_ns)
    assert check(plan_to_dict(plan)).valid


@pytest.mark.parametrize("name", ["gurobi-9", "nonsense", *sorted(set(NAMES) - set(HERE))[:2]])
def test_unknown_or_absent_solver_is_one_line_listing_the_available(tmp_path, capsys, name):
    save_instance(tmp_path / "i.json", synthetic_instance(ops=3, plans=2, seed=0))
    assert main(["solve", str(tmp_path / "i.json"), "--method", "ilp", "--param",
                 f"solver={name}", "-o", str(tmp_path / "p.json"), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert name in err and f"available: {', '.join(HERE)}" in err
    assert not (tmp_path / "p.json").exists()


def test_solver_names_ignore_case():
    instance = synthetic_instance(ops=3, plans=2, seed=1)
    for name in ("HiGHS", "PULP_CBC_CMD", "CBC"):
        plan = ilp.solve(instance, replace(OPTIONS, params={"solver": name}))
        assert plan.claims.params["solver"] in ALIASES
