"""Lower bounds: the Ideal's linear-memory tail search, and every bound below every plan."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from elk_opt.api import build_instance
from elk_opt.api import verify as verify_plan
from elk_opt.bounds import fluid_sram, layers
from elk_opt.bounds.carry import carry_bound, distinct_windows, load_classes
from elk_opt.bounds.cheap import best_cheap_bound, cheap_bounds
from elk_opt.bounds.fluid import fluid_bound, representatives
from elk_opt.bounds.fluid_layers import fluid_layers_bound
from elk_opt.bounds.fluid_milp import fluid_milp_bound
from elk_opt.bounds.fluid_sram import fluid_sram_bound
from elk_opt.bounds.ideal import allowed_pairs, ideal_bound, least_tail
from elk_opt.bounds.layers import layer_bound, layer_windows
from elk_opt.bounds.limits import BOUND_CLASSES, DEFAULT_CLASSES
from elk_opt.bounds.recompute import recompute
from elk_opt.bounds.run_all import lower_bounds
from elk_opt.bounds.split import fluid_split_bound, split_band
from elk_opt.bounds.window import window_instance
from elk_opt.cli import main
from elk_opt.errors import UsageError
from elk_opt.evaluate import evaluate, fits_memory
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.io import load_instance, load_plan, save_instance
from elk_opt.methods import heuristics, solve
from elk_opt.problem import TIMINGS, Chip, ExecPlan, Instance, Noc, Op, PreloadPlan, Warmup
from elk_opt.solution import SolveOptions
from formulations.common import Restrictions
from formulations.cpsat_model import build
from formulations.enumerate import enumerate_optimum, enumerate_shared_optimum
from tests.strategies import port_chains, random_instances, random_plans, synthetic_instances
from tests.tiny import only_choice, parse, port_instance, tiny_instance


def dense_ideal(instance: Instance) -> int:
    """The Ideal as first written: an n x n descendant matrix (the reference, quadratic)."""
    ops = instance.ops
    sram = instance.chip.sram_bytes
    pairs = [allowed_pairs(op, sram) for op in ops]
    runs = np.array([min(p.time_ns + t for _q, p, t in ps) for ps in pairs], dtype=np.int64)
    loads = np.array([min(q.load_ns for q, _p, _t in ps) for ps in pairs], dtype=np.int64)
    loading = np.array([max(q.load_ns for q, _p, _t in ps) > 0 for ps in pairs])
    n = len(ops)
    desc = np.zeros((n, n), dtype=bool)
    for j in range(n - 1, -1, -1):
        for c in (i for i, op in enumerate(ops) if j in op.inputs):
            desc[j, c] = True
            desc[j] |= desc[c]
    sources = [i for i, op in enumerate(ops) if not op.inputs]
    exec_chain = int(runs.sum()) + min(int(loads[s]) for s in sources)
    if not loading.any():
        return exec_chain
    tails = runs + desc.astype(np.int64) @ runs
    return max(exec_chain, int(loads.sum()) + int(tails[loading].min()))


@given(random_instances(max_ops=12, max_plans=3))
def test_ideal_equals_the_dense_reference_on_random_dags(instance):
    assert ideal_bound(instance) == dense_ideal(instance)


@given(synthetic_instances(max_ops=60, max_plans=4))
def test_ideal_equals_the_dense_reference_on_synthetic_decoders(instance):
    assert ideal_bound(instance) == dense_ideal(instance)


@st.composite
def wide_dags(draw):
    """Runs and inputs of a random DAG with many sources and sinks (the search's hard case)."""
    n = draw(st.integers(1, 40))
    inputs = [sorted(draw(st.sets(st.integers(0, i - 1), max_size=3))) if i else []
              for i in range(n)]
    runs = draw(st.lists(st.integers(0, 50), min_size=n, max_size=n))
    candidates = sorted(draw(st.sets(st.integers(0, n - 1), min_size=1)))
    return inputs, runs, candidates


@given(wide_dags())
def test_least_tail_is_the_exact_minimum(dag):
    inputs, runs, candidates = dag
    instance = tiny_instance([(0, 0, 1, 0, 0)] * len(runs), inputs=[tuple(x) for x in inputs])
    n = len(runs)
    desc = [set() for _ in range(n)]
    for j in range(n - 1, -1, -1):
        for c in range(j + 1, n):
            if j in inputs[c]:
                desc[j] |= {c} | desc[c]
    expected = min(runs[j] + sum(runs[c] for c in desc[j]) for j in candidates)
    assert least_tail(instance, runs, candidates) == expected


# --- bounds that see the shared port (section 5b), and every bound below every plan ---

CALIBRATION = Path(__file__).parent / "data" / "elk-artifact-llama2-13b-b32-kv2048-layer.json"


def all_bounds(instance: Instance, timing: str, cpsat: bool = False) -> dict[str, int]:
    """Every bound; with `cpsat`, also those CP-SAT proves (slower: kept to fewer examples)."""
    out = cheap_bounds(instance, timing)
    out["fluid"] = fluid_bound(instance, timing).bound_ns
    out["fluid, 2 classes"] = fluid_bound(instance, timing, max_classes=2).bound_ns
    out["fluid-sram"] = fluid_sram_bound(instance, timing).bound_ns
    out["fluid-sram, band 1"] = fluid_sram_bound(instance, timing, band=1).bound_ns
    out["fluid-milp"] = fluid_milp_bound(instance, timing).bound_ns
    out["fluid-contiguous"] = fluid_milp_bound(instance, timing, contiguous=True).bound_ns
    out["fluid-whole-ns"] = fluid_milp_bound(instance, timing, contiguous=True,
                                             whole_ns=True).bound_ns
    for width in (2, 3):  # windows that pay for the loads they carry: the LP's prices, 0
        out[f"carry, width {width}"] = carry_bound(instance, timing, max_width=width,
                                                   rounds=2).bound_ns
    if cpsat:  # small windows: every window but the first has a free time origin
        for width in (2, 6):  # a time limit keeps CP-SAT's bound a bound
            windows = layer_bound(instance, timing, time_limit_s=1.0, max_width=width)
            out[f"layers, width {width}"] = windows.bound_ns
            out[f"fluid-layers, width {width}"] = fluid_layers_bound(
                instance, timing, windows=windows).bound_ns
            with starved_cpsat():  # the windows the fluid MIP bounds
                out[f"layers, width {width}, MIP"] = layer_bound(
                    instance, timing, time_limit_s=1.0, max_width=width).bound_ns
    return out


def starved_cpsat():
    """The layer windows' CP-SAT stopped at once, so that each window's fluid MIP counts."""
    real = layers.solver_for_bound

    def starved(time_limit_s, threads, deterministic=False):
        solver = real(time_limit_s, threads, deterministic)
        solver.parameters.max_deterministic_time = 0.0
        solver.parameters.max_time_in_seconds = 0.0
        return solver
    return mock.patch.object(layers, "solver_for_bound", starved)


def assert_below(instance: Instance, choice, program, release=None) -> None:
    """Every bound of each timing is at most the plan's makespan under it (plans obeying R5)."""
    for timing in TIMINGS:
        schedule = evaluate(instance, choice, program, release, timing=timing)
        if not fits_memory(instance, schedule):
            return
        for name, bound in all_bounds(instance, timing).items():
            assert bound <= schedule.makespan_ns, (timing, name, bound, schedule.makespan_ns)


def ample(instance: Instance) -> Instance:
    """The instance with SRAM for everything at once, so that every program obeys R5."""
    need = sum(max(max(q.space_bytes for q in op.preload_plans),
                   max(p.space_bytes for p in op.exec_plans)) for op in instance.ops)
    return replace(instance, chip=replace(instance.chip, sram_bytes=need))


def releases(data, program) -> dict:
    return {instr: data.draw(st.integers(0, 200)) for instr in program
            if data.draw(st.integers(0, 3)) == 0}


@settings(max_examples=150)
@given(st.data(), random_instances(max_ops=6, noc=True))
def test_bounds_never_exceed_a_random_plan(data, instance):
    instance = ample(instance) if data.draw(st.booleans()) else instance
    choice, program = data.draw(random_plans(instance))
    assert_below(instance, choice, program, releases(data, program))


@given(random_instances(max_ops=7, noc=True))
def test_bounds_never_exceed_a_heuristic_plan(instance):
    for method in heuristics():
        for timing in TIMINGS:  # all_bounds has instance-order bounds: plans in that order
            plan = solve(instance, method, SolveOptions(timing=timing, exec_order="instance"))
            assert_below(instance, plan.choice, plan.program, plan.release_ns)


@settings(max_examples=4)  # each example runs every bound, CP-SAT's included, twice
@given(synthetic_instances(max_ops=30, max_plans=4))
def test_bounds_never_exceed_heuristic_plans_on_synthetic_decoders(instance):
    plans = [solve(instance, m, SolveOptions(timing="shared-noc", exec_order="instance"))
             for m in ("static", "elk-dyn", "lhs")]
    for timing in TIMINGS:
        bounds = all_bounds(instance, timing, cpsat=True)
        for plan in plans:
            schedule = evaluate(instance, plan.choice, plan.program, plan.release_ns,
                                timing=timing)
            for name, bound in bounds.items():
                assert bound <= schedule.makespan_ns, (timing, name)


@settings(max_examples=60)
@given(random_instances(max_ops=4, max_plans=2))
def test_separate_noc_bounds_never_exceed_the_exhaustive_optimum(instance):
    best = enumerate_optimum(instance)
    assert best is not None
    for name, bound in all_bounds(instance, "separate-noc", cpsat=True).items():
        assert bound <= best.makespan_ns, name


@settings(max_examples=40)
@given(random_instances(max_ops=3, max_plans=2, noc=True, max_ns=10))
def test_shared_noc_bounds_never_exceed_the_exhaustive_5b_optimum(instance):
    best = enumerate_shared_optimum(instance)
    assert best is not None
    for name, bound in all_bounds(instance, "shared-noc", cpsat=True).items():
        assert bound <= best.makespan_ns, name


def test_the_fluid_bound_with_sram_charges_a_load_that_overlaps_an_execute(monkeypatch):
    # Each op holds 60 of 100 B while it waits or runs, so P1 cannot be pending at E0: the
    # optimum is 40 (P0 E0 P1 E1, nothing overlaps). The fluid LP overlaps P1 with E0 (30);
    # with R5, the part of P1 beside E0 makes op1 pending there, charged its fraction done:
    # 0.6 + 0.6 f <= 1, so f <= 2/3 and a third of P1 runs alone: 33.3, rounded up 34.
    instance = tiny_instance([(10, 60, 10, 60, 0), (10, 60, 10, 60, 0)])
    assert enumerate_optimum(instance).makespan_ns == 40
    # Charged whole (the MIP), any progress of P1 before E1 starts makes op1 pending at E0,
    # which R5 forbids: P1 runs after E0, and the bound is the optimum. The rounded R5 row
    # (divisor 60: floor(60 / 60) f <= floor((100 - 60) / 60) = 0) says the same in the LP.
    for timing in TIMINGS:
        assert fluid_bound(instance, timing).bound_ns == 30
        assert fluid_sram_bound(instance, timing).bound_ns == 40
        assert fluid_milp_bound(instance, timing).bound_ns == 40
    monkeypatch.setattr(fluid_sram, "MAX_DIVISORS", 0)
    for timing in TIMINGS:
        assert fluid_sram_bound(instance, timing).bound_ns == 34


# E0 holds 30 of 100 B for 60 ns; ops 1 and 2 each load 40 B in 30 ns
ONE_PENDING_BESIDE_E0 = [(0, 0, 60, 30, 0), (30, 40, 1, 40, 0), (30, 40, 1, 40, 0)]


def test_rounded_r5_rows_count_pending_loads_whole(monkeypatch):
    # E0 runs 60 ns holding 30 of 100 B; ops 1 and 2 each load 40 B in 30 ns. Beside E0 one
    # load can be pending (30 + 2 x 40 > 100): P1 during E0, the HBM idle until E0 ends,
    # then P2: 91 ns. The LP's R5 row lets 1.75 loads be pending at E0, P2 three quarters
    # done beside it: 69 ns. The rounded row (divisor 40) allows floor(70 / 40) = 1: the
    # optimum.
    instance = tiny_instance(ONE_PENDING_BESIDE_E0)
    assert enumerate_optimum(instance).makespan_ns == 91
    for timing in TIMINGS:
        assert fluid_sram_bound(instance, timing).bound_ns == 91
    monkeypatch.setattr(fluid_sram, "MAX_DIVISORS", 0)
    for timing in TIMINGS:
        assert fluid_sram_bound(instance, timing).bound_ns == 69


def test_rounded_r5_rows_keep_a_divisor_below_the_eight_largest():
    # The instance above with an op 3 of eight layouts, 50-57 B: 40 B, the divisor whose row
    # gives the optimum, is the ninth largest space. Its row is still there.
    base = tiny_instance(ONE_PENDING_BESIDE_E0 + [(1, 50, 1, 50, 0)])
    layouts = range(8)
    last = replace(base.ops[3],
                   preload_plans=tuple(PreloadPlan(id=i, space_bytes=50 + i, load_ns=1)
                                       for i in layouts),
                   exec_plans=tuple(ExecPlan(id=i, time_ns=20 - i, space_bytes=50 + i,
                                             noc_bytes=0) for i in layouts),
                   warmup=tuple(Warmup(preload=i, exec=i, time_ns=0) for i in layouts))
    instance = replace(base, ops=base.ops[:3] + (last,))
    assert enumerate_optimum(instance).makespan_ns == 104
    for timing in TIMINGS:
        assert fluid_sram_bound(instance, timing).bound_ns == 104


@settings(max_examples=100, suppress_health_check=[HealthCheck.filter_too_much])
@given(random_instances(max_ops=4, max_plans=2))
def test_rounded_r5_rows_that_bind_stay_below_the_exhaustive_optimum(instance):
    """Where the rows raise the fluid bound with SRAM (about one random instance in eight),
    it is still at most the optimum over every plan in the instance's order."""
    raised = fluid_sram_bound(instance, "separate-noc").bound_ns
    with mock.patch.object(fluid_sram, "MAX_DIVISORS", 0):
        assume(raised > fluid_sram_bound(instance, "separate-noc").bound_ns + 1)
    assert raised <= enumerate_optimum(instance).makespan_ns


@settings(max_examples=40)
@given(random_instances(max_ops=6, max_plans=3, noc=True))
def test_the_fluid_mip_is_at_least_its_lp(instance):
    """The MIP only takes solutions away from the fluid LP with SRAM (same rows, with 0/1
    columns and whole charges that are at least the fractional ones): its bound is at least
    the LP's, up to the two solvers' rounding margins (1 ns and a millionth)."""
    for timing in TIMINGS:
        lp = fluid_sram_bound(instance, timing, periodic=False).bound_ns
        mip = fluid_milp_bound(instance, timing)
        assert mip.complete and mip.bound_ns >= lp - 1 - lp // 1_000_000, (timing, mip, lp)


def test_one_load_running_at_each_execute_start_raises_the_fluid_mip():
    # E0 (10 ns, port 500 permille) and E1 (2 ns, 1000) run before E2 (4 ns) and E3 (6 ns).
    # P2 (6 ns, no port) and P3 (10 ns, 500 permille) have 16 ns to hide in. The fluid MIP
    # hides them all (22 ns, the executes): P3 beside E0 and E2, P2 beside E0 and E1, since
    # P3 beside E1 would slow it (1500 permille asked of the port). That leaves both loads
    # part-done when E1 starts; a plan runs one load at a time, each to its end. With that
    # alone the MIP still gives 23: P3 runs through E1, which it lets run 1 ns "beside" a
    # load of the other class that does no work there, E1 alone by another name. With the
    # execute overlapping only the class of the load running through it, the optimum.
    instance = port_instance([(0, 0, 10, 5), (0, 0, 2, 2), (6, 0, 4, 0), (10, 5, 6, 0)])
    assert enumerate_shared_optimum(instance).makespan_ns == 24
    assert fluid_milp_bound(instance, "shared-noc").bound_ns == 22
    assert fluid_milp_bound(instance, "shared-noc", contiguous=True).bound_ns == 24


def test_a_load_part_done_at_both_ends_of_an_execute_runs_through_it():
    # One load, P3 (4 ns, 1000 permille), due before E3. Beside E0 and E2 (500 permille) it
    # runs at half speed and slows neither; beside E1 (1000) both halve. The fluid MIP runs
    # it beside E0 (1 ns of work) and E2 (3), and lets E1 run alone in between: 12 ns, the
    # executes. A plan's load cannot stop: started in E0 it runs through E1 and slows it
    # (14 ns); started after E1 it needs 1 ns alone after E2: 13, the optimum.
    instance = port_instance([(0, 0, 2, 1), (0, 0, 2, 2), (0, 0, 6, 3), (4, 4, 2, 1)])
    assert enumerate_shared_optimum(instance).makespan_ns == 13
    assert fluid_milp_bound(instance, "shared-noc").bound_ns == 12
    assert fluid_milp_bound(instance, "shared-noc", contiguous=True).bound_ns == 13


@settings(max_examples=40)
@given(port_chains())
def test_one_load_running_stays_between_the_fluid_mip_and_the_exhaustive_optimum(instance):
    raised = fluid_milp_bound(instance, "shared-noc", contiguous=True)
    assert raised.complete
    assert raised.bound_ns >= fluid_milp_bound(instance, "shared-noc").bound_ns - 1
    assert raised.bound_ns <= enumerate_shared_optimum(instance).makespan_ns


def test_intervals_of_whole_ns_round_each_end_up_as_the_timing_does():
    # E0 and E1 (7 ns, port demand 572) share the port with P2 (9 ns, 445) and slow to
    # 555/572 of their speed beside it; every end of a plan falls on a whole ns, the fluid
    # MIP's interval ends do not. With each interval a whole number of ns, the optimum.
    instance = port_instance([(0, 0, 7, 4), (0, 0, 7, 4), (9, 4, 1, 0)])
    assert enumerate_shared_optimum(instance).makespan_ns == 17
    assert fluid_milp_bound(instance, "shared-noc", contiguous=True).bound_ns == 16
    assert fluid_milp_bound(instance, "shared-noc", contiguous=True,
                            whole_ns=True).bound_ns == 17


def test_bound_lists_the_whole_ns_mip_when_asked_and_recomputes_it(tmp_path):
    instance = port_instance([(0, 0, 7, 4), (0, 0, 7, 4), (9, 4, 1, 0)])
    plain = lower_bounds(instance, window=0, layers=0, lp_max_ops=0)
    assert "fluid-whole-ns" not in {r["bound"] for r in plain["bounds"]}
    asked = lower_bounds(instance, window=0, layers=0, lp_max_ops=0, whole_ns=True)
    row = next(r for r in asked["bounds"] if r["bound"] == "fluid-whole-ns")
    assert row["ns"] == 17 == asked["best"]["ns"] and row["status"] == "complete"
    assert recompute(instance, "shared-noc", "fluid-whole-ns", row["params"], {}) == 17
    path, out = tmp_path / "i.json", tmp_path / "b.json"
    save_instance(path, instance)
    assert main(["bound", str(path), "--whole-ns", "--window", "0", "--layers", "0",
                 "--lp-max-ops", "0", "-q", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["best"]["ns"] == 17


def test_the_whole_ns_mip_runs_only_where_the_plan_given_is_within_its_reach():
    # fluid-contiguous is 16 on these 3 ops: a plan up to 16 + 4 ns is within a ns per
    # interval of it (4 intervals), and only there does fluid-whole-ns run
    instance = port_instance([(0, 0, 7, 4), (0, 0, 7, 4), (9, 4, 1, 0)])

    def names(**kwargs) -> set[str]:
        report = lower_bounds(instance, window=0, layers=0, lp_max_ops=0, whole_ns=True,
                              **kwargs)
        return {r["bound"] for r in report["bounds"]}

    assert "fluid-whole-ns" in names(plan_ns=17) and "fluid-whole-ns" in names(plan_ns=20)
    assert "fluid-whole-ns" not in names(plan_ns=21) | names(plan_ns=16)
    # a fluid-contiguous finished before stands in for one left out
    done = lower_bounds(instance, window=0, layers=0, lp_max_ops=0, whole_ns=True,
                        plan_ns=17, fluid_contiguous_max_ops=0, contiguous_done=(16, 0.5))
    rows = {r["bound"]: r for r in done["bounds"]}
    assert "fluid-contiguous" not in rows and rows["fluid-whole-ns"]["ns"] == 17
    assert rows["fluid-whole-ns"]["params"]["time_limit_s"] is None  # finished: no cap
    assert "fluid-whole-ns" not in names(fluid_contiguous_max_ops=0)
    for bad in (-1, 17.5, "17", True):
        with pytest.raises(UsageError, match="plan_ns"):
            names(plan_ns=bad)


@settings(max_examples=40)
@given(port_chains())
def test_intervals_of_whole_ns_stay_between_the_mip_and_the_exhaustive_optimum(instance):
    whole = fluid_milp_bound(instance, "shared-noc", contiguous=True, whole_ns=True)
    assert whole.complete
    assert whole.bound_ns >= fluid_milp_bound(instance, "shared-noc", contiguous=True).bound_ns
    assert whole.bound_ns <= enumerate_shared_optimum(instance).makespan_ns


@settings(max_examples=60)
@given(st.data(), random_instances(max_ops=6, noc=True))
def test_the_fluid_mip_from_the_first_start_is_below_every_plans_span(data, instance):
    choice, program = data.draw(random_plans(instance))
    release = releases(data, program)
    for timing in TIMINGS:
        schedule = evaluate(instance, choice, program, release, timing=timing)
        if not fits_memory(instance, schedule):
            return
        bound = fluid_milp_bound(instance, timing, contiguous=True, from_first_start=True)
        assert bound.bound_ns <= schedule.makespan_ns - schedule.exec_start[0], timing


@settings(max_examples=30)
@given(port_chains())
def test_the_fluid_mip_from_the_first_start_is_below_the_least_span(instance):
    """Against CP-SAT's exact model minimising the span from the first execute's start (a
    middle layer window's objective, elk_opt.bounds.layers)."""
    for timing in TIMINGS:
        cm = build(instance, Restrictions(), timing=timing)
        cm.model.minimize(cm.exec_end[-1] - cm.exec_start[0])
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        assert solver.solve(cm.model) == cp_model.OPTIMAL
        bound = fluid_milp_bound(instance, timing, contiguous=True, from_first_start=True)
        assert bound.complete and bound.bound_ns <= solver.objective_value, timing
        # the loads before the first start are all it leaves out
        whole = fluid_milp_bound(instance, timing, contiguous=True)
        assert bound.bound_ns <= whole.bound_ns


def test_layer_windows_count_the_fluid_mip_where_cp_sat_stops_short():
    instance = synthetic_instance(ops=36, plans=2, seed=3, tightness=0.6)  # 3 layers of 12
    for timing in TIMINGS:
        with starved_cpsat():
            starved = layer_bound(instance, timing, time_limit_s=30.0)
        for a, b, value in starved.spans:
            window = window_instance(instance, a, b)
            mip = fluid_milp_bound(window, timing, 30.0, band=b - a, contiguous=True,
                                   from_first_start=a > 0)
            assert mip.complete and value >= mip.bound_ns > 0, (timing, a)
        plan = solve(instance, "elk-full", SolveOptions(timing=timing))
        assert starved.bound_ns <= plan.claims.makespan_ns


def test_layer_windows_give_their_mips_no_more_than_the_time_left():
    instance = synthetic_instance(ops=36, plans=2, seed=3, tightness=0.6)
    with starved_cpsat():
        alone = layer_bound(instance, "shared-noc", time_limit_s=30.0, mip_time_s=0.0)
        late = layer_bound(instance, "shared-noc", time_limit_s=30.0,
                           ends=time.perf_counter())
        shared = layer_bound(instance, "shared-noc", time_limit_s=30.0, mip_time_s=600.0,
                             ends=time.perf_counter() + 120.0)
    assert alone.mip_time_s == late.mip_time_s == 0.0
    assert late.spans == alone.spans  # CP-SAT's bounds alone
    # two windows open: the first may take half of what is left, the second the rest
    assert 0.0 < shared.mip_time_s <= 120.0
    assert shared.bound_ns > alone.bound_ns


def test_the_fluid_mip_is_at_least_its_lp_on_a_bsp_slice():
    """Two Llama2-13B b32 KV4096 layers under `bsp`: branch and bound run on the HiGHS that
    had solved the relaxation claimed 538,040 ns, below the LP's 554,133."""
    instance = build_instance("llama2-13b", batch=32, kv_len=4096, layers=2,
                              cost_model="elk-paper", noc_occupancy="bsp")
    lp = fluid_sram_bound(instance, "shared-noc").bound_ns
    mip = fluid_milp_bound(instance, "shared-noc", time_limit_s=120)
    assert mip.complete and mip.bound_ns >= lp - 1 - lp // 1_000_000, (mip, lp)


def test_the_port_bounds_prove_a_contended_optimum():
    # op0 executes 20 ns holding the whole port; op1 loads 10 ns holding the whole port, then
    # executes 5 ns. Section 5 overlaps them: 25 ns. Under 5b the load and E0 must share the
    # port (P1 during E0 halves both: 20 + 10 + 5) or take turns (10 + 20 + 5): 35 ns.
    instance = port_instance([(0, 0, 20, 20), (10, 10, 5, 0)])
    program = parse("P0 P1 E0 E1")
    assert evaluate(instance, only_choice(instance), program,
                    timing="shared-noc").makespan_ns == 35
    assert evaluate(instance, only_choice(instance), program,
                    timing="separate-noc").makespan_ns == 25
    assert best_cheap_bound(instance, "separate-noc") == 25
    assert fluid_bound(instance, "separate-noc").bound_ns == 25
    assert cheap_bounds(instance, "shared-noc")["port-cut"] == 35
    assert fluid_bound(instance, "shared-noc").bound_ns == 35


def test_the_fluid_bound_sees_the_port_idle_while_the_first_load_fills():
    # P0 (10 ns at 500 permille) must precede E0 (20 ns holding the whole port); P1 (10 ns,
    # whole port) must precede E1 (5 ns). The cuts: the port's 35,000 units before E1 plus
    # E1, 40 ns. But nothing can use the half of the port P0 leaves: the fluid LP charges it,
    # and P0 P1 E0 E1 meets it (P1 and E0 split the port, both done at 40; E1 40-45).
    instance = port_instance([(10, 5, 20, 20), (10, 10, 5, 0)])
    plan = evaluate(instance, only_choice(instance), parse("P0 P1 E0 E1"), timing="shared-noc")
    assert best_cheap_bound(instance, "shared-noc") == 40
    assert fluid_bound(instance, "shared-noc").bound_ns == plan.makespan_ns == 45


def test_the_fluid_bound_binds_on_the_elk_artifact_layer():
    """One Llama2-13B decode layer with the Elk artifact's plans (its NoC-heavy cost model):
    the section-5 optimum (191,398 ns, met by the LP relaxation and the HBM cut) is below
    every 5b plan; the fluid bound closes most of the gap to a 5b plan found by delaying
    RMSNorm's sum until the QKV weights are in."""
    instance = load_instance(CALIBRATION)
    assert best_cheap_bound(instance, "separate-noc") == 191_398
    fluid = fluid_bound(instance, "shared-noc").bound_ns
    plan = solve(instance, "static", SolveOptions(timing="shared-noc"))
    shifted = evaluate(instance, plan.choice, plan.program, {("E", 1): 7_500},
                       timing="shared-noc").makespan_ns
    assert 193_000 <= fluid <= shifted <= 193_700
    assert fluid_bound(instance, "separate-noc").bound_ns == 191_398


# Two zoo slices' best known plans (default chip, `elk-opt instance llama2-7b --layers 1
# --batch 64 --kv-len K`): 229,801 ns, which a CP-SAT probe proves optimal (BENCHMARKS.md, "The
# last probe below a start within reach"), and 365,203 ns, which fluid-whole-ns proves.
BEST_KNOWN = [("llama2-7b-b64-kv2048-hbm3e.best.plan.json.gz", 229_801),
              ("llama2-7b-b64-kv4096-hbm3e.best.plan.json.gz", 365_203)]


@pytest.mark.parametrize(("name", "makespan"), BEST_KNOWN)
def test_the_bounds_sharpest_at_the_last_ns_stay_below_the_best_known_plans(name, makespan):
    """The tiny instances above check every bound against exhaustive optima; these check the
    MIPs where they are sharpest, a ns or two under plans of real decoder layers (class
    rounding, dozens of events per layer), where a bound that claims a ns too many shows.
    Rounding up the execute's part of each interval and the loads' part apart, tried once,
    claimed 229,802 here (BENCHMARKS.md, "Whole ns per part of an interval: not a bound")."""
    plan = load_plan(Path(__file__).parent / "data" / name)
    assert verify_plan(plan)["valid"] and plan.claims.makespan_ns == makespan
    instance = plan.instance
    got = cheap_bounds(instance, "shared-noc")
    got["fluid"] = fluid_bound(instance, "shared-noc").bound_ns
    got["fluid-sram"] = fluid_sram_bound(instance, "shared-noc").bound_ns
    for label, rows in (("fluid-milp", {}), ("fluid-contiguous", {"contiguous": True}),
                        ("fluid-whole-ns", {"contiguous": True, "whole_ns": True})):
        got[label] = fluid_milp_bound(instance, "shared-noc", 120, **rows).bound_ns
    assert all(ns is not None and ns <= makespan for ns in got.values()), got
    assert got["fluid-whole-ns"] >= makespan - 1, got  # and within a ns of the plan


def test_class_representatives_round_down():
    assert representatives({0, 300, 500, 990}, 16) == [0, 300, 500, 990]
    reps = representatives(set(range(0, 1001, 10)), 5)
    assert len(reps) == 5 and reps[0] == 0 and reps[-1] == 1000
    assert representatives({300, 500, 990}, 1) == [300]  # one class: the least demand
    with pytest.raises(ValueError, match="max_classes"):
        representatives({300}, 0)


def test_bound_command_reports_each_timing_s_bounds(tmp_path, capsys):
    out = tmp_path / "b.json"
    assert main(["bound", str(CALIBRATION), "--window", "0", "--layers", "0",
                 "--lp-max-ops", "0", "--fluid-contiguous-max-ops", "0", "-o", str(out)]) == 0
    report = json.loads(out.read_text())
    rows = {r["bound"]: r for r in report["bounds"]}
    assert report["timing"] == "shared-noc" and set(rows) == {
        "ideal", "hbm-cut", "port-total", "port-cut", "fluid", "fluid-sram", "fluid-milp"}
    assert report["best"]["ns"] == fluid_bound(load_instance(CALIBRATION),
                                               "shared-noc").bound_ns
    assert rows["port-cut"]["timings"] == "shared-noc" and rows["ideal"]["order"] == "any"
    assert "fluid" in capsys.readouterr().out
    assert main(["bound", str(CALIBRATION), "--timing", "separate-noc", "--window", "0",
                 "--layers", "0", "--lp-max-ops", "0", "--fluid-contiguous-max-ops", "0",
                 "-o", str(out)]) == 0
    report = json.loads(out.read_text())
    assert {r["bound"] for r in report["bounds"]} == {"ideal", "hbm-cut", "fluid",
                                                      "fluid-sram", "fluid-milp"}
    assert report["best"]["ns"] == 191_398
    assert main(["bound", str(CALIBRATION), "--timing", "nonsense"]) == 2


def test_every_reported_bound_is_recomputed_from_its_params():
    # the calibration layer without the contiguous MIP (5 s a solve there), a port chain
    # with it
    chain = port_instance([(0, 0, 2, 1), (0, 0, 2, 2), (0, 0, 6, 3), (4, 4, 2, 1)])
    for instance, contiguous in ((load_instance(CALIBRATION), 0), (chain, 50)):
        for timing in TIMINGS:
            report = lower_bounds(instance, timing=timing, window=4, window_time_s=5.0,
                                  layers=0, lp_max_ops=0, fluid_contiguous_max_ops=contiguous)
            assert ("fluid-contiguous" in {r["bound"] for r in report["bounds"]}) == bool(
                contiguous)
            for row in report["bounds"]:
                assert row["status"] in ("complete", "time-limit"), row
                if row["status"] == "complete":
                    assert recompute(instance, timing, row["bound"], row["params"]) == row["ns"]


def test_a_fluid_row_is_recomputed_with_the_classes_it_was_built_with():
    # the calibration layer has 14 load demands: 2 classes round most of them down
    instance = load_instance(CALIBRATION)
    few = fluid_bound(instance, "shared-noc", max_classes=2).bound_ns
    every = fluid_bound(instance, "shared-noc").bound_ns
    assert few < every
    assert recompute(instance, "shared-noc", "fluid", {"max_classes": 2}) == few
    # rows that do not record `max_classes` were built with DEFAULT_CLASSES
    assert recompute(instance, "shared-noc", "fluid", {}) == fluid_bound(
        instance, "shared-noc", max_classes=DEFAULT_CLASSES).bound_ns
    report = lower_bounds(instance, timing="shared-noc", window=0, layers=0, lp_max_ops=0,
                          fluid_contiguous_max_ops=0)
    classes = {r["bound"]: r["params"].get("max_classes") for r in report["bounds"]}
    assert classes["fluid"] == classes["fluid-sram"] == BOUND_CLASSES
    assert classes["fluid-milp"] == DEFAULT_CLASSES  # the MIPs keep fewer: they slow down


def test_identical_layers_are_solved_once_and_counted_each_time():
    instance = synthetic_instance(ops=36, plans=1, seed=3, tightness=0.6)  # 3 layers of 12
    assert layer_windows(instance) == [(0, 12), (12, 24), (24, 36)]
    assert layer_windows(instance, max_width=8) == [(0, 8), (8, 12), (12, 20), (20, 24),
                                                    (24, 32), (32, 36)]
    assert layer_windows(instance, per=2, max_width=8) == [(0, 12), (12, 24), (24, 36)]
    for timing in TIMINGS:
        whole = layer_bound(instance, timing, time_limit_s=30.0)
        assert (whole.windows, whole.distinct, whole.proven) == (3, 2, 3)
        # each distinct window's optimum, counted once per occurrence
        first = layer_bound(replace(instance, ops=instance.ops[:12]), timing, time_limit_s=30.0)
        later = layer_bound(replace(instance, ops=instance.ops[:24]), timing,
                            time_limit_s=30.0).bound_ns - first.bound_ns
        assert whole.bound_ns == first.bound_ns + 2 * later
        plan = solve(instance, "elk-full", SolveOptions(timing=timing))
        assert whole.bound_ns <= plan.claims.makespan_ns
        report = lower_bounds(instance, timing=timing, window=12, window_time_s=30.0,
                              layers=1, layers_time_s=30.0, fluid_sram_max_ops=0,
                              lp_max_ops=0)
        rows = {r["bound"]: r for r in report["bounds"]}
        assert rows["layers1"]["ns"] == whole.bound_ns
        assert "(2 distinct)" in rows["window12"]["note"]
        assert rows["fluid-layers"]["ns"] >= max(rows["fluid"]["ns"], whole.bound_ns)
        for name in ("layers1", "window12", "fluid-layers"):
            assert rows[name]["status"] == "complete"
            assert recompute(instance, timing, name, rows[name]["params"]) == rows[name]["ns"]


def test_a_passed_deadline_keeps_the_bounds_that_fit_in_the_grace(monkeypatch):
    """Past its deadline a method still gets every linear-time bound when they would take
    microseconds (a small instance), and only the Ideal when they would not."""
    import elk_opt.bounds.cheap as cheap
    from elk_opt.deadline import Deadline

    instance = synthetic_instance(ops=40, plans=3, seed=2)
    passed = Deadline.after(0.0, 0.0)
    assert passed.passed()
    every = cheap_bounds(instance, "shared-noc")
    assert cheap_bounds(instance, "shared-noc", deadline=passed) == every
    monkeypatch.setattr(cheap, "GRACE_S", 0.0)
    assert cheap_bounds(instance, "shared-noc", deadline=passed) == {"ideal": every["ideal"]}


def test_windows_that_carry_nothing_sum_their_fluid_mips():
    """At prices 0 carried loads cost and earn nothing: each window's term is its fluid MIP
    with loads run whole, from its first execute's start (the layer windows' MIP)."""
    instance = synthetic_instance(ops=36, plans=2, seed=3, tightness=0.6)  # 3 layers of 12
    for timing in TIMINGS:
        classes = load_classes(instance, timing)
        free = carry_bound(instance, timing, prices=[0.0] * len(classes.reps))
        assert (free.windows, free.distinct, free.rounds) == (3, 2, 1)
        total = 0
        for a, b in layer_windows(instance):
            mip = fluid_milp_bound(window_instance(instance, a, b), timing, band=b - a,
                                   contiguous=True, from_first_start=a > 0)
            assert mip.complete
            total += mip.bound_ns
        assert abs(free.bound_ns - total) <= 3, timing
        priced = carry_bound(instance, timing)
        plan = solve(instance, "elk-full", SolveOptions(timing=timing))
        assert priced.bound_ns <= plan.claims.makespan_ns
        assert all(0.0 <= p <= 1.0 for p in priced.prices)
        assert priced.proven == priced.distinct == len(distinct_windows(instance))


def test_windows_that_carry_loads_pay_for_the_next_layers_preloads():
    """On a load-bound decoder the next layer's loads, free to the layer windows, are what
    a window pays for: the priced sum beats the free one and stays below Elk-Full."""
    instance = synthetic_instance(ops=36, plans=2, seed=0, tightness=0.3)
    for timing in TIMINGS:
        classes = load_classes(instance, timing)
        free = carry_bound(instance, timing, prices=[0.0] * len(classes.reps)).bound_ns
        priced = carry_bound(instance, timing).bound_ns
        plan = solve(instance, "elk-full", SolveOptions(timing=timing))
        assert free < priced <= plan.claims.makespan_ns, timing


def layered_chain(block: list[tuple[int, int, int, int, int, int]], layers: int,
                  sram: int) -> Instance:
    """`block`'s ops (load ns, load port ns, execute ns, execute port ns, preload space, held
    space), one pair each, repeated `layers` times in a chain, a layer per repeat."""
    ops = []
    for layer in range(layers):
        for load, load_noc, run, run_noc, space, held in block:
            i = len(ops)
            ops.append(Op(name=f"op{i}", kind="test", layer=layer, inputs=(i - 1,) if i else (),
                          hbm_bytes=space, flops=0,
                          exec_plans=(ExecPlan(id=0, time_ns=run, space_bytes=held,
                                               noc_bytes=0, noc_ns=run_noc),),
                          preload_plans=(PreloadPlan(id=0, space_bytes=space, load_ns=load,
                                                     noc_ns=load_noc),),
                          warmup=(Warmup(preload=0, exec=0, time_ns=0),)))
    chip = Chip(name="chain", cores=1, sram_bytes=sram, hbm_bytes_per_s=1, clock_hz=1,
                noc=Noc(topology="all_to_all", link_bytes_per_s=1_000_000_000))
    return Instance(name="chain", chip=chip, ops=tuple(ops))


@st.composite
def repeated_chains(draw):
    """A block of two ops repeated seven times (`layered_chain`): about the smallest model
    whose repeats the periodic and split bounds sum (band 0: a period of at least 2 ops; the
    first repeat is left out, as rows near the model's start are cut short; more than 4
    left)."""
    block = []
    for _ in range(2):
        load = draw(st.sampled_from([0, 2, 4, 6, 8]))
        run = draw(st.sampled_from([1, 2, 4, 6, 8]))
        block.append((load, draw(st.sampled_from([0, load // 2, load])), run,
                      draw(st.sampled_from([0, run // 2, run])),
                      draw(st.sampled_from([10, 40])), draw(st.sampled_from([10, 30]))))
    return layered_chain(block, 7, draw(st.sampled_from([100, 140])))


@settings(max_examples=25, deadline=None)
@given(repeated_chains())
def test_the_split_and_carrying_bounds_never_exceed_cp_sats_optimum(instance):
    for timing in TIMINGS:
        plan = solve(instance, "cpsat", SolveOptions(timing=timing, time_limit_s=60,
                                                     threads=1))
        assert plan.claims.status == "optimal"
        best = plan.claims.makespan_ns
        split = fluid_split_bound(instance, timing, band=0)
        assert split.bound_ns is not None and split.repeats == 6
        assert split.bound_ns <= best, timing
        # at the summed LP's duals the blocks' LPs add up to that LP (LP duality)
        lp = fluid_sram_bound(instance, timing, band=0).bound_ns
        assert abs(split.lp_ns - lp) <= 2 and split.bound_ns >= lp - 2, timing
        assert carry_bound(instance, timing, max_width=2).bound_ns <= best, timing


def test_the_split_and_carrying_bounds_are_recomputed_from_their_params():
    chain = layered_chain([(8, 8, 2, 1, 40, 10), (2, 0, 6, 6, 10, 30)], 7, 100)
    for timing in TIMINGS:
        split = fluid_split_bound(chain, timing, band=0)
        assert split.bound_ns is not None and split.blocks_proven == 3
        assert recompute(chain, timing, "fluid-split",
                         {"band": 0, "mip_time_s": 5.0}) == split.bound_ns
    instance = synthetic_instance(ops=36, plans=2, seed=0, tightness=0.3)
    assert split_band(instance) == 10  # layers of 12 ops: one layer a period
    for timing in TIMINGS:
        report = lower_bounds(instance, timing=timing, window=0, lp_max_ops=0,
                              layers_time_s=5.0)
        rows = {r["bound"]: r for r in report["bounds"]}
        assert "fluid-split" not in rows  # no block repeats five times beyond the band
        carry = rows["carry"]
        assert carry["status"] == "complete" and carry["ns"] > rows["layers1"]["ns"]
        assert recompute(instance, timing, "carry", carry["params"]) == carry["ns"]
