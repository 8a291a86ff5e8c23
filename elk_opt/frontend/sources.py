"""An instance from a model: a zoo model by name, or an ONNX file by path.

The logic of `elk-opt instance MODEL_OR_ONNX` and of `elk_opt.build_instance`. ONNX (and the
partition search) load only when called.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from elk_opt.errors import UsageError
from elk_opt.frontend import artifact
from elk_opt.frontend.cost import DEFAULT_COST_MODEL
from elk_opt.frontend.partition import DEFAULT_SEARCH, SearchOptions
from elk_opt.problem import Chip, Instance


def instance_from_source(source: str | Path, chip: Chip, *, batch: int = 32, kv_len: int = 2048,
                         layers: int | None = None, mode: str = "decode", dtype: str = "bf16",
                         cost_model: str = DEFAULT_COST_MODEL,
                         options: SearchOptions = DEFAULT_SEARCH,
                         noc_occupancy: str | None = None, progress: bool = False) -> Instance:
    """Build a zoo model (`layers`: keep the first N; `dtype` of its weights and activations)
    or import an ONNX file (its own types; export fewer layers instead of `layers`).
    `noc_occupancy` is "bytes" or "bsp" (None: the chip's default; docs/models.md)."""
    from elk_opt.frontend.zoo import model_instance, model_names

    if str(source) in model_names():
        if progress:
            print(f"building {source} ({mode}) on {chip.name}...", file=sys.stderr)
        return model_instance(str(source), chip, batch=batch, kv_len=kv_len, layers=layers,
                              mode=mode, dtype=dtype, cost_model=cost_model, options=options,
                              noc_occupancy=noc_occupancy, progress=progress)
    path = Path(source)
    if path.suffix != ".onnx" and not os.path.exists(path):  # never raises, unlike Path's
        raise UsageError(f"unknown instance source {str(source)!r}: not a zoo model "
                         f"({', '.join(model_names())}), an .onnx file, 'synthetic' or "
                         f"{artifact.NAME!r}")
    if layers is not None:
        raise UsageError("--layers applies to zoo models; export fewer layers instead")
    from elk_opt.frontend.build import instance_from_graph
    from elk_opt.frontend.onnx_file import load_model

    model = load_model(path)
    if progress:
        print(f"importing {path} ({mode}) on {chip.name}...", file=sys.stderr)
    return instance_from_graph(model, chip, name=f"{path.stem}-{mode}-b{batch}-kv{kv_len}-"
                                                 f"{chip.name}",
                               source=str(path), batch=batch, kv_len=kv_len, mode=mode,
                               cost_model=cost_model, options=options,
                               noc_occupancy=noc_occupancy, progress=progress)
