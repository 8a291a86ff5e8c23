"""Reading an ONNX file and fixing its symbolic shapes, before any op is imported.

A model is read as binary protobuf only, shapes and no weight data, and anything else is named
for what it is. Symbolic input dimensions get the batch, sequence and past lengths by name
(`Bindings`), then onnx's strict shape inference runs once: an inconsistent graph is one line
naming the node and its input shapes (`_inference_error`), never onnx's own dump.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from elk_opt.errors import InputError
from elk_opt.files import read_bytes

if TYPE_CHECKING:  # onnx takes seconds to import: only the functions that read a model load it
    import onnx

MAX_ONNX_BYTES = 2**31  # protobuf's own limit on one message; /dev/zero stops here


@dataclass(frozen=True)
class Bindings:
    """Values for symbolic input dimensions, matched by name."""

    batch: int
    kv_len: int
    seq: int

    def value(self, dim_name: str) -> int | None:
        name = dim_name.lower()
        if "batch" in name:
            return self.batch
        if "total" in name:
            return self.kv_len + self.seq
        if "past" in name or "kv" in name or "cache" in name:
            return self.kv_len
        if "seq" in name or "len" in name or "token" in name:
            return self.seq
        return None


def load_model(path: str | Path) -> onnx.ModelProto:
    """A binary ONNX model, shapes only. Anything else (JSON, text, an empty file) is an
    InputError saying what the file is, never onnx's parser dump (`onnx.load` would parse a
    .json file as ONNX's JSON form and list every ModelProto field)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as e:  # a directory, no permission, a name too long
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    if head.lstrip()[:1] in (b"{", b"["):
        found = re.search(rb'"format"\s*:\s*"([^"]{1,40})"', head)
        what = f"an {found.group(1).decode(errors='replace')} file" if found else "JSON"
        raise InputError(f"{path}: not an ONNX file: it is {what} (give a zoo model name, a "
                         "binary .onnx file or 'synthetic')")
    try:
        data = read_bytes(path, MAX_ONNX_BYTES)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    import onnx

    try:
        model = onnx.load_model_from_string(data, format="protobuf")
    except Exception:  # onnx raises DecodeError and friends for a bad file
        raise InputError(f"{path}: not an ONNX file (not a binary ONNX model)") from None
    if not model.HasField("graph") or not model.ir_version:
        raise InputError(f"{path}: not an ONNX file (no graph or IR version: empty or not "
                         "an ONNX model)")
    return model


def bind_and_infer(model: onnx.ModelProto, source: str, b: Bindings) -> onnx.ModelProto:
    """A copy of `model` with its symbolic input dimensions bound and its shapes inferred
    strictly; `source` names the model in errors."""
    import onnx

    model_copy = onnx.ModelProto()
    model_copy.CopyFrom(model)
    inits = {t.name for t in model_copy.graph.initializer}
    for inp in model_copy.graph.input:
        if inp.name in inits or not inp.type.HasField("tensor_type"):
            continue
        for k, dim in enumerate(inp.type.tensor_type.shape.dim):
            if dim.HasField("dim_value"):
                if dim.dim_value < 1:
                    raise InputError(f"{source}: input {inp.name!r}: dimension {k} is "
                                     f"{dim.dim_value}; every dimension must be at least 1")
                continue
            value = b.value(dim.dim_param) if dim.dim_param else None
            if value is None:
                raise InputError(f"{source}: input {inp.name!r}: dimension {k} "
                                 f"{dim.dim_param or '(unnamed)'!r} is symbolic and not a batch, "
                                 "sequence or past-length name; export with fixed shapes")
            dim.dim_value = value
    try:
        # strict: inconsistent shapes (a MatMul of [4,64] by [32,16]) are errors, not unknowns
        return onnx.shape_inference.infer_shapes(model_copy, strict_mode=True, data_prop=True)
    except Exception as e:
        raise InputError(f"{source}: {_inference_error(model_copy, e)}") from None


def _inference_error(model: onnx.ModelProto, error: Exception) -> str:
    """onnx's shape-inference error as one line: the node, what is wrong, its input shapes."""
    import onnx

    text = " ".join(str(error).split())
    found = re.search(r"\(op_type:(\w+), node name: ([^)]*)\): (?:\[\w+\] )?(.*)", text)
    if found is None:
        return f"shape inference failed: {text}"
    op_type, name, why = found.groups()
    why = why.split(" (op_type:")[0].rstrip(". ")
    node = next((n for n in model.graph.node if n.name == name), None)
    shapes = ""
    try:  # the shapes for the message; an error even lenient inference raises has none
        known = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:
        node = None
    if node is not None:
        dims = {vi.name: [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
                          for d in vi.type.tensor_type.shape.dim]
                for vi in [*known.graph.input, *known.graph.value_info]}
        dims.update({t.name: list(t.dims) for t in known.graph.initializer})
        shapes = "; inputs " + ", ".join(f"{i!r} {dims.get(i, '?')}" for i in node.input if i)
    return f"node {name!r} ({op_type}): {why}{shapes}"
