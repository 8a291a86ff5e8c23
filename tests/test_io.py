"""JSON round trips and the loader's error messages."""

import dataclasses
import gc
import json

import pytest
from hypothesis import given

from elk_opt.errors import InputError
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.io import (
    instance_from_dict,
    instance_to_dict,
    load_instance,
    plan_from_dict,
    plan_to_dict,
    save_instance,
)
from elk_opt.methods import solve
from tests.strategies import synthetic_instances


@given(synthetic_instances(max_ops=20))
def test_instance_and_plan_round_trip(instance):
    assert instance_from_dict(json.loads(json.dumps(instance_to_dict(instance)))) == instance
    plan = solve(instance, "basic")
    again = plan_from_dict(json.loads(json.dumps(plan_to_dict(plan))))
    assert again.choice == plan.choice and again.program == plan.program
    assert again.claims.makespan_ns == plan.claims.makespan_ns


@pytest.mark.parametrize("wall", [-1796616982.1, float("nan"), float("inf")])
def test_claims_refuse_a_wall_time_no_plan_file_could_hold(wall):
    # e.g. a method's `started` read from time.time() instead of time.perf_counter(): the plan
    # would be written, then refused by the loader
    plan = solve(synthetic_instance(ops=3), "basic")
    with pytest.raises(ValueError, match="wall_s"):
        dataclasses.replace(plan.claims, wall_s=wall)


def test_extra_keys_survive_a_round_trip():
    raw = instance_to_dict(synthetic_instance(ops=3))
    raw["source"] = {"tool": "test"}
    raw["ops"][0]["note"] = "kept"
    assert instance_to_dict(instance_from_dict(raw))["source"] == {"tool": "test"}
    assert instance_to_dict(instance_from_dict(raw))["ops"][0]["note"] == "kept"


def bad(edit) -> str:
    raw = instance_to_dict(synthetic_instance(ops=14, plans=4))
    edit(raw)
    with pytest.raises(InputError) as e:
        instance_from_dict(raw, "i.json")
    return str(e.value)


def test_error_names_file_field_and_value():
    msg = bad(lambda r: r["ops"][12]["exec_plans"][3].update(space_bytes=-5))
    assert msg == ("i.json: ops[12].exec_plans[3].space_bytes: must be a non-negative "
                   "integer, got -5")


@pytest.mark.parametrize("edit, expected", [
    (lambda r: r.pop("chip"), "i.json: chip: missing"),
    (lambda r: r.update(format="elk/2"), "format: must be 'elk-instance/1'"),
    (lambda r: r["chip"].update(cores=0), "chip.cores: must be a positive integer, got 0"),
    (lambda r: r["chip"]["noc"].update(topology="ring"), "chip.noc.topology: must be one of"),
    (lambda r: r["ops"][3].update(inputs=[3]), "ops[3].inputs[0]: input 3 must come before"),
    (lambda r: r["ops"][2].update(hbm_bytes=True), "ops[2].hbm_bytes: must be a non-negative"),
    (lambda r: r["ops"][1]["warmup"][0].update(preload=9), "unknown preload plan id 9"),
    (lambda r: r["ops"][1]["exec_plans"][1].update(id=0), "duplicate plan id 0"),
    (lambda r: r["ops"][1].update(warmup=[]), "ops[1].warmup: must not be empty"),
    (lambda r: r["ops"][4].update(layer="x"), "ops[4].layer: must be an integer or null"),
])
def test_malformed_instances(edit, expected):
    assert expected in bad(edit)


def test_unreadable_files(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_instance(tmp_path / "missing.json")
    path = tmp_path / "broken.json"
    path.write_text('{"format": ')
    with pytest.raises(InputError, match=r"broken.json: invalid JSON at line 1"):
        load_instance(path)


def test_save_is_atomic_and_leaves_nothing_behind_on_failure(tmp_path):
    instance = synthetic_instance(ops=4)
    target = tmp_path / "i.json"
    save_instance(target, instance)
    assert load_instance(target) == instance
    assert [p.name for p in tmp_path.iterdir()] == ["i.json"]
    with pytest.raises(InputError, match="does not exist"):
        save_instance(tmp_path / "no" / "i.json", instance)


def test_a_failed_write_leaves_no_file(tmp_path):
    from elk_opt.files import save_json

    with pytest.raises(TypeError):
        save_json(tmp_path / "out.json", {"ok": 1, "bad": object()})
    assert list(tmp_path.iterdir()) == []


def test_written_files_get_the_usual_permissions(tmp_path):
    import os

    from elk_opt.files import save_json

    umask = os.umask(0o022)
    try:
        save_json(tmp_path / "out.json", {"ok": 1})
    finally:
        os.umask(umask)
    assert (tmp_path / "out.json").stat().st_mode & 0o777 == 0o644


def hostile_instance_texts() -> dict[str, tuple[str, str]]:
    """Instance files that once crashed the CLI, and what the one-line error must name."""
    raw = instance_to_dict(synthetic_instance(ops=4))
    huge_time = json.loads(json.dumps(raw))
    huge_time["ops"][1]["exec_plans"][0]["time_ns"] = 2**70
    text = json.dumps(raw)
    return {
        "nested 50,000 deep": ('{"a":' * 50_000 + "1" + "}" * 50_000, "nested too deeply"),
        "time_ns 2**70": (json.dumps(huge_time), "ops[1].exec_plans[0].time_ns: must be at most "
                                                 "2**53 - 1"),
        "5,001-digit flops": (text.replace('"flops": ', '"flops": ' + "3" * 5001 + ', "x": ', 1),
                              "ops[0].flops: must be at most 2**53 - 1, got an integer of 5,001"),
        "Infinity": (text.replace('"flops": ', '"flops": Infinity, "x": ', 1), "Infinity"),
        "deep metadata": (text.replace('"ops": ', '"meta": ' + "[" * 900 + "]" * 900
                                       + ', "ops": ', 1), "meta: nested more than 64"),
    }


@pytest.mark.parametrize("case", sorted(hostile_instance_texts()))
def test_solve_and_simulate_reject_hostile_json_in_one_line(tmp_path, capsys, case):
    from elk_opt.cli import main

    text, expected = hostile_instance_texts()[case]
    path = tmp_path / "input.json"
    path.write_text(text)
    out = tmp_path / "plan.json"
    assert main(["solve", str(path), "--method", "basic", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err and str(path) in err
    assert not out.exists()
    assert main(["simulate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err


def test_the_loader_rejects_programs_it_cannot_evaluate(tmp_path):
    """A plan loads only if it can be timed: simulate and lower used to crash on these."""
    raw = plan_to_dict(solve(synthetic_instance(ops=5), "basic"))
    raw["program"].remove("E3")
    with pytest.raises(InputError, match="program: every op needs one P and one E; missing E3"):
        plan_from_dict(raw, "p.json")


@pytest.mark.parametrize("value", ["[" * 3000 + "]" * 3000, "1" * 5000])
def test_a_hostile_param_value_is_a_usage_error(tmp_path, capsys, value):
    from elk_opt.cli import main

    path = tmp_path / "i.json"
    save_instance(path, synthetic_instance(ops=3))
    out = tmp_path / "plan.json"
    assert main(["solve", str(path), "--method", "basic", "-o", str(out),
                 "--param", f"x={value}"]) == 2
    assert capsys.readouterr().err.count("\n") == 1 and not out.exists()


def test_a_loaded_instance_is_kept_out_of_the_cyclic_collector(tmp_path):
    # a run's instance lives as long as the run: full collections must not walk it again
    path = tmp_path / "i.json"
    save_instance(path, synthetic_instance(ops=5, plans=2, seed=1))
    (tmp_path / "bad.json").write_text("{")
    before = gc.get_freeze_count()
    with pytest.raises(InputError):
        load_instance(tmp_path / "bad.json")
    # nothing frozen by a failed read (the count may drop: a frozen object other tests left
    # can be freed meanwhile, by reference counting)
    assert gc.get_freeze_count() <= before
    instance = load_instance(path)
    assert gc.get_freeze_count() > before
    assert not any(o is instance for o in gc.get_objects())  # frozen: not in any generation
