"""Model export and solution import: another solver's solution of the exported model is the
same optimum as the method's own, decoded into a plan the independent checker accepts.

Round trips: ILP -> MPS or LP -> HiGHS (highspy, from the file) or CBC (its binary) ->
solution file -> import-solution; CP-SAT -> text proto -> OR-Tools from the file -> response
-> import-solution. Under both timings, on small generated instances.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import highspy
import pulp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from elk_opt.cli import main
from elk_opt.frontend.synthetic import synthetic_instance as synthetic
from elk_opt.io import plan_to_dict, save_instance
from elk_opt.problem import TIMINGS, Instance
from elk_opt.solution import SolveOptions
from formulations import cpsat, ilp
from formulations.export import export_model
from formulations.import_solution import RejectedSolution, import_solution
from tests.strategies import random_instances
from verify import check

OPTIONS = SolveOptions(threads=1)
FAST = settings(max_examples=6, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


def _highs_solve(model: Path, solution: Path, start: Path | None = None) -> None:
    """HiGHS, reading the exported file (and its start), solved to a zero gap."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("threads", 1)
    assert h.readModel(str(model)) == highspy.HighsStatus.kOk
    if start is not None:
        assert h.readSolution(str(start), 0) == highspy.HighsStatus.kOk
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    h.writeSolution(str(solution), 0)


def _round_trip_highs(instance: Instance, timing: str, tmp: Path, suffix: str) -> None:
    options = replace(OPTIONS, timing=timing)
    own = ilp.solve(instance, options)
    assert own.claims.status == "optimal"
    done = export_model(instance, "ilp", options, tmp / f"model{suffix}")
    _highs_solve(done.model, tmp / "highs.sol", done.start)
    plan = import_solution(done.sidecar, tmp / "highs.sol")
    assert plan.timing == timing
    assert plan.claims.makespan_ns == own.claims.makespan_ns
    assert plan.claims.status == "optimal"
    assert plan.claims.lower_bound_ns == own.claims.makespan_ns
    assert check(plan_to_dict(plan)).valid


@pytest.mark.parametrize("timing", TIMINGS)
@FAST
@given(instance=random_instances(max_ops=4, max_plans=2, noc=True))
def test_ilp_mps_round_trip_through_highs(tmp_path, timing, instance):
    _round_trip_highs(instance, timing, tmp_path, ".mps")


@pytest.mark.parametrize("timing", TIMINGS)
def test_ilp_lp_round_trip_with_warm_start(tmp_path, timing):
    instance = synthetic(ops=4, plans=2, seed=2)
    warm = ilp.solve(instance, SolveOptions(threads=1, timing=timing, time_limit_s=0.5))
    options = replace(OPTIONS, timing=timing, warm_start="ilp", warm_plan=warm)
    done = export_model(instance, "ilp", options, tmp_path / "model.lp")
    assert done.start is not None and done.start.exists()
    side = json.loads(done.sidecar.read_text())
    assert side["warm_start"]["file"] == done.start.name and side["timing"] == timing
    _highs_solve(done.model, tmp_path / "highs.sol", done.start)
    plan = import_solution(done.sidecar, tmp_path / "highs.sol")
    assert plan.claims.makespan_ns == ilp.solve(instance, replace(OPTIONS, timing=timing)) \
        .claims.makespan_ns
    assert check(plan_to_dict(plan)).valid


def test_ilp_mps_round_trip_through_cbc(tmp_path):
    instance = synthetic(ops=6, plans=3, seed=1)
    options = replace(OPTIONS, timing="separate-noc")
    done = export_model(instance, "ilp", options, tmp_path / "model.mps")
    cbc = pulp.PULP_CBC_CMD().path
    subprocess.run([cbc, str(done.model), "solve", "solu", str(tmp_path / "cbc.sol")],
                   check=True, capture_output=True, timeout=60)
    plan = import_solution(done.sidecar, tmp_path / "cbc.sol")
    assert plan.claims.params["solution_format"] == "cbc"
    assert plan.claims.makespan_ns == ilp.solve(instance, options).claims.makespan_ns
    assert plan.claims.status == "optimal"
    assert check(plan_to_dict(plan)).valid


@pytest.mark.parametrize("timing", TIMINGS)
@FAST
@given(instance=random_instances(max_ops=4, max_plans=2, noc=True))
def test_cpsat_text_proto_round_trip(tmp_path, timing, instance):
    options = replace(OPTIONS, timing=timing)
    own = cpsat.solve(instance, options)
    assert own.claims.status == "optimal"
    done = export_model(instance, "cpsat", options, tmp_path / "model.pb.txt")
    side = json.loads(done.sidecar.read_text())
    model = cp_model.CpModel()
    assert model.proto.parse_text_format(done.model.read_text())
    solver = cp_model.CpSolver()
    assert solver.parameters.parse_text_format(side["solver_parameters"])
    assert solver.solve(model) == cp_model.OPTIMAL
    assert round(solver.objective_value) == own.claims.makespan_ns
    (tmp_path / "response.txt").write_text(str(solver.response_proto))
    plan = import_solution(done.sidecar, tmp_path / "response.txt")
    assert plan.claims.makespan_ns == own.claims.makespan_ns
    assert plan.claims.status == "optimal"
    assert check(plan_to_dict(plan)).valid


def test_cpsat_export_keeps_the_hints(tmp_path):
    instance = synthetic(ops=6, plans=3, seed=3)
    warm = cpsat.solve(instance, replace(OPTIONS, timing="separate-noc"))
    options = replace(OPTIONS, timing="separate-noc", warm_start="cpsat", warm_plan=warm)
    done = export_model(instance, "cpsat", options, tmp_path / "model.pb.txt")
    model = cp_model.CpModel()
    assert model.proto.parse_text_format(done.model.read_text())
    hint = model.proto.solution_hint
    assert len(hint.vars) == len(model.proto.variables)
    makespan = json.loads(done.sidecar.read_text())["variables"]["exec_end"][-1]
    assert dict(zip(hint.vars, hint.values, strict=True))[makespan] == \
        warm.claims.makespan_ns


@pytest.fixture
def exported(tmp_path):
    """An instance file, its exported MPS model and HiGHS's solution of it."""
    instance = synthetic(ops=5, plans=3, seed=4)
    save_instance(tmp_path / "i.json", instance)
    assert main(["solve", str(tmp_path / "i.json"), "--method", "ilp", "--timing",
                 "separate-noc", "--threads", "1", "--export", str(tmp_path / "m.mps"),
                 "-q"]) == 0
    _highs_solve(tmp_path / "m.mps", tmp_path / "h.sol")
    return tmp_path


def test_export_only_writes_the_model_and_sidecar(exported):
    assert sorted(p.name for p in exported.iterdir()) == ["h.sol", "i.json", "m.mps",
                                                          "m.mps.json"]
    assert main(["import-solution", str(exported / "m.mps.json"), str(exported / "h.sol"),
                 "-o", str(exported / "p.json")]) == 0
    assert main(["verify", str(exported / "p.json")]) == 0


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _pick_line(solution: Path, value: str) -> str:
    return next(line for line in solution.read_text().splitlines()
                if line.startswith("pick_") and line.split()[1] == value)


@pytest.mark.parametrize(("value", "message"), [("0.5", "not 0 or 1"),
                                              ("inf", "not a finite value")])
def test_a_pick_that_is_not_0_or_1_exits_2_naming_it(exported, capsys, value, message):
    sol, side, out = exported / "h.sol", exported / "m.mps.json", exported / "p.json"
    one = _pick_line(sol, "1")
    name = one.split()[0]
    _edit(sol, one, f"{name} {value}")
    assert main(["import-solution", str(side), str(sol), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and "h.sol" in err and name in err
    assert not out.exists()


def test_unusable_solutions_exit_2(exported, capsys):
    sol, side, out = exported / "h.sol", exported / "m.mps.json", exported / "p.json"
    _edit(sol, _pick_line(sol, "1"), "")
    assert main(["import-solution", str(side), str(sol), "-o", str(out)]) == 2
    assert "h.sol" in capsys.readouterr().err
    _edit(side, '"name":"synthetic', '"name":"edited')
    assert main(["import-solution", str(side), str(sol), "-o", str(out)]) == 2
    assert "instance_sha256" in capsys.readouterr().err
    assert not out.exists()


def test_an_infinite_objective_bound_claims_none(exported):
    sol, out = exported / "h.sol", exported / "p.json"
    bound = next(line for line in sol.read_text().splitlines()
                 if line.startswith("Objective_bound"))
    _edit(sol, bound, "Objective_bound inf")  # how HiGHS writes that it has none
    assert main(["import-solution", str(exported / "m.mps.json"), str(sol), "-o",
                 str(out)]) == 0
    assert main(["verify", str(out)]) == 0


def test_a_solution_later_than_its_objective_is_rejected(exported, capsys):
    sol, out = exported / "h.sol", exported / "p.json"
    objective = next(line for line in sol.read_text().splitlines()
                     if line.startswith("Objective "))
    _edit(sol, objective, "Objective 1")
    _edit(sol, next(line for line in sol.read_text().splitlines()
                    if line.startswith("Objective_bound")), "Objective_bound 1")
    assert main(["import-solution", str(exported / "m.mps.json"), str(sol), "-o",
                 str(out)]) == 1
    assert "objective" in capsys.readouterr().err and not out.exists()
    with pytest.raises(RejectedSolution):
        import_solution(exported / "m.mps.json", sol)


def test_a_solution_that_breaks_r5_is_rejected(tmp_path):
    """Every load issued at once: an instance whose SRAM holds few preloads refuses it."""
    instance = synthetic(ops=8, plans=3, seed=0, tightness=0.2)
    done = export_model(instance, "ilp", replace(OPTIONS, timing="separate-noc"),
                        tmp_path / "m.mps")
    side = json.loads(done.sidecar.read_text())["variables"]
    biggest = [max(row, key=lambda p: instance.ops[j].preload_by_id[p["preload"]].space_bytes)
               for j, row in enumerate(side["pick"])]
    lines = [f"{p['var']} {int(p is best)}" for row, best in zip(side["pick"], biggest,
                                                                  strict=True) for p in row]
    lines += [f"{v} 0" for v in side["load_start"] if v is not None]
    lines += [f"{v} {10**9 * (i + 1)}" for i, v in enumerate(side["exec_start"])]
    lines += [f"{v} {10**9 * (i + 2)}" for i, v in enumerate(side["exec_end"])]
    (tmp_path / "all-at-once.sol").write_text("\n".join(lines) + "\n")
    with pytest.raises(RejectedSolution, match="R5"):
        import_solution(done.sidecar, tmp_path / "all-at-once.sol")


@pytest.mark.parametrize("args, message", [
    (["--method", "elk-full", "--export", "m.mps"], "ilp or cpsat"),
    (["--method", "ilp", "--export", "m.txt"], ".mps or .lp"),
    (["--method", "ilp"], "--export"),
])
def test_export_flag_errors_exit_2(tmp_path, capsys, args, message):
    save_instance(tmp_path / "i.json", synthetic(ops=3, plans=2, seed=0))
    args = [str(tmp_path / a) if a.startswith("m.") else a for a in args]
    assert main(["solve", str(tmp_path / "i.json"), *args, "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err
    assert list(tmp_path.iterdir()) == [tmp_path / "i.json"]


@pytest.mark.parametrize("timing", TIMINGS)
@settings(max_examples=3, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 50))
def test_both_exports_reach_one_optimum(tmp_path, timing, seed):
    """The MPS model solved by HiGHS and the CP-SAT proto solved by OR-Tools agree."""
    instance = synthetic(ops=4, plans=2, seed=seed)
    options = replace(OPTIONS, timing=timing)
    done = export_model(instance, "ilp", options, tmp_path / "m.mps")
    _highs_solve(done.model, tmp_path / "h.sol")
    milp = import_solution(done.sidecar, tmp_path / "h.sol")
    cp = export_model(instance, "cpsat", options, tmp_path / "m.pb.txt")
    model = cp_model.CpModel()
    assert model.proto.parse_text_format(cp.model.read_text())
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert solver.solve(model) == cp_model.OPTIMAL
    assert round(solver.objective_value) == milp.claims.makespan_ns


def test_the_api_exports_and_imports(tmp_path):
    import elk_opt

    instance = synthetic(ops=4, plans=2, seed=7)
    paths = elk_opt.export_model(instance, tmp_path / "m.mps", "ilp", timing="separate-noc",
                                 warm_start="elk-full", params={"solver": "highs"})
    assert paths["start"] is not None
    _highs_solve(Path(paths["model"]), tmp_path / "h.sol", Path(paths["start"]))
    plan = elk_opt.import_solution(paths["sidecar"], tmp_path / "h.sol")
    best = elk_opt.solve(instance, "ilp", timing="separate-noc", threads=1)
    assert plan.claims.makespan_ns == best.claims.makespan_ns
    assert elk_opt.verify(plan)["valid"]


def test_a_name_value_file_imports_as_feasible_with_the_ideal_bound(exported):
    """Gurobi's .sol shape: '# Objective value = X', then 'name value' lines; no bound."""
    highs = (exported / "h.sol").read_text().splitlines()
    objective = next(line.split()[1] for line in highs if line.startswith("Objective "))
    count = next(int(line.split()[2]) for line in highs if line.startswith("# Columns"))
    start = highs.index(f"# Columns {count}") + 1
    lines = [f"# Objective value = {objective}", *highs[start:start + count]]
    (exported / "g.sol").write_text("\n".join(lines) + "\n")
    plan = import_solution(exported / "m.mps.json", exported / "g.sol")
    best = import_solution(exported / "m.mps.json", exported / "h.sol")
    assert plan.claims.makespan_ns == best.claims.makespan_ns
    assert plan.claims.params["solution_format"] == "name-value"
    assert plan.claims.lower_bound_ns <= plan.claims.makespan_ns
    assert (plan.claims.status == "optimal") == (plan.claims.lower_bound_ns ==
                                                 plan.claims.makespan_ns)


def test_export_with_output_writes_the_model_then_solves(tmp_path):
    save_instance(tmp_path / "i.json", synthetic(ops=4, plans=2, seed=8))
    assert main(["solve", str(tmp_path / "i.json"), "--method", "cpsat", "--threads", "1",
                 "--export", str(tmp_path / "m.pb.txt"), "-o", str(tmp_path / "p.json"),
                 "-q"]) == 0
    assert {p.name for p in tmp_path.iterdir()} == {"i.json", "m.pb.txt", "m.pb.txt.json",
                                                    "p.json"}
    assert main(["verify", str(tmp_path / "p.json")]) == 0
