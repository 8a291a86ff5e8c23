"""The heuristics' resumable 5b replay (heuristics.replay) and the load-delay pass built on it."""

from bisect import bisect_right

from hypothesis import given, settings
from hypothesis import strategies as st

from elk_opt.evaluate import evaluate
from elk_opt.problem import TIMINGS
from heuristics import advances
from heuristics.advances import advance_loads, sram_slack
from heuristics.delays import delay_loads
from heuristics.replay import Costs, Issue, adopt, replay, retime
from tests.strategies import random_instances, random_plans
from tests.tiny import only_choice, parse, port_instance


@given(st.data(), random_instances(max_ops=7, max_plans=3, noc=True))
def test_replay_times_as_the_evaluator(data, instance):
    choice, program = data.draw(random_plans(instance))
    for timing in TIMINGS:
        costs = Costs.of(instance, choice, timing)
        issue = Issue.of(program, costs)
        assert replay(costs, issue).makespan == evaluate(
            instance, choice, program, timing=timing).makespan_ns
        assert issue.program(program) == tuple(program)


@settings(max_examples=60)
@given(st.data(), random_instances(max_ops=7, max_plans=3, noc=True))
def test_retiming_an_edit_is_exact(data, instance):
    """Every delayed load, re-timed from the execute before it changes, as a full replay."""
    choice, program = data.draw(random_plans(instance))
    costs = Costs.of(instance, choice, "shared-noc")
    issue = Issue.of(program, costs)
    old = replay(costs, issue)
    position = {op: p for p, op in enumerate(issue.execs)}
    for x, j in enumerate(issue.loads):
        for gate in range(issue.gates[x] + 1, position[j] + 1):
            moved, y = issue.moved(x, gate)
            restore = max([k for k in range(len(issue.execs)) if old.next_load[k] <= x],
                          default=0)
            full = replay(costs, moved)
            assert retime(costs, moved, old, restore, y + 1) == (full.makespan, True)
            guess, exact = retime(costs, moved, old, restore, y + 1, horizon=1)
            assert guess == full.makespan or not exact
            assert adopt(costs, moved, old, restore, y + 1) == full


def test_holding_a_load_off_a_noc_heavy_execute():
    # op0 executes 20 ns holding the whole port; op1 and op2 load 10 ns each at the whole port,
    # op1 then executes 40 ns and op2 10 ns without it. Issued eagerly, P1 and P2 both split
    # the port with E0: 90 ns (test_shared_noc times it). Issued after E0, P2 loads beside E1,
    # which needs no port: E0 0-30 (halved while P1 loads), P2 30-40, E1 30-70, E2 70-80;
    # holding both after E0 also takes 80 (E0 0-20, P1 20-30, P2 30-40, E1 30-70, E2 70-80).
    inst = port_instance([(0, 0, 20, 20), (10, 10, 40, 0), (10, 10, 10, 0)])
    program = parse("P0 P1 P2 E0 E1 E2")
    for reorder in (False, True):
        got = delay_loads(inst, only_choice(inst), program, "shared-noc", reorder)
        assert got.makespan_ns == 80 == evaluate(inst, only_choice(inst), got.program,
                                                 timing="shared-noc").makespan_ns
        assert got.held_back >= 1
    same = delay_loads(inst, only_choice(inst), program, "separate-noc", reorder=True)
    assert same.program == tuple(program) and same.held_back == 0


@settings(max_examples=60)
@given(st.data(), random_instances(max_ops=7, max_plans=3, noc=True))
def test_delays_never_lengthen_nor_break_memory(data, instance):
    choice, program = data.draw(random_plans(instance))
    before = evaluate(instance, choice, program, timing="shared-noc")
    got_loads = {j for j, c in enumerate(choice)
                 if instance.ops[j].preload_by_id[c.preload].load_ns > 0}
    for reorder in (False, True):
        got = delay_loads(instance, choice, program, "shared-noc", reorder)
        after = evaluate(instance, choice, got.program, timing="shared-noc")
        assert after.makespan_ns == got.makespan_ns <= before.makespan_ns
        # only delays: every op holds at most the space it held before, at every execute
        assert all(a <= b for a, b in zip(after.sram_bytes, before.sram_bytes, strict=True))
        assert sorted(got.program) == sorted(program)
        moving = [j for kind, j in got.program if kind == "P" and j in got_loads]
        if not reorder:  # the order of the loads that move data is kept
            assert moving == [j for kind, j in program if kind == "P" and j in got_loads]


@settings(max_examples=60)
@given(st.data(), random_instances(max_ops=7, max_plans=3, noc=True))
def test_retiming_a_load_issued_sooner_is_exact(data, instance):
    """Every load issued sooner, alone or with the queue before it, re-timed from the
    position the advance pass restores, as a full replay."""
    choice, program = data.draw(random_plans(instance))
    for timing in TIMINGS:
        costs = Costs.of(instance, choice, timing)
        issue = Issue.of(program, costs)
        old = replay(costs, issue)
        for x, gate in enumerate(issue.gates):
            for new_gate in range(gate):
                first = bisect_right(issue.gates, new_gate)
                for edit in (issue.moved(x, new_gate, last=True)[0],
                             issue.advanced(x, new_gate)[0]):
                    restore = advances._restore(old, first, new_gate)
                    full = replay(costs, edit)
                    assert retime(costs, edit, old, restore, x + 1) == (full.makespan, True)
                    assert adopt(costs, edit, old, restore, x + 1) == full


@settings(max_examples=60)
@given(st.data(), random_instances(max_ops=7, max_plans=3, noc=True))
def test_loads_issued_sooner_never_lengthen_nor_break_memory(data, instance):
    choice, program = data.draw(random_plans(instance))
    data_loads = {j for j, c in enumerate(choice)
                  if instance.ops[j].preload_by_id[c.preload].load_ns > 0}
    for timing in TIMINGS:
        before = evaluate(instance, choice, program, timing=timing)
        for reorder in (False, True):
            got = advance_loads(instance, choice, program, timing, reorder, sweeps=4)
            after = evaluate(instance, choice, got.program, timing=timing)
            assert after.makespan_ns == got.makespan_ns <= before.makespan_ns
            assert sorted(got.program) == sorted(program)
            assert (got.advanced == 0) == (got.program == tuple(program))
            # R5 holds wherever it held: the pass adds pending bytes only within the slack
            assert all(a >= 0 for a, b in zip(sram_slack(instance, choice, got.program),
                                               sram_slack(instance, choice, program),
                                               strict=True) if b >= 0)
            if not reorder:  # the order of the loads that move data is kept
                assert [j for kind, j in got.program if kind == "P" and j in data_loads] == \
                    [j for kind, j in program if kind == "P" and j in data_loads]


def test_a_load_issued_two_executes_sooner_runs_beside_a_port_free_execute():
    # op0 executes 10 ns without the port; op1, a norm, holds the whole port for 20 ns; op2
    # loads 10 ns at the whole port and executes 10 ns without it. Issued after E1, P2 waits
    # for the norm: E0 0-10, E1 10-30, P2 30-40, E2 40-50. One execute sooner it shares the
    # port with the norm and still ends at 50; two sooner it runs beside E0: P2 0-10, E0 0-10,
    # E1 10-30, E2 30-40.
    inst = port_instance([(0, 0, 10, 0), (0, 0, 20, 20), (10, 10, 10, 0)])
    choice = only_choice(inst)
    program = parse("P0 P1 E0 E1 P2 E2")
    assert evaluate(inst, choice, program, timing="shared-noc").makespan_ns == 50
    got = advance_loads(inst, choice, program, "shared-noc", reorder=False, sweeps=4)
    assert got.makespan_ns == 40 == evaluate(inst, choice, got.program,
                                             timing="shared-noc").makespan_ns
    assert got.advanced == 1 and got.program == tuple(parse("P0 P1 P2 E0 E1 E2"))
