"""Zoo models: bytes match the published configurations, plans are sane, layers repeat."""

from collections import defaultdict

import pytest

from elk_opt.evaluate import evaluate
from elk_opt.frontend.zoo import model_instance, model_names
from elk_opt.io import plan_to_dict
from elk_opt.methods import solve
from elk_opt.problem import TIMINGS
from elk_opt.solution import SolveOptions
from verify import check

BF16 = 2

# Published configurations (Hugging Face config.json), written out again here on purpose:
# the test must not share code or numbers with the zoo it checks.
PUBLISHED = {
    # hidden, heads, kv heads, head dim, ffn, layers, vocab
    "llama2-7b": (4096, 32, 32, 128, 11008, 32, 32000),
    "llama2-13b": (5120, 40, 40, 128, 13824, 40, 32000),
    "llama2-70b": (8192, 64, 8, 128, 28672, 80, 32000),
    "opt-30b": (7168, 56, 56, 128, 28672, 48, 50272),
    "gemma2-27b": (4608, 32, 16, 128, 36864, 46, 256000),
}


def decode_step_bytes(model: str, batch: int, kv_len: int) -> int:
    """Weights without the input embedding table (a tied head counts as the head) plus the
    KV cache, in bf16."""
    h, heads, kv, dh, ffn, layers, vocab = PUBLISHED[model]
    if model == "opt-30b":  # biases, two LayerNorms with bias, plain ReLU FFN
        layer = 4 * (h * h + h) + 2 * 2 * h + (h * ffn + ffn) + (ffn * h + h)
        final = 2 * h
    else:
        attn = h * heads * dh + 2 * h * kv * dh + heads * dh * h
        norms = (4 if model == "gemma2-27b" else 2) * h
        layer = attn + 3 * h * ffn + norms
        final = h
    weights = layers * layer + final + vocab * h
    if model == "gemma2-27b":  # sliding window 4096 on every other layer
        cached = sum(min(kv_len, 4096) if i % 2 == 0 else kv_len for i in range(layers))
    else:
        cached = layers * kv_len
    kv_cache = 2 * batch * kv * dh * cached
    return (weights + kv_cache) * BF16


@pytest.mark.parametrize("model", list(PUBLISHED))
@pytest.mark.parametrize("batch, kv_len", [(32, 2048), (8, 5000)])
def test_decode_hbm_bytes_match_published_config(model, batch, kv_len):
    inst = model_instance(model, batch=batch, kv_len=kv_len)
    total = sum(op.hbm_bytes for op in inst.ops)
    expected = decode_step_bytes(model, batch, kv_len)
    assert abs(total - expected) <= 0.01 * expected
    kv_bytes = sum(op.hbm_bytes for op in inst.ops if op.extra.get("hbm_data") == "kv")
    h, _, kv, dh, _, layers, _ = PUBLISHED[model]
    if model != "gemma2-27b":
        assert kv_bytes == 2 * batch * kv * dh * kv_len * layers * BF16


def test_dit_weights_match_published_parameter_count():
    inst = model_instance("dit-xl-2", batch=4, mode="forward")
    total = sum(op.hbm_bytes for op in inst.ops)
    assert abs(total - 675_000_000 * BF16) <= 0.01 * 675_000_000 * BF16


@pytest.mark.parametrize("chip", ["ipu-pod4-hbm3e", "ipu-pod4-mesh", "ipu-mk2",
                                  "tt-galaxy-wormhole"])
@pytest.mark.parametrize("model", model_names())
def test_plans_fit_and_pair(model, chip):
    batch = 8 if chip == "ipu-mk2" else 32
    inst = model_instance(model, chip, batch=batch, kv_len=1024, layers=2)
    sram = inst.chip.sram_bytes
    for op in inst.ops:
        assert op.pairs(), op.name
        assert all(p.space_bytes <= sram for p in op.exec_plans)
        assert all(q.space_bytes <= sram for q in op.preload_plans)
        assert all(p.space_bytes <= sram for _q, p, _w in op.pairs())
        assert len(op.exec_plans) <= 8 and len(op.preload_plans) <= 4
        assert (op.hbm_bytes > 0) == ("hbm_data" in op.extra)
        if op.hbm_bytes == 0:
            assert [(q.space_bytes, q.load_ns) for q in op.preload_plans] == [(0, 0)]
        assert all(i < k for k, op2 in enumerate(inst.ops) for i in op2.inputs)


def test_identical_layers_get_identical_plans():
    inst = model_instance("llama2-13b", layers=4)
    by_layer = defaultdict(list)
    for op in inst.ops:
        by_layer[op.layer].append(op)
    assert set(by_layer) == {None, 0, 1, 2, 3}
    assert len(by_layer[None]) == 3  # embedding, final norm, head
    first = by_layer[0]
    for layer in (1, 2, 3):
        ops = by_layer[layer]
        assert [op.name.replace(f"layers.{layer}.", "") for op in ops] == \
            [op.name.replace("layers.0.", "") for op in first]
        for a, b in zip(first, ops, strict=True):
            assert (a.exec_plans, a.preload_plans, a.warmup) == \
                (b.exec_plans, b.preload_plans, b.warmup)
    kinds = {op.extra.get("hbm_data") for op in first}
    assert kinds == {"weights", "kv", None}


def test_kv_ops_make_sram_bind():
    """At batch 32 and KV 2048 a layer's HBM data is a large share of all SRAM."""
    inst = model_instance("llama2-13b", layers=2)
    kv = [op for op in inst.ops if op.extra.get("hbm_data") == "kv"]
    assert kv and all(min(q.space_bytes for q in op.preload_plans) > inst.chip.sram_bytes / 8
                      for op in kv)
    layer_data = sum(op.hbm_bytes for op in inst.ops if op.layer == 0)
    assert layer_data / inst.chip.cores > inst.chip.sram_bytes / 2


@pytest.mark.parametrize("timing", TIMINGS)
@pytest.mark.parametrize("mode", ["decode", "prefill", "forward"])
def test_modes_build_and_schedule(mode, timing):
    inst = model_instance("llama2-7b", batch=2, kv_len=256, layers=1, mode=mode)
    plan = solve(inst, "basic", SolveOptions(timing=timing))
    assert check(plan_to_dict(plan)).valid
    assert plan.claims.makespan_ns == evaluate(inst, plan.choice, plan.program,
                                               timing=timing).makespan_ns
    if mode != "decode":
        assert not any(op.extra.get("hbm_data") == "kv" for op in inst.ops)


def test_prefill_head_reads_one_token_forward_reads_all():
    pre = model_instance("llama2-7b", batch=2, kv_len=128, layers=1, mode="prefill")
    fwd = model_instance("llama2-7b", batch=2, kv_len=128, layers=1, mode="forward")
    assert fwd.ops[-1].flops == 128 * pre.ops[-1].flops


def test_layers_option_and_determinism():
    a = model_instance("gemma2-27b", layers=3)
    b = model_instance("gemma2-27b", layers=3)
    assert a == b
    assert max(op.layer for op in a.ops if op.layer is not None) == 2
