"""Seeded synthetic instances with the structure of a decoder's decode step.

Ops repeat a twelve-op layer template (norms, projections, attention over a KV cache, FFN,
residual adds): weight and KV-cache ops are HBM-heavy, the rest move no HBM data. Each
template slot's plans are drawn once, so identical layers have identical ops, as in a real
model. Execute plans lie on a Pareto front (more space, less time); preload plans trade space
for warm-up (a layout closer to the execute layout) at the cost of longer loads (replication
over the NoC). `tightness` places SRAM between the smallest size that fits every op alone (1.0)
and one where every op runs its fastest plan beside three full preloads (0.0).
"""

from __future__ import annotations

import numpy as np

from elk_opt.problem import Chip, ExecPlan, Instance, Noc, Op, PreloadPlan, Warmup

CORES = 1472
HBM_BYTES_PER_S = 4_000_000_000_000
LOOKAHEAD = 3  # preloads beside the fastest plan at tightness 0

# (slot name, kind, HBM data: "weights" | "kv" | None, extra input: slot offset back or None)
LAYER_TEMPLATE: tuple[tuple[str, str, str | None, int | None], ...] = (
    ("attn_norm", "rmsnorm", None, None),
    ("qkv_proj", "matmul", "weights", None),
    ("attn_score", "batched_matmul", "kv", None),
    ("softmax", "softmax", None, None),
    ("attn_value", "batched_matmul", "kv", None),
    ("out_proj", "matmul", "weights", None),
    ("attn_residual", "add", None, 6),  # adds the layer's input
    ("ffn_norm", "rmsnorm", None, None),
    ("ffn_up", "matmul", "weights", None),
    ("ffn_act", "elementwise", None, None),
    ("ffn_down", "matmul", "weights", None),
    ("ffn_residual", "add", None, 5),  # adds the attention residual
)


def _slot_ops(rng: np.random.Generator, plans: int, sram_hint: int) -> list[dict]:
    """Draw the plans of every template slot once."""
    slots = []
    for _name, _kind, data, _extra in LAYER_TEMPLATE:
        if data is None:
            slots.append(_light_plans(rng, plans))
        else:
            per_core = int(rng.uniform(0.04, 0.2) * sram_hint)
            slots.append(_heavy_plans(rng, plans, per_core))
    return slots


def _front(rng: np.random.Generator, plans: int, space0: int, time_max: int) -> list[ExecPlan]:
    """`plans` execute plans, strictly more space and strictly less time each step."""
    time_min = max(1, int(time_max * rng.uniform(0.2, 0.4)))
    shrink = rng.uniform(0.4, 0.7)
    grow = rng.uniform(0.2, 0.5)
    out: list[ExecPlan] = []
    for k in range(plans):
        space = int(space0 * (1 + grow * k))
        time_ns = time_min + int((time_max - time_min) * shrink**k)
        if out:
            space = max(space, out[-1].space_bytes + 1)
            time_ns = min(time_ns, out[-1].time_ns - 1)
        out.append(ExecPlan(id=k, time_ns=max(time_ns, 1), space_bytes=space,
                            noc_bytes=int(space * rng.uniform(0.5, 2.0))))
    return out


def _heavy_plans(rng: np.random.Generator, plans: int, per_core: int) -> dict:
    hbm_bytes = per_core * CORES
    base_load = max(1, hbm_bytes * 1_000_000_000 // HBM_BYTES_PER_S)
    execs = _front(rng, plans, int(per_core * rng.uniform(1.05, 1.4)),
                   int(base_load * rng.uniform(0.3, 1.5)))
    preloads = [PreloadPlan(id=m, space_bytes=int(per_core * (1 + 0.5 * m)),
                            load_ns=int(base_load * (1 + 0.3 * m)))
                for m in range(min(3, plans))]
    warm_base = execs[0].time_ns * rng.uniform(0.05, 0.25)
    warmup = [Warmup(preload=q.id, exec=p.id,
                     time_ns=int(warm_base * (1 + 0.3 * p.id) * 0.5**q.id))
              for p in execs for q in preloads if q.space_bytes <= p.space_bytes]
    return {"hbm_bytes": hbm_bytes, "flops": int(hbm_bytes * rng.uniform(1, 64)),
            "exec_plans": execs, "preload_plans": preloads, "warmup": warmup}


def _light_plans(rng: np.random.Generator, plans: int) -> dict:
    execs = _front(rng, plans, int(rng.uniform(4_000, 40_000)), int(rng.uniform(800, 6_000)))
    preloads = [PreloadPlan(id=0, space_bytes=0, load_ns=0)]
    return {"hbm_bytes": 0, "flops": int(rng.uniform(1e6, 1e8)), "exec_plans": execs,
            "preload_plans": preloads,
            "warmup": [Warmup(preload=0, exec=p.id, time_ns=0) for p in execs]}


def _sram_for(ops: list[Op], tightness: float) -> int:
    def alone(op: Op) -> int:
        return min(p.space_bytes for _q, p, _t in op.pairs())

    def roomy(i: int) -> int:
        fastest = min(ops[i].exec_plans, key=lambda p: p.time_ns).space_bytes
        ahead = ops[i + 1:i + 1 + LOOKAHEAD]
        return fastest + sum(max(q.space_bytes for q in op.preload_plans) for op in ahead)

    low = max(alone(op) for op in ops)
    high = max(roomy(i) for i in range(len(ops)))
    return int(low + (1.0 - tightness) * max(0, high - low))


def synthetic_instance(ops: int = 48, plans: int = 4, seed: int = 0,
                       tightness: float = 0.5) -> Instance:
    if ops < 1:
        raise ValueError(f"--ops must be at least 1, got {ops}")
    if plans < 1:
        raise ValueError(f"--plans must be at least 1, got {plans}")
    if not 0.0 <= tightness <= 1.0:
        raise ValueError(f"--tightness must be within [0, 1], got {tightness}")
    rng = np.random.default_rng(seed)
    sram_hint = 624 * 1024
    slots = _slot_ops(rng, plans, sram_hint)
    width = len(LAYER_TEMPLATE)
    out: list[Op] = []
    for i in range(ops):
        layer, slot = divmod(i, width)
        name, kind, data, extra = LAYER_TEMPLATE[slot]
        inputs = [i - 1] if i > 0 else []
        if extra is not None and i - extra >= 0:
            inputs.insert(0, i - extra)
        drawn = slots[slot]
        out.append(Op(name=f"layer{layer}.{name}", kind=kind, layer=layer, inputs=tuple(inputs),
                      hbm_bytes=drawn["hbm_bytes"], flops=drawn["flops"],
                      exec_plans=tuple(drawn["exec_plans"]),
                      preload_plans=tuple(drawn["preload_plans"]),
                      warmup=tuple(drawn["warmup"]),
                      extra={"hbm_data": data} if data else {}))
    chip = Chip(name="synthetic", cores=CORES, sram_bytes=_sram_for(out, tightness),
                hbm_bytes_per_s=HBM_BYTES_PER_S, clock_hz=1_325_000_000,
                noc=Noc(topology="all_to_all", link_bytes_per_s=5_500_000_000))
    return Instance(name=f"synthetic-n{ops}-p{plans}-s{seed}-t{tightness:g}", chip=chip,
                    ops=tuple(out),
                    extra={"generator": {"kind": "synthetic", "ops": ops, "plans": plans,
                                         "seed": seed, "tightness": tightness}})
