"""The Elk implementation's own Llama2-13B decoder: its measured layer, repeated.

The calibration data (docs/calibration.md) holds one decode layer (batch 32, KV 2048, 48 ops)
with the partition plans the Elk paper's published implementation searched for it, on its
evaluation chip. The model's 40 layers are identical, so the whole decoder is that layer 40
times: the same plans, each layer's ops after the last one's. This is how its schedulers saw the
model, so a bound or a certificate on it speaks about the paper's own cost data at full depth
rather than about a cost model fitted to it (`elk-paper`). The embedding and the head are not in
the data and are left out.

Dependencies: the layer's input is the previous layer's output (its last op, the residual
add). The data names the ops that read it (`artifact.external_input_ids` holding the layer
input's id); in the first layer nothing here makes it (the embedding is not in the data), in
the others they get the previous layer's last op as an input too. Their HBM bytes stay as
measured: the implementation counts every input not made by the op just before as HBM data.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from elk_opt.errors import UsageError
from elk_opt.io import load_instance
from elk_opt.problem import Instance, Op

NAME = "elk-artifact"  # the source name of `elk-opt instance`
LAYERS = 40  # Llama2-13B's decoder layers
TABLE = Path(__file__).parent / "cost" / "data" / "elk-artifact-llama2-13b-b32-kv2048-layer.json"


def _reads_layer_input(op: Op, layer_input: int) -> bool:
    return layer_input in op.extra.get("artifact", {}).get("external_input_ids", ())


def artifact_instance(layers: int = LAYERS) -> Instance:
    """The measured layer repeated `layers` times (module docstring)."""
    if not 1 <= layers <= LAYERS:
        raise UsageError(f"{NAME}: --layers must be between 1 and {LAYERS} (Llama2-13B's "
                         f"depth), got {layers}")
    layer = load_instance(TABLE)
    n = len(layer.ops)
    layer_input = layer.ops[0].extra["artifact"]["input_ids"][0]
    ops: list[Op] = []
    for k in range(layers):
        for op in layer.ops:
            inputs = tuple(i + k * n for i in op.inputs)
            if k and _reads_layer_input(op, layer_input):
                inputs = tuple(sorted({*inputs, k * n - 1}))
            ops.append(replace(op, name=op.name.replace("L0.", f"L{k}.", 1), layer=k,
                               inputs=inputs))
    return replace(layer, name=f"{NAME}-llama2-13b-b32-kv2048-L{layers}", ops=tuple(ops))
