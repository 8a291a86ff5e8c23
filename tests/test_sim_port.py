"""Sharing `port` (only the NoC port shared) replays docs/spec.md section 5b to the nanosecond."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from elk_opt.cli import main
from elk_opt.errors import InputError
from elk_opt.evaluate import evaluate
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.io import save_plan
from elk_opt.lower import device_program_from_dict, device_program_to_dict, lower
from elk_opt.methods import solve
from elk_opt.problem import Chip, ExecPlan, Instance, Noc, Op, Plan, PreloadPlan, Warmup
from elk_opt.simulator import simulate, simulate_program
from elk_opt.solution import SolveOptions, make_plan
from tests.strategies import random_instances, random_plans
from tests.tiny import only_choice, parse, port_instance

PROGRAMS_PER_INSTANCE = 10  # drawing an instance costs as much as ten programs


@settings(max_examples=100)  # 1,000 programs
@given(st.data(), random_instances(max_ops=6, noc=True))
def test_port_sharing_reproduces_section_5b(data, instance):
    for _ in range(PROGRAMS_PER_INSTANCE):
        choice, program = data.draw(random_plans(instance))
        release = data.draw(st.dictionaries(st.sampled_from(program), st.integers(0, 300),
                                            max_size=3))
        s = evaluate(instance, choice, program, release, timing="shared-noc")
        plan = Plan(instance, tuple(choice), tuple(program), release, timing="shared-noc")
        r = simulate_program(lower(plan), sharing="port")
        assert r.makespan_ns == s.makespan_ns == r.analytic_makespan_ns
        assert r.shared_noc_makespan_ns == s.makespan_ns
        for i, o in enumerate(r.ops):
            assert (o.load_start_ns, o.load_end_ns) == (s.load_start[i], s.load_end[i])
            assert (o.exec_start_ns, o.exec_end_ns) == (s.exec_start[i], s.exec_end[i])
            assert o.exec_start_ns <= o.distribute_end_ns <= o.exec_end_ns
            op, c = instance.ops[i], choice[i]
            if op.warmup_ns[(c.preload, c.exec)] == 0:
                assert o.distribute_end_ns == o.exec_start_ns
            if op.exec_by_id[c.exec].time_ns == 0:
                assert o.distribute_end_ns == o.exec_end_ns


def warm_instance() -> Instance:
    """op0: no load; execute 20 ns + 10 ns warm-up, port time 10 + 10 over 30 ns (667 permille).
    op1: load 10 ns holding the port throughout (1000 permille); execute 5 ns off the port."""
    op0 = Op("op0", "test", None, (), 0, 0,
             exec_plans=(ExecPlan(0, 20, 0, 0, noc_ns=10),),
             preload_plans=(PreloadPlan(0, 0, 0),), warmup=(Warmup(0, 0, 10),))
    op1 = Op("op1", "test", None, (0,), 0, 0,
             exec_plans=(ExecPlan(0, 5, 0, 0, noc_ns=0),),
             preload_plans=(PreloadPlan(0, 0, 10, noc_ns=10),), warmup=(Warmup(0, 0, 0),))
    chip = Chip("port", cores=1, sram_bytes=1, hbm_bytes_per_s=1, clock_hz=1,
                noc=Noc("all_to_all", 1_000_000_000))
    return Instance("warm", chip, (op0, op1))


def test_warm_up_and_local_execute_are_one_port_activity_by_hand():
    instance = warm_instance()
    plan = make_plan(instance, only_choice(instance), parse("P0 P1 E0 E1"), method="hand",
                     started=time.perf_counter(), timing="shared-noc")
    r = simulate(plan, sharing="port")
    # From 0, P1 (1000 permille, 10,000 units) and E0 (667, 30 x 667 = 20,010 units) split the
    # port 500/500. P1 ends at 20; E0's warm-up (its first 10 x 667 = 6,670 units) ends at
    # ceil(6,670 / 500) = 14; E0 has 10,010 units left at 20 and ends at 20 + ceil(10,010 /
    # 667) = 36 alone. E1 36-41. Section 5: E0 0-30, E1 30-35.
    assert (r.ops[1].load_start_ns, r.ops[1].load_end_ns) == (0, 20)
    assert (r.ops[0].exec_start_ns, r.ops[0].distribute_end_ns, r.ops[0].exec_end_ns) == (
        0, 14, 36)
    assert (r.ops[1].exec_start_ns, r.ops[1].exec_end_ns) == (36, 41)
    assert r.makespan_ns == 41 == plan.claims.makespan_ns == r.analytic_makespan_ns
    assert simulate(plan, sharing="none").makespan_ns == 35
    assert r.sharing == "port" and r.timing == "shared-noc"


def test_only_the_port_is_shared():
    """The port model ignores HBM, SRAM and link capacities: a chip whose HBM and SRAM port
    are a thousand times slower replays the same."""
    instance = port_instance([(10, 0, 20, 16), (10, 6, 5, 0)])
    plan = make_plan(instance, only_choice(instance), parse("P0 P1 E0 E1"), method="hand",
                     started=time.perf_counter(), timing="shared-noc")
    assert simulate(plan, sharing="port").makespan_ns == 40  # tests/test_shared_noc.py
    slow = Chip("slow", cores=1, sram_bytes=1, hbm_bytes_per_s=1, clock_hz=1,
                noc=instance.chip.noc, extra={"sram_port_bytes_per_s": 1})
    assert simulate(plan, sharing="port", chip=slow).makespan_ns == 40


def test_full_contention_reports_how_far_it_is_from_both_timings():
    instance = synthetic_instance(ops=24, plans=3, seed=5)
    for timing in ("separate-noc", "shared-noc"):
        plan = solve(instance, "elk-dyn", SolveOptions(timing=timing))
        section_5 = evaluate(instance, plan.choice, plan.program, plan.release_ns,
                             timing="separate-noc").makespan_ns
        section_5b = evaluate(instance, plan.choice, plan.program, plan.release_ns,
                              timing="shared-noc").makespan_ns
        r = simulate(plan)
        assert r.sharing == "full" and r.timing == timing
        assert r.analytic_makespan_ns == plan.claims.makespan_ns
        assert r.shared_noc_makespan_ns == section_5b
        assert r.makespan_ns >= section_5
        assert r.slowdown == pytest.approx(r.makespan_ns / plan.claims.makespan_ns)
        assert r.slowdown_vs_shared_noc == pytest.approx(r.makespan_ns / section_5b)
        summary = r.summary()
        assert summary["sharing"] == "full" and summary["timing"] == timing
        assert summary["shared_noc_makespan_ns"] == section_5b
        # a lowered program carries the timing and the port data: the same reference numbers
        dp = device_program_from_dict(json.loads(json.dumps(device_program_to_dict(
            lower(plan)))))
        again = simulate_program(dp)
        assert (again.analytic_makespan_ns, again.shared_noc_makespan_ns) == (
            plan.claims.makespan_ns, section_5b)


def test_device_programs_carry_noc_ns_and_timing():
    instance = port_instance([(10, 0, 20, 16), (10, 6, 5, 0)])
    plan = make_plan(instance, only_choice(instance), parse("P0 P1 E0 E1"), method="hand",
                     started=time.perf_counter(), timing="shared-noc")
    raw = device_program_to_dict(lower(plan))
    assert raw["timing"] == "shared-noc"
    preload, execute = raw["program"][1], raw["program"][2]
    assert preload["call"] == "preload_async" and preload["noc_ns"] == 6
    assert execute["call"] == "execute" and execute["local_execute"]["noc_ns"] == 16
    assert simulate_program(device_program_from_dict(raw), sharing="port").makespan_ns == 40
    # both fields are optional: absent, the program is section 5's and the port time is bytes
    del raw["timing"]
    for call in raw["program"]:
        call.pop("noc_ns", None)
        call.get("local_execute", {}).pop("noc_ns", None)
    old = device_program_from_dict(raw)
    assert old.timing == "separate-noc" and all(c.noc_ns is None for c in old.calls)
    assert simulate_program(old, sharing="port").makespan_ns == 35  # no bytes: no port use
    raw["timing"] = "shared"
    with pytest.raises(InputError, match="dp.json: timing: must be one of"):
        device_program_from_dict(raw, "dp.json")
    raw["timing"] = "shared-noc"
    raw["program"][1]["noc_ns"] = -1
    with pytest.raises(InputError, match=r"program\[1\].noc_ns"):
        device_program_from_dict(raw, "dp.json")


def test_sharing_option_on_the_command_line(tmp_path, capsys):
    plan = solve(synthetic_instance(ops=16, plans=3, seed=2), "elk-dyn")
    assert plan.timing == "shared-noc"
    path = tmp_path / "plan.json"
    save_plan(path, plan)
    section_5 = evaluate(plan.instance, plan.choice, plan.program, plan.release_ns,
                         timing="separate-noc").makespan_ns
    expected = {("--sharing", "port"): plan.claims.makespan_ns,
                ("--sharing", "none"): section_5, ("--no-contention",): section_5}
    for flags, makespan in expected.items():
        assert main(["simulate", str(path), "--json", *flags]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["makespan_ns"] == makespan, flags
        assert out["analytic_makespan_ns"] == plan.claims.makespan_ns
        assert out["shared_noc_makespan_ns"] == plan.claims.makespan_ns
    assert main(["simulate", str(path), "--json", "--contention"]) == 0
    full = json.loads(capsys.readouterr().out)
    assert full["sharing"] == "full" and full["makespan_ns"] >= section_5
    assert main(["simulate", str(path), "--sharing", "port"]) == 0
    text = capsys.readouterr().out
    assert "NoC port shared (section 5b)" in text and "section 5b's" in text
    assert main(["simulate", str(path), "--sharing", "port", "--no-contention"]) == 2
    assert main(["simulate", str(path), "--sharing", "ports"]) == 2
