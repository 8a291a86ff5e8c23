"""The independent checker: agrees with the evaluator, and catches every rule broken."""

import copy
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from elk_opt.evaluate import evaluate, evaluate_plan
from elk_opt.io import plan_to_dict
from elk_opt.methods import solve
from elk_opt.problem import Claims, Plan
from elk_opt.synthetic import synthetic_instance
from tests.strategies import random_instances, random_plans, synthetic_instances
from verify import check
from verify.cli import main as verify_main


def basic_plan_dict(ops: int = 24, seed: int = 1) -> dict:
    return plan_to_dict(solve(synthetic_instance(ops=ops, plans=3, seed=seed), "basic"))


def rules(raw: dict) -> set[str]:
    return {v.rule for v in check(raw).violations}


@given(synthetic_instances())
def test_basic_plans_verify_and_agree_with_the_evaluator(instance):
    plan = solve(instance, "basic")
    report = check(plan_to_dict(plan))
    assert report.valid, [v.message for v in report.violations]
    schedule = evaluate_plan(plan)
    assert report.makespan_ns == schedule.makespan_ns == plan.claims.makespan_ns
    assert report.peak_sram_bytes == schedule.peak_sram_bytes


@given(st.data(), random_instances(max_ops=8))
def test_verifier_times_any_sound_program_like_the_evaluator(data, instance):
    choice, program = data.draw(random_plans(instance))
    schedule = evaluate(instance, choice, program)
    claims = Claims(method="random", status="feasible", makespan_ns=schedule.makespan_ns)
    raw = plan_to_dict(Plan(instance=instance, choice=tuple(choice), program=tuple(program),
                            claims=claims))
    report = check(raw)
    assert report.makespan_ns == schedule.makespan_ns
    assert report.peak_sram_bytes == schedule.peak_sram_bytes
    fits = schedule.peak_sram_bytes <= instance.chip.sram_bytes
    assert report.valid == fits
    assert {v.rule for v in report.violations} <= {"R5"}


def mutate_r1_duplicate(raw):
    raw["program"].append(raw["program"][-1])


def mutate_r1_missing(raw):
    raw["program"].remove("E3")


def mutate_r1_foreign(raw):
    raw["program"].append("X1")


def mutate_r2_swap_dependent_executes(raw):
    prog = raw["program"]
    a, b = prog.index("E4"), prog.index("E5")  # op 5 reads op 4
    prog[a], prog[b] = prog[b], prog[a]
    prog.remove("P5")
    prog.insert(0, "P5")


def mutate_r3_load_after_execute(raw):
    prog = raw["program"]
    prog.remove("P6")
    prog.insert(prog.index("E6") + 1, "P6")


def mutate_r4_unknown_plan(raw):
    raw["choice"][2]["exec"] = 99


def mutate_r4_incompatible_pair(raw):
    op = raw["instance"]["ops"][1]
    pairs = {(w["preload"], w["exec"]) for w in op["warmup"]}
    free = [(q["id"], p["id"]) for q in op["preload_plans"] for p in op["exec_plans"]
            if (q["id"], p["id"]) not in pairs]
    assert free, "fixture op 1 must have an incompatible pair"
    raw["choice"][1] = {"preload": free[0][0], "exec": free[0][1]}


def mutate_r5_everything_preloaded_first(raw):
    n = len(raw["choice"])
    raw["program"] = [f"P{i}" for i in range(n)] + [f"E{i}" for i in range(n)]
    raw.pop("claims")


def mutate_r6_makespan(raw):
    raw["claims"]["makespan_ns"] += 1


def mutate_r6_bound_above(raw):
    raw["claims"]["lower_bound_ns"] = raw["claims"]["makespan_ns"] + 1


def mutate_r6_unproven_optimal(raw):
    raw["claims"]["status"] = "optimal"


@pytest.mark.parametrize("mutate, rule", [
    (mutate_r1_duplicate, "R1"), (mutate_r1_missing, "R1"), (mutate_r1_foreign, "R1"),
    (mutate_r2_swap_dependent_executes, "R2"), (mutate_r3_load_after_execute, "R3"),
    (mutate_r4_unknown_plan, "R4"), (mutate_r4_incompatible_pair, "R4"),
    (mutate_r5_everything_preloaded_first, "R5"), (mutate_r6_makespan, "R6"),
    (mutate_r6_bound_above, "R6"), (mutate_r6_unproven_optimal, "R6"),
])
def test_each_broken_rule_is_caught_and_named(tmp_path, capsys, mutate, rule):
    raw = basic_plan_dict()
    assert check(raw).valid
    mutate(raw)
    assert rule in rules(raw)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(raw))
    assert verify_main([str(path)]) == 1
    out = capsys.readouterr().out
    assert "INVALID" in out and f"{rule} " in out


def test_every_violation_is_reported_not_just_the_first():
    raw = basic_plan_dict()
    mutate_r4_unknown_plan(raw)
    mutate_r1_foreign(raw)
    raw["choice"][5]["preload"] = 42
    found = [v.rule for v in check(raw).violations]
    assert found.count("R4") == 2 and "R1" in found


def test_rules_are_checked_independently_and_untimable_programs_say_so():
    raw = basic_plan_dict()
    mutate_r4_unknown_plan(raw)
    mutate_r3_load_after_execute(raw)
    mutate_r6_makespan(raw)
    report = check(raw)
    assert {v.rule for v in report.violations} == {"R3", "R4"}
    assert report.unchecked == ("R5", "R6") and report.makespan_ns is None


def test_r5_message_lists_the_numbers():
    raw = basic_plan_dict()
    mutate_r5_everything_preloaded_first(raw)
    v = next(v for v in check(raw).violations if v.rule == "R5")
    assert v.message.startswith(f"R5 memory at {v.instruction}: exec ")
    assert "pending P" in v.message and "> sram" in v.message
    assert v.numbers["total"] > v.numbers["sram_bytes"]


def test_json_report(tmp_path, capsys):
    raw = basic_plan_dict()
    mutate_r6_makespan(raw)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(raw))
    assert verify_main([str(path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] is False
    assert [v["rule"] for v in report["violations"]] == ["R6"]


def _malformed_cases():
    base = basic_plan_dict(ops=8)

    def edit(fn):
        raw = copy.deepcopy(base)
        fn(raw)
        return json.dumps(raw)

    ops = lambda r: r["instance"]["ops"]  # noqa: E731
    return {
        "bad json": ("{not json", "invalid JSON"),
        "not an object": ("[1, 2]", "must be a JSON object"),
        "wrong format": (edit(lambda r: r.update(format="elk-plan/0")), "format"),
        "missing key": (edit(lambda r: r.pop("choice")), "choice: missing"),
        "wrong type": (edit(lambda r: ops(r)[2].update(inputs="1")), "inputs: must be a list"),
        "negative size": (edit(lambda r: ops(r)[3]["exec_plans"][0].update(space_bytes=-5)),
                          "instance.ops[3].exec_plans[0].space_bytes: must be a non-negative "
                          "integer, got -5"),
        "unknown warmup id": (edit(lambda r: ops(r)[1]["warmup"][0].update(exec=77)),
                              "unknown exec plan id 77"),
        "forward input": (edit(lambda r: ops(r)[2].update(inputs=[5])),
                          "input 5 does not come before op 2"),
        "choice count": (edit(lambda r: r["choice"].pop()), "one entry per op"),
    }


@pytest.mark.parametrize("case", sorted(_malformed_cases()))
def test_malformed_files_exit_2_with_a_clear_message(tmp_path, capsys, case):
    text, expected = _malformed_cases()[case]
    path = tmp_path / "plan.json"
    path.write_text(text)
    assert verify_main([str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and expected in err


def test_missing_file_exits_2(tmp_path, capsys):
    assert verify_main([str(tmp_path / "nope.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_verifier_is_independent_of_the_rest_of_the_project():
    import pathlib
    import re

    for source in (pathlib.Path(__file__).parents[1] / "verify").glob("*.py"):
        imports = re.findall(r"^\s*(?:from|import)\s+([\w.]+)", source.read_text(), re.M)
        assert not [m for m in imports if m.split(".")[0] in
                    {"elk_opt", "heuristics", "formulations"}], source
