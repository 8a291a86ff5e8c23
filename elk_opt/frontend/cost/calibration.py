"""A cost model against the Elk artifact's calibration table: one Llama2-13B decode layer.

The table (`data/elk-artifact-llama2-13b-b32-kv2048-layer.json`, measured from the Elk paper's
published implementation, batch 32, KV 2048) lists each of the layer's 48 ops with its plans.
Two comparisons, role by role (the table's `role` of each op):

- same operators: each table op becomes the `Work` this project's importer would give it
  (Dot: matmul; BatchMatMul: batched matmul; Sum: reduce; the rest: elementwise with as many
  activation operands as the op has inputs) and is searched on the same chip. Slices have no
  counterpart (the importer reads a slice in place: it is a view): they are one row, `slice`,
  with 0 on our side (the table's rope roles hold two slices each, counted there). The
  table sizes softmax, scale and mask with a sequence length of 1 (a quirk); here they have
  the attention's length, and the table's four softmax steps are one softmax op. HBM data is
  the operands' own bytes (the table's attention ops hold 1% more, its residual adds a few KB).
- our graph: the zoo's own Llama2-13B layer, whose ops are coarser or finer than the table's:
  q, k, v and gate, up are separate matmuls (the table fuses them), RMSNorm is one op (7 in
  the table), rotary embedding one op per tensor (6 in the table).

Least execute time of an op: its fastest execute plan; least load: its fastest preload plan.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Any

from elk_opt.frontend.artifact import TABLE
from elk_opt.frontend.cost import CostModel, get_cost_model
from elk_opt.frontend.onnx_import import Work
from elk_opt.frontend.partition import search
from elk_opt.problem import Chip

QUIRK_ROLES = ("softmax", "attn_scale_mask")  # sized with sequence length 1 in the table
VIEWS = "slice"  # the table's Slice ops, whatever their role: views here
# The zoo layer's ops by the role of their table counterparts (name fragments).
ZOO_ROLES = (("input_layernorm", "rmsnorm"), ("post_attention_layernorm", "rmsnorm"),
             ("q_proj", "qkv_proj"), ("k_proj", "qkv_proj"), ("v_proj", "qkv_proj"),
             ("q_rotary", "rope_q"), ("k_rotary", "rope_k"), ("scores", "attn_qk"),
             ("softmax", "softmax"), ("context", "attn_pv"), ("o_proj", "o_proj"),
             ("residual", "residual"), ("gate_proj", "gate_up_proj"),
             ("up_proj", "gate_up_proj"), ("mlp.act", "silu_mul"), ("mlp.gate", "silu_mul"),
             ("down_proj", "down_proj"))


@dataclass(frozen=True)
class RoleRow:
    role: str
    table_ops: int
    table_ns: int
    ops: int
    ours_ns: int

    @property
    def ratio(self) -> float:
        return self.ours_ns / self.table_ns if self.table_ns else float("nan")


@dataclass(frozen=True)
class Comparison:
    rows: tuple[RoleRow, ...]
    table_load_ns: int
    ours_load_ns: int

    def row(self, role: str) -> RoleRow:
        return next(r for r in self.rows if r.role == role)

    @property
    def table_exec_ns(self) -> int:
        return sum(r.table_ns for r in self.rows)

    @property
    def ours_exec_ns(self) -> int:
        return sum(r.ours_ns for r in self.rows)


def load_table(path: Path = TABLE) -> dict[str, Any]:
    with open(path) as f:
        return json.load(f)


def role_of(op: dict[str, Any]) -> str:
    art = op["artifact"]
    return VIEWS if art["type"] == "Slice" else art["role"]


def _least_exec(op: dict[str, Any]) -> int:
    return min(p["time_ns"] for p in op["exec_plans"])


def _least_load(op: dict[str, Any]) -> int:
    return min(q["load_ns"] for q in op["preload_plans"])


def table_works(table: dict[str, Any]) -> list[tuple[str, Work]]:
    """(role, Work) of the table's ops as this project's importer would see them."""
    seq = next(op["artifact"]["dims"][3] for op in table["ops"]
               if op["artifact"]["role"] == "attn_qk")
    out: list[tuple[str, Work]] = []
    for op in table["ops"]:
        art = op["artifact"]
        role, kind, dims = role_of(op), art["type"], art["dims"]
        if role == VIEWS:
            continue
        if role in QUIRK_ROLES:
            rows = prod(dims[:-1])
            if kind == "SoftmaxBasic":  # the table's 4 steps of one softmax: one op here
                if (role, "softmax") not in [(r, w.kind) for r, w in out]:
                    out.append((role, Work("softmax", (rows, seq), None, 0, 2)))
                continue
            out.append((role, Work("elementwise", (rows * seq, len(art["input_ids"])),
                                   None, 0, 2)))
        elif kind == "Dot":
            m, n, k = dims
            out.append((role, Work("matmul", (1, m, k, n), "B", k * n * 2, 2)))
        elif kind == "BatchMatMul":
            b, h, m, n, k = dims
            out.append((role, Work("matmul", (b * h, m, k, n), "B", b * h * k * n * 2, 2)))
        elif kind == "Sum":
            out.append((role, Work("reduce", (prod(dims[:-1]), dims[-1]), None, 0, 2)))
        else:
            out.append((role, Work("elementwise", (prod(dims), len(art["input_ids"])), None, 0,
                                   2)))
    return out


def _table_sums(table: dict[str, Any]) -> tuple[dict[str, int], dict[str, int], int]:
    times: dict[str, int] = defaultdict(int)
    counts: dict[str, int] = defaultdict(int)
    for op in table["ops"]:
        role = role_of(op)
        times[role] += _least_exec(op)
        counts[role] += 1
    return times, counts, sum(_least_load(op) for op in table["ops"])


def same_operators(cost: CostModel, chip: Chip, table: dict[str, Any] | None = None
                   ) -> Comparison:
    table = table or load_table()
    times, counts, table_load = _table_sums(table)
    ours: dict[str, int] = defaultdict(int)
    ours_ops: dict[str, int] = defaultdict(int)
    load = 0
    cache: dict[Work, tuple[int, int]] = {}
    for role, work in table_works(table):
        if work not in cache:
            plans = search(work, chip.cores, chip.sram_bytes, cost)
            cache[work] = (min(p.time_ns for p in plans.exec_plans),
                           min(q.load_ns for q in plans.preload_plans))
        run, fetch = cache[work]
        ours[role] += run
        ours_ops[role] += 1
        load += fetch
    rows = tuple(RoleRow(role, counts[role], times[role], ours_ops[role], ours[role])
                 for role in times)
    return Comparison(rows, table_load, load)


def our_graph(spec: str, chip: Chip, table: dict[str, Any] | None = None) -> Comparison:
    from elk_opt.frontend.zoo import model_instance

    table = table or load_table()
    times, counts, table_load = _table_sums(table)
    inst = model_instance("llama2-13b", chip, batch=32, kv_len=2048, layers=1, cost_model=spec)
    ours: dict[str, int] = defaultdict(int)
    ours_ops: dict[str, int] = defaultdict(int)
    load = 0
    for op in inst.ops:
        if op.layer != 0:
            continue
        role = next(r for fragment, r in ZOO_ROLES if fragment in op.name)
        ours[role] += min(p.time_ns for p in op.exec_plans)
        ours_ops[role] += 1
        load += min(q.load_ns for q in op.preload_plans)
    rows = tuple(RoleRow(role, counts[role], times[role], ours_ops[role], ours[role])
                 for role in times)
    return Comparison(rows, table_load, load)


def compare(spec: str, chip: Chip) -> tuple[Comparison, Comparison]:
    """(same operators, our graph) for the cost model `spec` on `chip`."""
    return same_operators(get_cost_model(spec, chip), chip), our_graph(spec, chip)


def markdown(same: Comparison, graph: Comparison) -> str:
    lines = ["| role | table ops | table ns | same ops: ours ns | ratio | our graph: ops | ns "
             "| ratio |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in same.rows:
        g = graph.row(r.role)
        lines.append(f"| {r.role} | {r.table_ops} | {r.table_ns:,} | {r.ours_ns:,} | "
                     f"{r.ratio:.2f} | {g.ops} | {g.ours_ns:,} | {g.ratio:.2f} |")
    lines.append(f"| **execute, layer** | 48 | {same.table_exec_ns:,} | {same.ours_exec_ns:,} | "
                 f"{same.ours_exec_ns / same.table_exec_ns:.3f} | "
                 f"{sum(r.ops for r in graph.rows)} | {graph.ours_exec_ns:,} | "
                 f"{graph.ours_exec_ns / graph.table_exec_ns:.3f} |")
    lines.append(f"| **load, layer** | 48 | {same.table_load_ns:,} | {same.ours_load_ns:,} | "
                 f"{same.ours_load_ns / same.table_load_ns:.3f} | | {graph.ours_load_ns:,} | "
                 f"{graph.ours_load_ns / graph.table_load_ns:.3f} |")
    return "\n".join(lines)
