"""The event simulator: exact without sharing (section 5) and with only the NoC port shared
(section 5b), only slower with full contention, mesh no faster than its all-to-all twin, SRAM
within R5, max-min fair sharing, XY routing."""

from __future__ import annotations

import dataclasses
import random
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from elk_opt.errors import UsageError
from elk_opt.evaluate import evaluate, evaluate_plan
from elk_opt.frontend.synthetic import synthetic_instance
from elk_opt.frontend.zoo import model_instance, model_names
from elk_opt.methods import METHODS, heuristics, solve
from elk_opt.problem import (
    Chip,
    Choice,
    ExecPlan,
    Instance,
    Instr,
    Noc,
    Op,
    Plan,
    PreloadPlan,
    Timing,
    Warmup,
)
from elk_opt.simulator import EXACT_SHARING, all_to_all_twin, simulate
from elk_opt.simulator.flows import max_min_speeds
from elk_opt.simulator.network import build_network, dor_link_loads, hbm_port_routers
from elk_opt.solution import SolveOptions, make_plan
from tests.strategies import random_instances, synthetic_instances
from tests.tiny import only_choice, parse, tiny_instance

SLACK = 1e-6  # ns, floating point in contended replays


def random_plan(instance: Instance, rng: random.Random,
                timing: Timing = "separate-noc") -> Plan:
    """Any valid program: random pairs, random topological execution order, random preload
    order and issue points (preloads after executes, 0-ns preloads), random release times."""
    n = len(instance.ops)
    choice = []
    for op in instance.ops:
        w = rng.choice(op.warmup)
        choice.append(Choice(exec=w.exec, preload=w.preload))
    consumers: list[list[int]] = [[] for _ in range(n)]
    missing = [len(set(op.inputs)) for op in instance.ops]
    for i, op in enumerate(instance.ops):
        for j in set(op.inputs):
            consumers[j].append(i)
    ready = [i for i in range(n) if missing[i] == 0]
    exec_order = []
    while ready:
        i = ready.pop(rng.randrange(len(ready)))
        exec_order.append(i)
        for k in consumers[i]:
            missing[k] -= 1
            if missing[k] == 0:
                ready.append(k)
    program: list[Instr] = []
    unloaded = list(exec_order)
    loaded: set[int] = set()
    pos = 0
    lookahead = rng.randint(1, 5)
    while pos < n:
        nxt = exec_order[pos]
        if unloaded and (nxt not in loaded or rng.random() < 0.5):
            j = unloaded.pop(rng.randrange(min(lookahead, len(unloaded))))
            loaded.add(j)
            program.append(("P", j))
        else:
            program.append(("E", nxt))
            pos += 1
    horizon = max(1, sum(op.exec_plans[0].time_ns for op in instance.ops))
    release = {x: rng.randint(0, horizon) for x in program if rng.random() < 0.08}
    return make_plan(instance, choice, program, method="random", started=time.perf_counter(),
                     release_ns=release, timing=timing)


@st.composite
def random_plans(draw, instances=synthetic_instances(max_ops=30)) -> Plan:  # noqa: B008
    """Random plans of either timing."""
    return random_plan(draw(instances), draw(st.randoms(use_true_random=False)),
                       draw(st.sampled_from(["separate-noc", "shared-noc"])))


def mesh_of(chip: Chip, link_scale: int = 16, ports: int = 8) -> Chip:
    """A mesh with the chip's cores (as square as the core count allows)."""
    rows = max(r for r in range(1, int(chip.cores**0.5) + 1) if chip.cores % r == 0)
    noc = Noc("mesh", chip.noc.link_bytes_per_s * link_scale, rows, chip.cores // rows, ports)
    return dataclasses.replace(chip, name=f"{chip.name}-mesh", noc=noc)


def assert_exact(plan: Plan, chip: Chip | None = None) -> None:
    """Sharing `none` replays section 5, `port` section 5b (on the chip simulated), to the ns."""
    on_chip = plan.instance if chip is None else dataclasses.replace(plan.instance, chip=chip)
    for timing, sharing in EXACT_SHARING.items():
        s = evaluate(on_chip, plan.choice, plan.program, plan.release_ns, timing=timing)
        r = simulate(plan, sharing=sharing, chip=chip)
        assert r.makespan_ns == s.makespan_ns
        for i, o in enumerate(r.ops):
            assert (o.load_start_ns, o.load_end_ns) == (s.load_start[i], s.load_end[i])
            assert (o.exec_start_ns, o.exec_end_ns) == (s.exec_start[i], s.exec_end[i])
        assert r.analytic_makespan_ns == evaluate_plan(plan).makespan_ns  # on the plan's chip
        if timing == "shared-noc":
            assert r.shared_noc_makespan_ns == s.makespan_ns


# ---------------------------------------------------------------- exact without sharing

# Sharing `port` is also checked on 1,000 random programs by tests/test_sim_port.py, and both
# exact sharings on every method's plans below.
@settings(max_examples=300)
@given(random_plans(random_instances(max_ops=8, max_plans=3, noc=True)))
def test_exact_sharing_on_random_dags(plan):
    assert_exact(plan)


@settings(max_examples=200)
@given(random_plans(), st.booleans())
def test_exact_sharing_on_synthetic_plans(plan, on_mesh):
    assert_exact(plan, mesh_of(plan.instance.chip) if on_mesh else None)


@pytest.mark.parametrize("method", sorted(m for m, info in METHODS.items()
                                          if info.family != "bound"))
def test_exact_sharing_for_every_method(method):
    exact = METHODS[method].family == "exact"  # warm-started, so a plan always comes back
    options = SolveOptions(time_limit_s=5, warm_start="basic" if exact else None)
    for seed in range(2):
        instance = synthetic_instance(ops=10 if seed else 7, plans=3, seed=seed, tightness=0.5)
        plan = solve(instance, method, options)
        r = simulate(plan, sharing=EXACT_SHARING[plan.timing])
        assert plan.claims is not None and r.makespan_ns == plan.claims.makespan_ns
        assert r.analytic_makespan_ns == plan.claims.makespan_ns


# ---------------------------------------------------------------- contention

@settings(max_examples=150)
@given(random_plans(), st.sampled_from([None, 1, 16]))
def test_contention_only_slows(plan, mesh_scale):
    chip = None if mesh_scale is None else mesh_of(plan.instance.chip, mesh_scale)
    s = evaluate(plan.instance, plan.choice, plan.program, plan.release_ns,
                 timing="separate-noc")
    r = simulate(plan, sharing="full", chip=chip)
    assert r.makespan_ns >= s.makespan_ns
    for i, o in enumerate(r.ops):
        assert o.load_start_ns >= s.load_start[i] - SLACK
        assert o.load_end_ns >= s.load_end[i] - SLACK
        assert o.exec_start_ns >= s.exec_start[i] - SLACK
        assert o.exec_end_ns >= s.exec_end[i] - SLACK


@settings(max_examples=40)
@given(synthetic_instances(max_ops=24), st.sampled_from([1, 4, 64]), st.sampled_from([1, 4, 16]))
def test_mesh_never_beats_its_all_to_all_twin(instance, link_scale, ports):
    mesh = mesh_of(instance.chip, link_scale, ports)
    twin = all_to_all_twin(mesh)
    for method in heuristics():
        plan = solve(instance, method)
        on_mesh = simulate(plan, chip=mesh)
        on_twin = simulate(plan, chip=twin)
        assert on_mesh.makespan_ns >= on_twin.makespan_ns, method


def test_mesh_slows_loads_through_edge_ports():
    """With few HBM ports and thin links the edge saturates: the mesh is clearly slower."""
    instance = synthetic_instance(ops=36, plans=3, seed=4, tightness=0.3)
    plan = solve(instance, "basic")
    mesh = mesh_of(instance.chip, link_scale=1, ports=2)
    assert simulate(plan, chip=mesh).makespan_ns > 1.5 * simulate(
        plan, chip=all_to_all_twin(mesh)).makespan_ns


def test_uncontended_capacity_means_no_slowdown():
    instance = synthetic_instance(ops=24, plans=3, seed=1)
    roomy = dataclasses.replace(instance.chip, hbm_bytes_per_s=10**18, noc=Noc(
        "all_to_all", 10**18), extra={"sram_port_bytes_per_s": 10**18})
    plan = solve(instance, "basic", SolveOptions(timing="separate-noc"))
    assert simulate(plan, chip=roomy).makespan_ns == plan.claims.makespan_ns


def test_chip_swap_needs_same_cores_and_sram():
    instance = synthetic_instance(ops=6, plans=2, seed=0)
    plan = solve(instance, "basic")
    with pytest.raises(UsageError, match="cores"):
        simulate(plan, chip=dataclasses.replace(instance.chip, sram_bytes=1))
    bad_mesh = dataclasses.replace(instance.chip, noc=Noc("mesh", 1, 3, 3, 1))
    with pytest.raises(UsageError, match="does not have"):
        simulate(plan, chip=bad_mesh)


# ---------------------------------------------------------------- metrics

@settings(max_examples=150)
@given(random_plans(), st.sampled_from(["none", "port", "full"]), st.booleans())
def test_peak_sram_within_static_r5(plan, sharing, on_mesh):
    chip = mesh_of(plan.instance.chip) if on_mesh else None
    r = simulate(plan, sharing=sharing, chip=chip)
    assert r.peak_sram_bytes <= evaluate_plan(plan).peak_sram_bytes
    assert min(level for _t, level in r.sram_timeline) >= 0


@settings(max_examples=60)
@given(random_plans(), st.sampled_from(["none", "port", "full"]))
def test_breakdown_and_utilisation_add_up(plan, sharing):
    r = simulate(plan, sharing=sharing)
    b = r.breakdown
    total = b.overlapped_ns + b.exec_only_ns + b.preload_only_ns + b.stall_ns
    assert total == pytest.approx(r.makespan_ns, abs=1.0)
    assert min(b.overlapped_ns, b.exec_only_ns, b.preload_only_ns, b.stall_ns) >= -SLACK
    busy = sum(o.exec_end_ns - o.exec_start_ns for o in r.ops)
    assert b.overlapped_ns + b.exec_only_ns == pytest.approx(busy, abs=1e-3)
    if sharing == "full":  # capacities hold, so averages are at most 1
        assert r.hbm_util <= 1 + 1e-9
        assert r.noc_util <= 1 + 1e-9
    hbm = sum(op.hbm_bytes for op, c in zip(plan.instance.ops, plan.choice, strict=True)
              if op.preload_by_id[c.preload].load_ns)
    moved = sum((t1 - t0) * 1e-9 * rate for t0, t1, rate, _noc in r.bandwidth)
    assert moved == pytest.approx(hbm, rel=1e-6, abs=1.0)


def test_tflops():
    instance = synthetic_instance(ops=24, plans=3, seed=3)
    r = simulate(solve(instance, "basic"), sharing="none")
    flops = sum(op.flops for op in instance.ops)
    assert r.tflops == pytest.approx(flops / (r.makespan_ns * 1e-9) / 1e12)


# ---------------------------------------------------------------- max-min sharing

@settings(max_examples=200)
@given(st.integers(1, 4), st.integers(1, 5), st.randoms(use_true_random=False))
def test_max_min_speeds_are_feasible_and_fair(flows, resources, rng):
    demand = np.array([[rng.choice([0.0, rng.uniform(0.1, 10)]) for _ in range(resources)]
                       for _ in range(flows)])
    capacity = np.array([rng.uniform(0.5, 20) for _ in range(resources)])
    speed = max_min_speeds(demand, capacity)
    assert ((speed > 0) & (speed <= 1)).all()
    use = speed @ demand
    assert (use <= capacity * (1 + 1e-9)).all()
    for f in range(flows):
        if speed[f] < 1:  # bottlenecked: a saturated resource where nobody runs faster
            assert any(use[r] >= capacity[r] * (1 - 1e-9) and demand[f, r] > 0
                       and speed[f] >= speed[demand[:, r] > 0].max() - 1e-12
                       for r in range(resources))


def test_max_min_two_flows_on_one_link():
    speed = max_min_speeds(np.array([[10.0, 0.0], [30.0, 1.0]]), np.array([20.0, 0.5]))
    # flow 1 is held to 0.5 by its own link; flow 0 takes what is left of the shared one
    assert speed == pytest.approx([0.5, 0.5])
    speed = max_min_speeds(np.array([[10.0, 0.0], [30.0, 1.0]]), np.array([20.0, 0.1]))
    assert speed == pytest.approx([1.0, 0.1])


# ---------------------------------------------------------------- routing

def test_dimension_order_link_loads_match_walked_routes():
    rows, cols = 3, 4
    rng = np.random.default_rng(0)
    src = rng.integers(0, rows * cols, 60)
    dst = rng.integers(0, rows * cols, 60)
    weight = rng.uniform(1, 2, 60)
    yx = rng.random(60) < 0.5
    expected = np.zeros(2 * rows * (cols - 1) + 2 * (rows - 1) * cols)
    base = 2 * rows * (cols - 1)

    def walk_row(r, c, dc, w):
        while c != dc:
            if dc > c:
                expected[r * (cols - 1) + c] += w
                c += 1
            else:
                expected[rows * (cols - 1) + r * (cols - 1) + c - 1] += w
                c -= 1

    def walk_col(c, r, dr, w):
        while r != dr:
            if dr > r:
                expected[base + c * (rows - 1) + r] += w
                r += 1
            else:
                expected[base + (rows - 1) * cols + c * (rows - 1) + r - 1] += w
                r -= 1

    for s, d, w, first_col in zip(src, dst, weight, yx, strict=True):
        (r, c), (dr, dc) = divmod(int(s), cols), divmod(int(d), cols)
        if first_col:
            walk_col(c, r, dr, w)
            walk_row(dr, c, dc, w)
        else:
            walk_row(r, c, dc, w)
            walk_col(dc, r, dr, w)
    assert dor_link_loads(rows, cols, src, dst, weight, yx) == pytest.approx(expected)


def test_mesh_network_patterns():
    chip = mesh_of(synthetic_instance(ops=2).chip)
    net = build_network(chip)
    rows, cols = chip.noc.mesh_rows, chip.noc.mesh_cols
    links = net.ring_pattern[5:]
    # boustrophedon ring: every hop between neighbours except the wrap back up one column
    assert links.sum() == pytest.approx(chip.cores - 1 + rows - 1)
    assert links.max() == pytest.approx(1.0)
    ports = hbm_port_routers(rows, cols, 8)
    assert len({r for r, _ in ports}) == 8
    for r, vertical in ports:
        assert (r // cols in (0, rows - 1)) if vertical else (r % cols in (0, cols - 1))
    # every core receives one byte per byte per core, over as many hops as its ports are away
    assert net.hbm_pattern[1] == 1 and net.hbm_pattern[5:].max() <= chip.cores / 8


# ---------------------------------------------------------------- real models

@pytest.mark.parametrize("model", model_names())
def test_zoo_models_on_both_presets(model):
    """Two-layer zoo models: exact without sharing and with the port shared, slower than
    section 5 with full contention, SRAM within R5, and the mesh preset no faster than its
    all-to-all twin."""
    for chip in ("ipu-pod4-hbm3e", "ipu-pod4-mesh"):
        instance = model_instance(model, chip, layers=2)
        for method in ("basic", "static", "elk-dyn", "lhs"):
            plan = solve(instance, method)
            assert_exact(plan)
            r = simulate(plan)
            assert r.makespan_ns >= evaluate(plan.instance, plan.choice, plan.program,
                                             timing="separate-noc").makespan_ns
            assert r.peak_sram_bytes <= evaluate_plan(plan).peak_sram_bytes
            if chip == "ipu-pod4-mesh":
                twin = simulate(plan, chip=all_to_all_twin(instance.chip))
                assert r.makespan_ns >= twin.makespan_ns


def test_bottlenecks_name_the_saturated_resource():
    instance = synthetic_instance(ops=36, plans=3, seed=4, tightness=0.3)
    plan = solve(instance, "basic")
    mesh = simulate(plan, chip=mesh_of(instance.chip, link_scale=1, ports=2))
    name, util = mesh.bottlenecks[0]
    assert "->" in name and 0 < util <= 1 + 1e-9  # a mesh link, within capacity
    flat = simulate(plan)
    assert {name for name, _ in flat.bottlenecks} <= {"hbm", "core_in", "core_out", "noc",
                                                        "sram"}


def test_a_load_and_an_execute_share_the_ingress_link_by_hand():
    """4 cores, 1 B/ns links. E0 shifts 100 B per core in 100 ns and P1 delivers 100 B per
    core in 100 ns: each alone fills every core's ingress link, so together they run at half
    speed and both end at 200 ns; E1 (10 ns) then ends at 210 instead of section 5's 110.
    Section 5b splits the port the same way here: each asks for all of it."""
    plans = dict(preload_plans=(PreloadPlan(0, 0, 0),), warmup=(Warmup(0, 0, 0),))
    op0 = Op("e0", "matmul", None, (), 0, 0, exec_plans=(ExecPlan(0, 100, 0, 100),), **plans)
    op1 = Op("e1", "matmul", None, (0,), 400, 0, exec_plans=(ExecPlan(0, 10, 100, 0),),
             preload_plans=(PreloadPlan(0, 100, 100),), warmup=(Warmup(0, 0, 0),))
    chip = Chip("tiny", cores=4, sram_bytes=1000, hbm_bytes_per_s=10**12, clock_hz=10**9,
                noc=Noc("all_to_all", 10**9), extra={"sram_port_bytes_per_s": 10**15})
    instance = Instance("by-hand", chip, (op0, op1))
    plan = make_plan(instance, [Choice(0, 0), Choice(0, 0)],
                     [("P", 0), ("P", 1), ("E", 0), ("E", 1)], method="hand",
                     started=time.perf_counter(), timing="separate-noc")
    r = simulate(plan)
    assert plan.claims.makespan_ns == 110 == r.analytic_makespan_ns
    assert r.shared_noc_makespan_ns == 210 and r.slowdown_vs_shared_noc == 1.0
    assert r.ops[1].load_end_ns == pytest.approx(200) and r.ops[0].exec_end_ns == pytest.approx(200)
    assert r.makespan_ns == 210
    assert r.breakdown.overlapped_ns == pytest.approx(200)
    assert dict(r.bottlenecks)["core_in"] == pytest.approx(800 / (4 * 210))  # bytes in / cap


def test_exact_past_a_second():
    """Exact replays stay exact however long the plan: P1 ends 1 ns after E0, past 1 s."""
    second = 1_000_000_000
    instance = tiny_instance([(0, 0, second, 0, 0), (second + 1, 0, 5, 0, 0)],
                             inputs=[(), (0,)])
    for timing in ("separate-noc", "shared-noc"):
        plan = make_plan(instance, only_choice(instance), parse("P0 P1 E0 E1"),
                         method="hand", started=time.perf_counter(), timing=timing)
        assert plan.claims.makespan_ns == second + 6
        assert_exact(plan)
