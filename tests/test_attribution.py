"""`elk-opt profile`: a plan's makespan split by cause (elk_opt.attribution)."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from elk_opt.attribution import attribute
from elk_opt.cli import main
from elk_opt.evaluate import evaluate
from elk_opt.io import save_plan
from elk_opt.methods import solve
from elk_opt.problem import Plan
from elk_opt.solution import SolveOptions
from tests.strategies import random_instances, random_plans, synthetic_instances
from tests.tiny import only_choice, parse, tiny_instance

# (load ns, preload space, exec ns, exec space, warm-up ns)
THREE = tiny_instance([(10, 30, 5, 40, 1), (20, 50, 8, 40, 0), (0, 0, 4, 10, 0)])
SHARED = SolveOptions(timing="shared-noc")
PARTS = ("fastest_ns", "pair_choice_ns", "stretch_ns", "load_wait_ns", "release_wait_ns")


def test_a_hand_timed_program_splits_as_timed_by_hand():
    # P0 0-10, P1 held to 15, 15-35; E0 10-16 waits 10 for P0; E1 35-43 waits 19 for P1;
    # E2 held to 50, 50-54: 7 of release wait (docs: tests/test_evaluate.py)
    plan = Plan(THREE, only_choice(THREE), parse("P0 P1 E0 P2 E1 E2"),
                {("P", 1): 15, ("E", 2): 50}, timing="separate-noc")
    ops = attribute(plan, by="op").groups
    assert [g.span_ns for g in ops] == [16, 27, 11]
    assert [g.fastest_ns for g in ops] == [6, 8, 4]
    assert [g.load_wait_ns for g in ops] == [10, 19, 0]
    assert [g.release_wait_ns for g in ops] == [0, 0, 7]
    assert [g.hbm_busy_ns for g in ops] == [11, 19, 0]  # P1 runs 1 ns of E0's span
    assert all(g.stretch_ns == 0 and g.pair_choice_ns == 0 for g in ops)


def check(plan: Plan, timing: str) -> None:
    schedule = evaluate(plan.instance, plan.choice, plan.program, plan.release_ns,
                        timing=timing)
    for by in ("layer", "op"):
        result = attribute(plan, timing, by)
        assert result.makespan_ns == schedule.makespan_ns
        total = result.total()
        assert total.span_ns == schedule.makespan_ns
        assert total.ops == len(plan.instance.ops)
        for g in result.groups:
            assert g.span_ns == sum(getattr(g, part) for part in PARTS)
            assert all(getattr(g, part) >= 0 for part in PARTS)
            assert 0 <= g.hbm_busy_ns <= g.span_ns
        # every load lies before its execute, so within the makespan: the HBM's busy time
        # is the loads' total, whatever the grouping
        assert total.hbm_busy_ns == sum(e - s for s, e in zip(schedule.load_start,
                                                               schedule.load_end, strict=True))
        if timing == "separate-noc":
            assert total.stretch_ns == 0


@settings(max_examples=40, deadline=None)
@given(instance=random_instances(noc=True), data=st.data(),
       timing=st.sampled_from(["separate-noc", "shared-noc"]))
def test_parts_add_up_on_random_programs(instance, data, timing):
    choice, program = data.draw(random_plans(instance))
    releases = data.draw(st.dictionaries(st.sampled_from(program), st.integers(0, 300),
                                         max_size=3))
    check(Plan(instance, tuple(choice), tuple(program), releases, timing=timing), timing)


@settings(max_examples=15, deadline=None)
@given(instance=synthetic_instances(max_ops=30),
       method=st.sampled_from(["static", "elk-dyn", "elk-full"]))
def test_fastest_is_the_same_for_every_plan_and_bounds_each(instance, method):
    plans = [solve(instance, m, SHARED) for m in ("basic", method)]
    for plan in plans:
        check(plan, "shared-noc")
    fastest = {attribute(plan).total().fastest_ns for plan in plans}
    assert len(fastest) == 1
    assert fastest.pop() <= min(evaluate(p.instance, p.choice, p.program, p.release_ns,
                                         timing="shared-noc").makespan_ns for p in plans)


def test_twin_layers_print_as_one_row(tmp_path, capsys):
    from elk_opt.frontend.synthetic import synthetic_instance

    instance = synthetic_instance(ops=48, plans=3, seed=1)
    plan = solve(instance, "static", SHARED)
    path = tmp_path / "plan.json"
    save_plan(path, plan)
    assert main(["profile", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["total"]["span_ns"] == doc["makespan_ns"]
    assert sum(g["ops"] for g in doc["groups"]) == len(instance.ops)
    assert main(["profile", str(path)]) == 0
    text = capsys.readouterr().out
    assert f"makespan {doc['makespan_ns']:,} ns" in text
    rows = [line for line in text.splitlines() if line.startswith(("layer", "no layer"))]
    merged = [row for row in rows if "each)" in row]
    assert len(rows) + sum(int(r.split("(x")[1].split(",")[0]) - 1 for r in merged) \
        == len(doc["groups"])


def test_unreadable_plan_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "plan.json"
    bad.write_text("{not json")
    assert main(["profile", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "plan.json" in err


def _certificate(tmp_path, lower):
    from elk_opt.bounds.ideal import ideal_bound
    from elk_opt.frontend.synthetic import synthetic_instance
    from elk_opt.io import plan_to_dict

    instance = synthetic_instance(ops=24, plans=3, seed=2)
    plan = solve(instance, "elk-full", SHARED)
    doc = {"format": "elk-certificate/1", "timing": "shared-noc", "best_bound": "ideal",
           "lower_bound_ns": ideal_bound(instance) if lower is None else lower,
           "plan": plan_to_dict(plan)}
    path = tmp_path / "cert.json"
    path.write_text(json.dumps(doc))
    return path, doc


def test_a_certificate_sets_its_bound_beside_the_plan(tmp_path, capsys):
    path, doc = _certificate(tmp_path, None)
    assert main(["profile", str(path), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["lower_bound_ns"], got["best_bound"]) == (doc["lower_bound_ns"], "ideal")
    assert got["lower_bound_ns"] <= got["makespan_ns"]
    assert main(["profile", str(path)]) == 0
    text = capsys.readouterr().out
    assert f"lower bound {doc['lower_bound_ns']:,} ns (ideal)" in text and "gap " in text
    # the bound holds under its own timing only: under the other it is left out, and said so
    assert main(["profile", str(path), "--timing", "separate-noc", "--json"]) == 0
    captured = capsys.readouterr()
    assert "lower_bound_ns" not in json.loads(captured.out)
    assert "left out" in captured.err


def test_a_certificate_with_a_bad_bound_is_one_line_and_exit_2(tmp_path, capsys):
    path, _doc = _certificate(tmp_path, -5)
    assert main(["profile", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "lower_bound_ns" in captured.err
