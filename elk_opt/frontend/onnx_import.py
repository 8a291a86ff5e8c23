"""ONNX graph -> the operator DAG the partition search and the scheduler see.

Only shapes matter: `onnx_file` reads the model without weight data and fixes its shapes, so a
70B model imports without its weights. Rules (README "Cost model and import"):

- HBM-resident data: initializers with at least `MIN_WEIGHT_ELEMS` elements, and graph inputs
  whose name says weight or KV cache (`KV_PATTERN`, `WEIGHT_PATTERN`). Smaller initializers and
  `Constant` outputs are immediates; other graph inputs are activations fed by the host.
- Host-side shape arithmetic (Shape, Size, and every node whose inputs are all immediates) is
  folded away, as are pure layout ops (`VIEW_OPS`): a view passes its input through. Concat,
  Slice and Split are views too: the consumer reads the pieces in place, so a KV cache
  concatenated with the new token stays HBM data of its consumer.
- A MatMul/Gemm followed by an Add of a weight vector (a bias) is one op.
- Every other known node is one op; an unknown node type is an InputError naming it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from math import prod
from typing import TYPE_CHECKING

from elk_opt.errors import InputError
from elk_opt.frontend.onnx_file import Bindings, bind_and_infer

if TYPE_CHECKING:  # onnx takes seconds to import: only the functions that read a model load it
    import onnx

MIN_WEIGHT_ELEMS = 64
KV_PATTERN = re.compile(r"(^|[._/])(past|present)([._/]|$)|kv[._]?cache|key_cache|value_cache",
                        re.IGNORECASE)
WEIGHT_PATTERN = re.compile(r"weight|bias|embed|gamma|beta|lm_head|(^|[._/])(w|scale)$",
                            re.IGNORECASE)
LAYER_PATTERN = re.compile(r"(?:^|[./_])(?:layers?|blocks?|h)[./_](\d+)(?:[./_]|$)")

VIEW_OPS = {"Reshape", "Transpose", "Squeeze", "Unsqueeze", "Cast", "CastLike", "Identity",
            "Flatten", "Expand", "Dropout", "Concat", "Slice", "Split"}
HOST_OPS = {"Shape", "Size", "Constant", "ConstantOfShape", "Range", "EyeLike"}
ELEMENTWISE_OPS = {
    "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Reciprocal", "Neg", "Abs", "Exp", "Log",
    "Tanh", "Sigmoid", "Relu", "LeakyRelu", "Elu", "Selu", "Gelu", "FastGelu", "Erf", "Swish",
    "HardSigmoid", "HardSwish", "Softplus", "Mish", "Sin", "Cos", "Where", "Equal", "Less",
    "LessOrEqual", "Greater", "GreaterOrEqual", "And", "Or", "Not", "Xor", "Max", "Min", "Clip",
    "Sign", "Floor", "Ceil", "Round", "IsNaN", "IsInf", "Mod", "BitShift", "Trilu", "Pad",
    "Tile", "RotaryEmbedding", "QuickGelu", "BiasGelu", "Mean", "Sum",
}
NORM_OPS = {"LayerNormalization", "RMSNormalization", "SimplifiedLayerNormalization",
            "SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "GroupNormalization",
            "InstanceNormalization", "BatchNormalization"}
SOFTMAX_OPS = {"Softmax", "LogSoftmax"}
REDUCE_OPS = {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2",
              "ReduceSumSquare", "ReduceLogSumExp", "ArgMax", "ArgMin", "TopK", "CumSum"}
MATMUL_OPS = {"MatMul", "Gemm", "Conv"}
GATHER_OPS = {"Gather", "GatherElements", "GatherND"}
KNOWN_OPS = VIEW_OPS | HOST_OPS | ELEMENTWISE_OPS | NORM_OPS | SOFTMAX_OPS | REDUCE_OPS \
    | MATMUL_OPS | GATHER_OPS



@cache
def _bytes_per_element() -> dict[int, int]:
    """Bytes per element of each supported ONNX element type."""
    from onnx import TensorProto as T

    return {T.FLOAT: 4, T.FLOAT16: 2, T.BFLOAT16: 2, T.DOUBLE: 8, T.INT64: 8, T.INT32: 4,
            T.INT16: 2, T.INT8: 1, T.UINT8: 1, T.UINT16: 2, T.UINT32: 4, T.UINT64: 8, T.BOOL: 1,
            T.FLOAT8E4M3FN: 1, T.FLOAT8E5M2: 1, T.FLOAT8E4M3FNUZ: 1, T.FLOAT8E5M2FNUZ: 1}


@dataclass(frozen=True)
class Work:
    """An op's iteration space: all the partition search needs, hashable so equal ops share plans.

    kind/dims: "matmul" (G, M, K, N): G independent [M,K]x[K,N] products; "elementwise"
    (elements, activation inputs); "norm" / "softmax" / "reduce" (rows, cols) reducing cols;
    "gather" (rows, cols). `hbm` names the HBM-resident operand: "A" or "B" of a matmul,
    "table" of a gather, "param" (a bias or norm scale) otherwise, None without HBM data.
    """

    kind: str
    dims: tuple[int, ...]
    hbm: str | None
    hbm_bytes: int
    dtype_bytes: int


@dataclass(frozen=True)
class GraphOp:
    name: str
    kind: str  # the instance's op kind: matmul, batched_matmul, elementwise, norm, ...
    layer: int | None
    inputs: tuple[int, ...]
    work: Work
    flops: int
    hbm_data: str | None  # "weights" | "kv" | None
    onnx_type: str


@dataclass(frozen=True)
class _Val:
    """What a tensor is made of: device ops that produce it, HBM sources it views, or neither."""

    producers: frozenset[int] = frozenset()
    hbm: Mapping[str, tuple[str, int]] = field(default_factory=dict)  # source -> (kind, bytes)
    host: bool = False


def import_graph(model: onnx.ModelProto, source: str, bindings: Bindings) -> list[GraphOp]:
    """The ops of `model` in a topological order, with shapes from onnx shape inference."""
    for node in model.graph.node:
        if node.op_type not in KNOWN_OPS:
            raise InputError(f"{source}: node {node.name or '(unnamed)'!r}: op type "
                             f"{node.op_type!r} (domain {node.domain or 'ai.onnx'!r}) is not "
                             "supported by the importer")
    model = bind_and_infer(model, source, bindings)
    return _Importer(model, source).run()


def _elem_bytes(elem_type: int, where: str) -> int:
    if elem_type not in _bytes_per_element():
        from onnx import TensorProto

        name = TensorProto.DataType.Name(elem_type) if elem_type else "undefined"
        raise InputError(f"{where}: unsupported element type {name}")
    return _bytes_per_element()[elem_type]


class _Importer:
    def __init__(self, model: onnx.ModelProto, source: str):
        self.graph = model.graph
        self.source = source
        self.shapes: dict[str, tuple[int, ...] | None] = {}
        self.types: dict[str, int] = {}
        self.vals: dict[str, _Val] = {}
        self.ops: list[GraphOp] = []
        self.op_of_output: dict[int, str] = {}
        self.consumers: dict[str, int] = {}
        self.fused_bias: set[int] = set()

    # ---------------------------------------------------------------- tensors
    def _record(self, vi: onnx.ValueInfoProto) -> None:
        t = vi.type.tensor_type
        self.types[vi.name] = t.elem_type
        if t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim):
            self.shapes[vi.name] = tuple(d.dim_value for d in t.shape.dim)
        else:
            self.shapes.setdefault(vi.name, None)

    def shape(self, name: str, node: onnx.NodeProto | None) -> tuple[int, ...]:
        s = self.shapes.get(name)
        where = f"node {node.name or '(unnamed)'!r} ({node.op_type})" if node else "input"
        if s is not None and any(d < 1 for d in s):
            raise InputError(f"{self.source}: {where}: tensor {name!r} has shape {list(s)}; "
                             "every dimension must be at least 1")
        if s is None:
            if node is not None and node.domain not in ("", "ai.onnx"):
                raise InputError(f"{self.source}: {where}: onnx has no shape inference for "
                                 f"domain {node.domain!r}, so the shape of {name!r} is "
                                 "unknown; export it with the standard ONNX op or with its "
                                 "shape in value_info")
            raise InputError(f"{self.source}: {where}: shape of {name!r} is unknown after "
                             "shape inference; export with fixed shapes")
        return s

    def nbytes(self, name: str, node: onnx.NodeProto | None) -> int:
        where = f"{self.source}: tensor {name!r}"
        return prod(self.shape(name, node)) * _elem_bytes(self.types.get(name, 0), where)

    def _sources(self) -> None:
        for t in self.graph.initializer:
            self.types[t.name] = t.data_type
            self.shapes[t.name] = tuple(t.dims)
            size = prod(t.dims)
            if size < MIN_WEIGHT_ELEMS:
                self.vals[t.name] = _Val(host=True)
            else:
                kind = "kv" if KV_PATTERN.search(t.name) else "weights"
                nbytes = size * _elem_bytes(t.data_type, f"{self.source}: initializer {t.name!r}")
                self.vals[t.name] = _Val(hbm={t.name: (kind, nbytes)})
        for vi in [*self.graph.input, *self.graph.value_info, *self.graph.output]:
            self._record(vi)
        for inp in self.graph.input:
            if inp.name in self.vals:
                continue
            kind = ("kv" if KV_PATTERN.search(inp.name)
                    else "weights" if WEIGHT_PATTERN.search(inp.name) else None)
            if kind is None:
                self.vals[inp.name] = _Val()
            else:
                self.vals[inp.name] = _Val(hbm={inp.name: (kind, self.nbytes(inp.name, None))})

    # ---------------------------------------------------------------- nodes
    def run(self) -> list[GraphOp]:
        self._sources()
        for node in self.graph.node:
            for name in node.input:
                self.consumers[name] = self.consumers.get(name, 0) + 1
        for out in self.graph.output:
            self.consumers[out.name] = self.consumers.get(out.name, 0) + 1
        for node in _topological(self.graph, self.vals, self.source):
            self._node(node)
        return self.ops

    def _inputs(self, node: onnx.NodeProto) -> list[_Val]:
        return [self.vals[name] if name else _Val(host=True) for name in node.input]

    def _node(self, node: onnx.NodeProto) -> None:
        op_type = node.op_type
        ins = self._inputs(node)
        if op_type in HOST_OPS or all(v.host for v in ins):
            self._set(node, _Val(host=True))
            return
        if op_type in VIEW_OPS:
            parts = ins if op_type == "Concat" else ins[:1]
            self._set(node, self._view(node, parts))
            return
        if op_type == "Add" and self._fuse_bias(node, ins):
            return
        index = len(self.ops)
        self.ops.append(self._make_op(node, ins))
        self._set(node, _Val(producers=frozenset({index})))

    def _set(self, node: onnx.NodeProto, val: _Val) -> None:
        for out in node.output:
            if out:
                self.vals[out] = val

    def _view(self, node: onnx.NodeProto, parts: list[_Val]) -> _Val:
        """A view of its inputs; a slice of HBM data reads only the viewed bytes."""
        producers = frozenset().union(*(p.producers for p in parts))
        hbm: dict[str, tuple[str, int]] = {}
        for p in parts:
            hbm.update(p.hbm)
        if hbm and node.op_type in {"Slice", "Split"}:
            out_elems = prod(self.shape(node.output[0], node)) * len([o for o in node.output if o])
            in_elems = prod(self.shape(node.input[0], node))
            hbm = {k: (kind, -(-b * out_elems // in_elems)) for k, (kind, b) in hbm.items()}
        return _Val(producers=producers, hbm=hbm, host=not producers and not hbm)

    def _fuse_bias(self, node: onnx.NodeProto, ins: list[_Val]) -> bool:
        """MatMul + Add(bias weights) -> one op, when the matmul's result has no other use."""
        if len(ins) != 2:
            return False
        for act, bias, act_name in ((ins[0], ins[1], node.input[0]),
                                    (ins[1], ins[0], node.input[1])):
            bias_name = node.input[1] if act_name == node.input[0] else node.input[0]
            bias_shape = self.shapes.get(bias_name)
            out_shape = self.shapes.get(node.output[0])
            if (len(act.producers) == 1 and not act.hbm and bias.hbm and not bias.producers
                    and all(kind == "weights" for kind, _ in bias.hbm.values())
                    and bias_shape and out_shape and prod(bias_shape) == out_shape[-1]
                    and self.consumers.get(act_name, 0) == 1):
                j = next(iter(act.producers))
                op = self.ops[j]
                if op.work.kind != "matmul" or j in self.fused_bias:
                    continue
                extra = sum(b for _, b in bias.hbm.values())
                work = Work(op.work.kind, op.work.dims, op.work.hbm or "param",
                            op.work.hbm_bytes + extra, op.work.dtype_bytes)
                self.ops[j] = GraphOp(op.name, op.kind, op.layer, op.inputs, work,
                                      op.flops + prod(self.shape(node.output[0], node)),
                                      op.hbm_data or "weights", op.onnx_type)
                self.fused_bias.add(j)
                self._set(node, act)
                return True
        return False

    # ---------------------------------------------------------------- ops
    def _make_op(self, node: onnx.NodeProto, ins: list[_Val]) -> GraphOp:
        out = node.output[0]
        out_shape = self.shape(out, node)
        dtype_bytes = _elem_bytes(self.types.get(out, 0),
                                  f"{self.source}: node {node.name!r} output {out!r}")
        hbm: dict[str, tuple[str, int]] = {}
        for v in ins:
            hbm.update(v.hbm)
        hbm_bytes = sum(b for _, b in hbm.values())
        kinds = {k for k, _ in hbm.values()}
        hbm_data = "kv" if "kv" in kinds else "weights" if kinds else None
        producers = sorted(frozenset().union(*(v.producers for v in ins)))
        op_type = node.op_type
        n_out = prod(out_shape)
        if op_type in MATMUL_OPS:
            kind, work, flops = self._matmul(node, ins, out_shape, hbm_bytes, dtype_bytes)
        elif op_type in GATHER_OPS:
            data = ins[0]
            if data.hbm and not data.producers:
                # only the gathered rows are read from HBM
                table = self.shape(node.input[0], node)
                row = prod(table[1:]) if op_type == "Gather" else 1
                rows = max(1, n_out // max(row, 1))
                src_bytes = sum(b for _, b in data.hbm.values())
                hbm_bytes = min(src_bytes, -(-src_bytes * rows // table[0])) + sum(
                    b for v in ins[1:] for _, b in v.hbm.values())
                kind, flops = "gather", 0
                work = Work("gather", (rows, row), "table", hbm_bytes, dtype_bytes)
            else:
                kind, flops = "elementwise", n_out
                work = Work("elementwise", (n_out, _acts(ins)),
                            "param" if hbm_bytes else None, hbm_bytes, dtype_bytes)
        elif op_type in NORM_OPS | SOFTMAX_OPS:
            axis = _attr(node, "axis", -1 if op_type not in {"GroupNormalization",
                                                             "InstanceNormalization",
                                                             "BatchNormalization"} else 1)
            in_shape = self.shape(node.input[0], node)
            axis = axis % len(in_shape) if in_shape else 0
            if op_type == "Softmax" or op_type == "LogSoftmax":
                cols = in_shape[axis] if in_shape else 1
            else:
                cols = prod(in_shape[axis:])
            rows = max(1, prod(in_shape) // max(cols, 1))
            kind = "softmax" if op_type in SOFTMAX_OPS else "norm"
            flops = 5 * rows * cols
            work = Work(kind, (rows, cols), "param" if hbm_bytes else None, hbm_bytes,
                        dtype_bytes)
        elif op_type in REDUCE_OPS:
            in_elems = prod(self.shape(node.input[0], node))
            rows = max(1, n_out)
            cols = max(1, in_elems // rows)
            kind, flops = "reduce", in_elems
            work = Work("reduce", (rows, cols), "param" if hbm_bytes else None, hbm_bytes,
                        dtype_bytes)
        else:
            kind, flops = "elementwise", n_out
            work = Work("elementwise", (n_out, _acts(ins)), "param" if hbm_bytes else None,
                        hbm_bytes, dtype_bytes)
        name = node.name or f"{op_type}_{len(self.ops)}"
        return GraphOp(name=name, kind=kind, layer=self._layer(node, hbm),
                       inputs=tuple(producers), work=work, flops=int(flops),
                       hbm_data=hbm_data, onnx_type=op_type)

    def _matmul(self, node: onnx.NodeProto, ins: list[_Val], out_shape: tuple[int, ...],
                hbm_bytes: int, dtype_bytes: int) -> tuple[str, Work, int]:
        op_type = node.op_type
        if op_type == "Conv":
            if _attr(node, "group", 1) != 1:
                raise InputError(f"{self.source}: node {node.name!r} (Conv): grouped "
                                 "convolution is not supported by the importer")
            w = self.shape(node.input[1], node)
            g, m, k, n = 1, out_shape[0] * prod(out_shape[2:]), prod(w[1:]), w[0]
            a_val, b_val = ins[0], ins[1]
        elif op_type == "Gemm":
            a = self.shape(node.input[0], node)
            b = self.shape(node.input[1], node)
            m = a[1] if _attr(node, "transA", 0) else a[0]
            k = a[0] if _attr(node, "transA", 0) else a[1]
            n = b[0] if _attr(node, "transB", 0) else b[1]
            g, a_val, b_val = 1, ins[0], ins[1]
        else:
            a = self.shape(node.input[0], node)
            b = self.shape(node.input[1], node)
            a2 = a if len(a) >= 2 else (1, *a)
            b2 = b if len(b) >= 2 else (*b, 1)
            m, k, n = a2[-2], a2[-1], b2[-1]
            g = prod(out_shape) // max(m * n, 1) if len(a) >= 2 and len(b) >= 2 else 1
            a_val, b_val = ins[0], ins[1]
            if prod(b2[:-2]) == 1 and g > 1:  # a weight-like B shared by every batch: fold
                m, g = m * g, 1
        hbm_op = None
        if hbm_bytes:
            a_bytes = sum(x for _, x in a_val.hbm.values())
            b_bytes = sum(x for _, x in b_val.hbm.values())
            hbm_op = "A" if a_bytes > b_bytes else "B" if b_bytes else "param"
        kind = "batched_matmul" if g > 1 else "matmul"
        return kind, Work("matmul", (g, m, k, n), hbm_op, hbm_bytes, dtype_bytes), 2 * g * m * k * n

    def _layer(self, node: onnx.NodeProto, hbm: Mapping[str, tuple[str, int]]) -> int | None:
        for text in (node.name, *node.output, *hbm):
            m = LAYER_PATTERN.search(text)
            if m:
                return int(m.group(1))
        return None


def _acts(ins: list[_Val]) -> int:
    return sum(1 for v in ins if v.producers or (not v.host and not v.hbm))


def _attr(node: onnx.NodeProto, name: str, default: int) -> int:
    import onnx

    for a in node.attribute:
        if a.name == name:
            return int(onnx.helper.get_attribute_value(a))
    return default


def _topological(graph: onnx.GraphProto, known: Mapping[str, _Val],
                 source: str) -> list[onnx.NodeProto]:
    """The nodes in a topological order (the file's order when it already is one)."""
    available = set(known) | {""}
    pending = list(graph.node)
    order: list[onnx.NodeProto] = []
    while pending:
        rest = []
        for node in pending:
            if all(name in available for name in node.input):
                order.append(node)
                available.update(node.output)
            else:
                rest.append(node)
        if len(rest) == len(pending):
            node = rest[0]
            missing = [n for n in node.input if n not in available]
            raise InputError(f"{source}: node {node.name or node.op_type!r}: input "
                             f"{missing[0]!r} is produced by no node, initializer or input "
                             "(or the graph has a cycle)")
        pending = rest
    return order
