"""ONNX graph + chip + cost model -> `elk-instance/1`.

Each distinct `Work` (kind, shape, HBM operand, dtype) is searched once, so identical decoder
layers share identical plans. Every op records its HBM data kind ("hbm_data": "weights" | "kv")
and its iteration space ("work") so `elk-opt plans` can redraw its front; the instance records
the source, the workload and the cost model, with the NoC occupancy reading it was built with
(`noc_occupancy`: the chip's own unless the caller overrides it; docs/models.md).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import onnx

from elk_opt.errors import UsageError
from elk_opt.frontend.chips import NocOccupancy, resolve_noc_occupancy
from elk_opt.frontend.cost import DEFAULT_COST_MODEL, CostModel, get_cost_model
from elk_opt.frontend.onnx_file import Bindings
from elk_opt.frontend.onnx_import import GraphOp, Work, import_graph
from elk_opt.frontend.partition import (
    DEFAULT_SEARCH,
    NoPlanFits,
    OpPlans,
    SearchOptions,
    footprint,
    search,
)
from elk_opt.problem import Chip, Instance, Op
from elk_opt.progress import report_progress

MODES = ("decode", "prefill", "forward")
SPLIT_FRACTION = 4  # ops whose HBM data needs more than 1/4 of each core's SRAM are split
MAX_CHUNKS = 4096  # more chunks of one op is a mistake (zoo models need at most ~600)


def work_to_dict(work: Work) -> dict[str, Any]:
    return {"kind": work.kind, "dims": list(work.dims), "hbm": work.hbm,
            "hbm_bytes": work.hbm_bytes, "dtype_bytes": work.dtype_bytes}


def work_from_dict(raw: dict[str, Any]) -> Work:
    return Work(raw["kind"], tuple(raw["dims"]), raw["hbm"], raw["hbm_bytes"],
                raw["dtype_bytes"])


def instance_from_graph(model: onnx.ModelProto, chip: Chip, *, name: str, source: str,
                        batch: int, kv_len: int, mode: str, cost_model: str = DEFAULT_COST_MODEL,
                        options: SearchOptions = DEFAULT_SEARCH,
                        meta: dict[str, Any] | None = None, progress: bool = False,
                        noc_occupancy: str | None = None) -> Instance:
    """`noc_occupancy`: "bytes" or "bsp"; None takes the cost model's own reading (the
    `elk-paper` preset's is bsp) or else the chip's default."""
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if batch < 1 or kv_len < 1:
        raise UsageError(f"batch and kv-len must be positive, got {batch} and {kv_len}")
    seq = 1 if mode == "decode" else kv_len
    graph_ops = import_graph(model, source, Bindings(batch=batch, kv_len=kv_len, seq=seq))
    if not graph_ops:
        raise UsageError(f"{source}: the graph has no compute ops")
    graph_ops = split_large_ops(graph_ops, chip)
    cost = get_cost_model(cost_model, chip)
    occupancy = resolve_noc_occupancy(chip, noc_occupancy if noc_occupancy is not None
                                      else cost.noc_occupancy)
    cache: dict[Work, OpPlans] = {}
    ops = []
    with report_progress(len(graph_ops), "plan search", unit="op",
                         enabled=progress) as shown:
        for gop in graph_ops:
            plans = cache.get(gop.work)
            if plans is None:
                plans = _search(gop, chip, cost, options, occupancy, source)
                cache[gop.work] = plans
            ops.append(_op(gop, plans))
            shown.advance(status=f"{len(cache)} distinct ops searched")
    extra = {"source": {"kind": "onnx", "path": source, **(meta or {}),
                        "batch": batch, "kv_len": kv_len, "mode": mode},
             "cost_model": {**cost.metadata(), "spec": cost_model,
                            "noc_occupancy": occupancy},
             "partition_search": {"max_exec": options.max_exec,
                                  "max_preload": options.max_preload,
                                  "max_slowdown": options.max_slowdown,
                                  "distinct_ops": len(cache)}}
    return Instance(name=name, chip=chip, ops=tuple(ops), extra=extra)


def split_large_ops(graph_ops: list[GraphOp], chip: Chip) -> list[GraphOp]:
    """Split ops whose data would fill more than 1/SPLIT_FRACTION of all SRAM into chunks.

    The measure is the larger of the op's HBM data and its whole footprint (operands and
    result). A matmul is cut along G when batched, else along the dimension that shrinks its
    HBM operand (N of weights, M of an HBM left operand) or, without HBM data, its largest
    operand; other ops along their rows or elements. Chunks read the same inputs; consumers
    wait for every chunk. HBM bytes and flops are divided exactly.
    """
    limit = chip.sram_bytes * chip.cores // SPLIT_FRACTION
    out: list[GraphOp] = []
    index: dict[int, list[int]] = {}
    for k, gop in enumerate(graph_ops):
        inputs = tuple(sorted({j for i in gop.inputs for j in index[i]}))
        size = max(gop.work.hbm_bytes, footprint(gop.work))
        chunks = -(-size // limit)
        if chunks > MAX_CHUNKS:  # say so now, not after making billions of chunks
            raise UsageError(f"op {gop.name!r} ({gop.kind}, {size:,} B of data and operands) "
                             f"would need {chunks:,} chunks of at most {limit:,} B (1/"
                             f"{SPLIT_FRACTION} of all SRAM) to fit {chip.name}, more than "
                             f"{MAX_CHUNKS:,}; lower --batch or --kv-len")
        axis = _split_axis(gop.work)
        if chunks <= 1:
            index[k] = [len(out)]
            out.append(replace(gop, inputs=inputs))
            continue
        dim = gop.work.dims[axis]
        chunks = min(chunks, dim)
        index[k] = []
        for c in range(chunks):
            lo, hi = dim * c // chunks, dim * (c + 1) // chunks
            dims = list(gop.work.dims)
            dims[axis] = hi - lo
            hbm = gop.work.hbm_bytes * hi // dim - gop.work.hbm_bytes * lo // dim
            work = replace(gop.work, dims=tuple(dims), hbm_bytes=hbm)
            flops = gop.flops * hi // dim - gop.flops * lo // dim
            index[k].append(len(out))
            out.append(replace(gop, name=f"{gop.name}#{c}", inputs=inputs, work=work,
                               flops=flops))
    return out


def _split_axis(work: Work) -> int:
    if work.kind != "matmul":
        return 0
    g, m, k, n = work.dims
    if g > 1:
        return 0
    if work.hbm in ("A", "B"):
        return 1 if work.hbm == "A" else 3
    return 1 if m * k + m * n >= k * n else 3


def _search(gop: GraphOp, chip: Chip, cost: CostModel, options: SearchOptions,
            occupancy: NocOccupancy, source: str) -> OpPlans:
    try:
        return search(gop.work, chip.cores, chip.sram_bytes, cost, options, occupancy)
    except NoPlanFits as e:
        need = -(-gop.work.hbm_bytes // chip.cores)
        raise UsageError(f"{source}: op {gop.name!r} ({gop.kind}, {gop.work.hbm_bytes:,} B of "
                         f"HBM data, at least {need:,} B per core) does not fit {chip.name}: "
                         f"{e}; lower --batch or --kv-len") from None


def _op(gop: GraphOp, plans: OpPlans) -> Op:
    extra: dict[str, Any] = {"onnx_type": gop.onnx_type, "work": work_to_dict(gop.work),
                             "plan_details": [c.describe() for c in plans.details],
                             "preload_layouts": [list(x) for x in plans.layouts]}
    if gop.hbm_data:
        extra["hbm_data"] = gop.hbm_data
    return Op(name=gop.name, kind=gop.kind, layer=gop.layer, inputs=gop.inputs,
              hbm_bytes=gop.work.hbm_bytes, flops=gop.flops, exec_plans=plans.exec_plans,
              preload_plans=plans.preload_plans, warmup=plans.warmup, extra=extra)
