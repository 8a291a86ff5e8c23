"""The model zoo: published LLM and DiT configurations, built as ONNX graphs and imported.

`model_instance("llama2-13b", "ipu-pod4-hbm3e", batch=32, kv_len=2048)` generates the model's
shape-only ONNX graph (`model_graph`) and turns it into an instance through the same importer a
user's ONNX file goes through.
"""

from __future__ import annotations

from typing import Any

import onnx

from elk_opt.errors import UsageError
from elk_opt.frontend.build import MODES, instance_from_graph
from elk_opt.frontend.chips import DEFAULT_CHIP, load_chip
from elk_opt.frontend.cost import DEFAULT_COST_MODEL
from elk_opt.frontend.partition import DEFAULT_SEARCH, SearchOptions
from elk_opt.frontend.zoo.configs import DECODERS, DIT, DecoderConfig, DitConfig
from elk_opt.frontend.zoo.graphs import DTYPES, decoder_graph, dit_graph
from elk_opt.problem import Chip, Instance

__all__ = ["model_names", "model_config", "model_graph", "model_instance", "describe"]


def model_names() -> list[str]:
    return [*DECODERS, DIT.name]


def model_config(model: str) -> DecoderConfig | DitConfig:
    if model in DECODERS:
        return DECODERS[model]
    if model == DIT.name:
        return DIT
    raise UsageError(f"unknown model {model!r}; zoo: {', '.join(model_names())} "
                     "(or give an .onnx file)")


def model_graph(model: str, *, batch: int = 32, kv_len: int = 2048, layers: int | None = None,
                mode: str = "decode", dtype: str = "bf16") -> onnx.ModelProto:
    cfg = model_config(model)
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if dtype not in DTYPES:
        raise UsageError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    if batch < 1 or kv_len < 1:
        raise UsageError(f"batch and kv-len must be positive, got {batch} and {kv_len}")
    n = cfg.layers if layers is None else layers
    if not 1 <= n <= cfg.layers:
        raise UsageError(f"--layers must be within 1..{cfg.layers} for {model}, got {n}")
    if isinstance(cfg, DitConfig):
        if mode == "prefill":
            raise UsageError(f"{model} has no prefill: use decode or forward "
                             "(both are one denoising step over all latent patches)")
        return dit_graph(cfg, batch, n, dtype)
    return decoder_graph(cfg, batch, kv_len, n, mode, dtype)


def model_instance(model: str, chip: Chip | str = DEFAULT_CHIP, *, batch: int = 32,
                   kv_len: int = 2048, layers: int | None = None, mode: str = "decode",
                   dtype: str = "bf16", cost_model: str = DEFAULT_COST_MODEL,
                   options: SearchOptions = DEFAULT_SEARCH, progress: bool = False,
                   noc_occupancy: str | None = None) -> Instance:
    """`noc_occupancy`: "bytes" or "bsp" (docs/models.md); None: the cost model's, else the
    chip's default."""
    chip = load_chip(chip) if isinstance(chip, str) else chip
    cfg = model_config(model)
    n = cfg.layers if layers is None else layers
    graph = model_graph(model, batch=batch, kv_len=kv_len, layers=layers, mode=mode,
                        dtype=dtype)
    kv = "" if isinstance(cfg, DitConfig) else f"-kv{kv_len}"
    name = f"{model}-{mode}-b{batch}{kv}-l{n}-{chip.name}"
    meta: dict[str, Any] = {"kind": "zoo", "model": model, "layers": n, "dtype": dtype}
    inst = instance_from_graph(graph, chip, name=name, source=f"zoo:{model}", batch=batch,
                               kv_len=kv_len, mode=mode, cost_model=cost_model,
                               options=options, meta=meta, progress=progress,
                               noc_occupancy=noc_occupancy)
    return inst


def describe(model: str) -> str:
    cfg = model_config(model)
    if isinstance(cfg, DitConfig):
        return (f"hidden {cfg.hidden}, {cfg.heads} heads, {cfg.layers} blocks, MLP {cfg.mlp}, "
                f"{cfg.latent}x{cfg.latent}x{cfg.latent_channels} latent, patch {cfg.patch}, "
                f"adaLN-Zero, GELU")
    act = {"silu": "SwiGLU", "gelu_tanh": "GeGLU", "relu": "ReLU"}[cfg.activation]
    norm = "RMSNorm" if cfg.norm == "rms" else "LayerNorm"
    return (f"hidden {cfg.hidden}, {cfg.heads} heads ({cfg.kv_heads} KV), FFN {cfg.ffn}, "
            f"{cfg.layers} layers, vocab {cfg.vocab}, {norm}, {act}")
