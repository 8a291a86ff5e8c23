"""Synthetic instances: seeded, layered, Pareto plans, and memory that binds."""

from hypothesis import given

from elk_opt.frontend.synthetic import LAYER_TEMPLATE, synthetic_instance
from elk_opt.io import instance_to_dict
from elk_opt.methods import solve
from tests.strategies import synthetic_instances


def test_same_seed_same_instance_other_seed_other_instance():
    a = instance_to_dict(synthetic_instance(ops=30, plans=4, seed=7))
    assert a == instance_to_dict(synthetic_instance(ops=30, plans=4, seed=7))
    assert a != instance_to_dict(synthetic_instance(ops=30, plans=4, seed=8))


def test_layers_repeat_identically():
    width = len(LAYER_TEMPLATE)
    inst = synthetic_instance(ops=3 * width, plans=4, seed=3)
    for i in range(width):
        a, b = inst.ops[i], inst.ops[i + 2 * width]
        assert (a.exec_plans, a.preload_plans, a.warmup) == (b.exec_plans, b.preload_plans,
                                                              b.warmup)
        assert (a.layer, b.layer) == (0, 2)
    heavy = [op for op in inst.ops if op.hbm_bytes > 0]
    assert 0 < len(heavy) < len(inst.ops)


@given(synthetic_instances())
def test_plans_are_pareto_and_pairs_are_sound(instance):
    for op in instance.ops:
        plans = sorted(op.exec_plans, key=lambda p: p.space_bytes)
        for small, big in zip(plans, plans[1:], strict=False):
            assert small.space_bytes < big.space_bytes and small.time_ns > big.time_ns
        loads = sorted(op.preload_plans, key=lambda q: q.space_bytes)
        for small, big in zip(loads, loads[1:], strict=False):
            assert small.load_ns <= big.load_ns
        assert op.warmup
        if op.hbm_bytes == 0:
            assert all(q.load_ns == 0 and q.space_bytes == 0 for q in op.preload_plans)


def test_tightness_makes_memory_bind():
    roomy = synthetic_instance(ops=48, plans=4, seed=0, tightness=0.0)
    tight = synthetic_instance(ops=48, plans=4, seed=0, tightness=1.0)
    assert tight.chip.sram_bytes < roomy.chip.sram_bytes
    # Basic preloads the next op during almost every execute when roomy, far fewer when tight.
    early = [solve(i, "basic").claims.params["preloaded_early"] for i in (roomy, tight)]
    assert early[0] == 47 and early[1] < early[0]
    assert solve(tight, "basic").claims.makespan_ns > solve(roomy, "basic").claims.makespan_ns
