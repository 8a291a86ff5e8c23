"""The independent checker: agrees with the evaluator, and catches every rule broken."""

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from elk_opt.evaluate import evaluate, evaluate_plan
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.io import plan_to_dict
from elk_opt.methods import solve
from elk_opt.problem import (
    Chip,
    Claims,
    ExecPlan,
    Instance,
    Noc,
    Op,
    Plan,
    PreloadPlan,
    Warmup,
)
from tests.strategies import random_instances, random_plans, synthetic_instances
from tests.tiny import only_choice, parse, port_instance, tiny_instance
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


def plan_dict(instance, choice, program, release=None, *, timing, makespan=None) -> dict:
    """A plan file whose claims are `makespan` (default: the evaluator's, under `timing`)."""
    if makespan is None:
        makespan = evaluate(instance, choice, program, release, timing=timing).makespan_ns
    claims = Claims(method="test", status="feasible", makespan_ns=makespan)
    return plan_to_dict(Plan(instance=instance, choice=tuple(choice), program=tuple(program),
                             release_ns=release or {}, claims=claims, timing=timing))


@st.composite
def releases(draw, program) -> dict:
    """Release times on about a third of the instructions, some far enough to leave gaps."""
    return {instr: draw(st.integers(0, 300)) for instr in program
            if draw(st.integers(0, 2)) == 0}


@settings(max_examples=400)
@given(st.data(), random_instances(max_ops=7, noc=True), st.sampled_from(["separate-noc",
                                                                         "shared-noc"]))
def test_verifier_times_any_sound_program_like_the_evaluator(data, instance, timing):
    choice, program = data.draw(random_plans(instance))
    release = data.draw(releases(program))
    schedule = evaluate(instance, choice, program, release, timing=timing)
    report = check(plan_dict(instance, choice, program, release, timing=timing))
    assert report.timing == timing
    assert report.makespan_ns == schedule.makespan_ns
    assert report.peak_sram_bytes == schedule.peak_sram_bytes
    fits = schedule.peak_sram_bytes <= instance.chip.sram_bytes
    assert report.valid == fits
    assert {v.rule for v in report.violations} <= {"R5"}


@given(st.data(), random_instances(max_ops=7, noc=True))
def test_a_claim_made_under_the_other_timing_is_caught_when_they_differ(data, instance):
    choice, program = data.draw(random_plans(instance))
    release = data.draw(releases(program))
    times = {t: evaluate(instance, choice, program, release, timing=t).makespan_ns
             for t in ("separate-noc", "shared-noc")}
    raw = plan_dict(instance, choice, program, release, timing="shared-noc",
                    makespan=times["separate-noc"])
    caught = any(v.rule == "R6" and "shared-noc timing" in v.message
                 for v in check(raw).violations)
    assert caught == (times["separate-noc"] != times["shared-noc"])


# Section 5b by hand. op0 moves no data and executes 20 ns with 32 B over a 2 GB/s port
# (16 ns of port time: 800 permille); op1 loads 12 B in 10 ns (6 ns: 600 permille), then
# executes 5 ns without the port.
def byte_port_instance(warm: int = 0) -> Instance:
    def op(i, load_ns, load_bytes, run_ns, noc_bytes):
        return Op(name=f"op{i}", kind="test", layer=None, inputs=(i - 1,) if i else (),
                  hbm_bytes=load_bytes, flops=0,
                  exec_plans=(ExecPlan(id=0, time_ns=run_ns, space_bytes=40,
                                       noc_bytes=noc_bytes),),
                  preload_plans=(PreloadPlan(id=0, space_bytes=load_bytes, load_ns=load_ns),),
                  warmup=(Warmup(preload=0, exec=0, time_ns=warm if i == 0 else 0),))

    chip = Chip(name="port", cores=1, sram_bytes=100, hbm_bytes_per_s=1, clock_hz=1,
                noc=Noc(topology="all_to_all", link_bytes_per_s=2_000_000_000))
    return Instance(name="port", chip=chip, ops=(op(0, 0, 0, 20, 32), op(1, 10, 12, 5, 0)))


def hand_makespan(instance, program: str, timing: str, release=None) -> int:
    raw = plan_dict(instance, only_choice(instance), parse(program), release, timing=timing,
                    makespan=0)
    return check(raw).makespan_ns


def test_hand_timed_shared_port():
    inst = byte_port_instance()
    # 800 + 600 > 1000: the load (smaller) gets 500, the execute 500. P1 does 6,000 units at
    # 500/ns and ends at 12; E0 has 16,000 - 6,000 = 10,000 left and ends at 12 + ceil(10,000
    # / 800) = 25; E1 25-30. Under section 5: E0 0-20, E1 20-25.
    assert hand_makespan(inst, "P0 P1 E0 E1", "shared-noc") == 30
    assert hand_makespan(inst, "P0 P1 E0 E1", "separate-noc") == 25
    # Released at 20, P1 no longer overlaps E0: 5b equals section 5 (P1 20-30, E1 30-35).
    assert hand_makespan(inst, "P0 P1 E0 E1", "shared-noc", {("P", 1): 20}) == 35
    # Issued after E0, nothing overlaps: section 5 exactly.
    assert hand_makespan(inst, "P0 E0 P1 E1", "shared-noc") == 35


def test_hand_timed_warmup_counts_as_port_work():
    # A 4 ns warm-up makes E0 24 ns long with 16 + 4 = 20 ns of port work: ceil(1000 * 20 /
    # 24) = 834 permille, 20,016 units. With P1 (600): 500 each until P1 ends at 12 (6,000
    # done); 14,016 left at 834/ns ends at 12 + 17 = 29; E1 29-34.
    inst = byte_port_instance(warm=4)
    assert hand_makespan(inst, "P0 P1 E0 E1", "shared-noc") == 34
    assert hand_makespan(inst, "P0 P1 E0 E1", "separate-noc") == 29


def test_hand_timed_noc_ns_replaces_the_bytes():
    # port_instance gives port time through noc_ns (bytes are 0). P1 at 600 permille and E0 at
    # 800 split 500/500: P1 ends at 22, E0 at 35, E1 35-40 (docs/spec.md 5b by hand).
    inst = port_instance([(10, 0, 20, 16), (10, 6, 5, 0)])
    assert hand_makespan(inst, "P0 P1 E0 E1", "shared-noc") == 40
    assert hand_makespan(inst, "P0 P1 E0 E1", "separate-noc") == 35


def test_the_report_says_which_timing_it_used(tmp_path, capsys):
    inst = byte_port_instance()
    raw = plan_dict(inst, only_choice(inst), parse("P0 P1 E0 E1"), timing="shared-noc")
    assert raw["claims"]["makespan_ns"] == 30
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(raw))
    assert verify_main([str(path)]) == 0
    assert "shared-noc timing" in capsys.readouterr().out
    assert verify_main([str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["timing"] == "shared-noc"
    raw.pop("timing")  # a plan written before 5b: section 5, and the claim no longer holds
    path.write_text(json.dumps(raw))
    assert verify_main([str(path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["timing"] == "separate-noc" and report["makespan_ns"] == 25
    assert "(separate-noc timing)" in report["violations"][0]["message"]


def test_r5_charges_the_larger_of_the_execute_and_preload_layouts():
    # op1's preload layout (60 B) is larger than its execute layout (10 B): at E1 it holds 60 B.
    inst = tiny_r5_instance()
    raw = plan_dict(inst, only_choice(inst), parse("P0 P1 E0 P2 E1 E2"), timing="shared-noc")
    report = check(raw)
    assert report.peak_sram_bytes == 60 + 30 and report.peak_at == "E1"
    v = next(v for v in report.violations if v.rule == "R5")
    assert v.message == ("R5 memory at E1: max(exec 10 B, preload 60 B) + pending P2 30 B = "
                         "90 B > sram 80 B")
    assert v.numbers["exec_bytes"] == 10 and v.numbers["preload_bytes"] == 60


def tiny_r5_instance() -> Instance:
    # (load ns, preload space, exec ns, exec space, warm-up)
    return tiny_instance([(5, 10, 5, 20, 0), (5, 60, 5, 10, 0), (5, 30, 5, 10, 0)], sram=80)


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
    assert v.message.startswith(f"R5 memory at {v.instruction}: max(exec ")
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
        "unknown timing": (edit(lambda r: r.update(timing="shared")),
                           "timing: must be one of separate-noc, shared-noc, got 'shared'"),
        "null timing": (edit(lambda r: r.update(timing=None)), "timing: must be one of"),
        "negative exec noc_ns": (edit(lambda r: ops(r)[2]["exec_plans"][0].update(noc_ns=-1)),
                                 "instance.ops[2].exec_plans[0].noc_ns: must be a non-negative "
                                 "integer, got -1"),
        "fractional preload noc_ns": (
            edit(lambda r: ops(r)[4]["preload_plans"][0].update(noc_ns=2.5)),
            "instance.ops[4].preload_plans[0].noc_ns: must be a non-negative integer, got 2.5"),
        "string noc_ns": (edit(lambda r: ops(r)[0]["exec_plans"][0].update(noc_ns="7")),
                          "instance.ops[0].exec_plans[0].noc_ns: must be a non-negative"),
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


def test_verify_exits_quietly_when_its_reader_goes_away(tmp_path):
    """`verify --json *.json | head -c 10`: no BrokenPipeError traceback, exit 141 as Unix tools."""
    import subprocess
    import sys

    path = tmp_path / "plan.json"
    path.write_text(json.dumps(basic_plan_dict()))
    proc = subprocess.Popen([sys.executable, "-m", "verify", "--json", *[str(path)] * 2000],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.read(10) == b"[\n  {\n    "
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == ""


@pytest.mark.parametrize("text, expected", [
    ('{"a":' * 50_000 + "1" + "}" * 50_000, "nested too deeply"),
    ("[" * 3000 + "]" * 3000, "nested too deeply"),
    ('{"format": "elk-plan/1", "big": ' + "1" * 5001 + "}", "big: must be at most 2**53 - 1"),
    ('{"format": NaN}', "NaN is not a JSON value"),
], ids=["deep-object", "deep-list", "long-integer", "nan"])
def test_hostile_json_is_one_line_and_exit_2_in_a_fresh_interpreter(tmp_path, text, expected):
    import subprocess
    import sys

    path = tmp_path / "plan.json"
    path.write_text(text)
    done = subprocess.run([sys.executable, "-m", "verify", str(path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and expected in done.stderr, done.stderr


def test_a_file_name_too_long_is_unreadable_not_a_crash(capsys):
    assert verify_main(["x" * 5000 + ".json"]) == 2
    assert "cannot read" in capsys.readouterr().err
