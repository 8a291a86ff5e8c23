"""Published configurations of the zoo models (Hugging Face `config.json` of each release)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DecoderConfig:
    """A decoder-only LLM. Sources: meta-llama/Llama-2-{7b,13b,70b}-hf, facebook/opt-30b,
    google/gemma-2-27b config.json files (and the Llama 2 / OPT / Gemma 2 papers)."""

    name: str
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    layers: int
    vocab: int
    norm: str  # "rms" | "layer"
    activation: str  # "silu" (gated), "gelu_tanh" (gated), "relu" (plain)
    gated: bool
    bias: bool  # linear layers carry biases
    tied_head: bool  # the LM head reuses the input embedding table
    learned_positions: int = 0  # rows of a learned position table (OPT), 0 for rotary
    post_norms: bool = False  # Gemma 2: norms after attention and FFN as well as before
    embed_scale: bool = False  # Gemma: embeddings times sqrt(hidden)
    attn_softcap: float = 0.0  # Gemma 2 logit soft-capping
    final_softcap: float = 0.0
    sliding_window: int = 0  # Gemma 2: even layers attend to a window of this many tokens
    norm_eps: float = 1e-5
    params: int = 0  # published parameter count, for reference


@dataclass(frozen=True)
class DitConfig:
    """DiT-XL/2 (Peebles & Xie, "Scalable Diffusion Models with Transformers", ICCV 2023):
    256x256 images, 32x32x4 latents, patch 2, 28 blocks of width 1152, 16 heads, MLP ratio 4,
    adaLN-Zero conditioning, 1,000 classes plus the null class, learned sigma (8 channels out)."""

    name: str = "dit-xl-2"
    hidden: int = 1152
    heads: int = 16
    layers: int = 28
    mlp: int = 4608
    latent: int = 32
    latent_channels: int = 4
    patch: int = 2
    out_channels: int = 8
    classes: int = 1001
    freq_dim: int = 256
    params: int = 675_000_000


DECODERS: dict[str, DecoderConfig] = {
    "llama2-7b": DecoderConfig("llama2-7b", hidden=4096, heads=32, kv_heads=32, head_dim=128,
                               ffn=11008, layers=32, vocab=32000, norm="rms", activation="silu",
                               gated=True, bias=False, tied_head=False,
                               params=6_738_415_616),
    "llama2-13b": DecoderConfig("llama2-13b", hidden=5120, heads=40, kv_heads=40, head_dim=128,
                                ffn=13824, layers=40, vocab=32000, norm="rms",
                                activation="silu", gated=True, bias=False, tied_head=False,
                                params=13_015_864_320),
    "llama2-70b": DecoderConfig("llama2-70b", hidden=8192, heads=64, kv_heads=8, head_dim=128,
                                ffn=28672, layers=80, vocab=32000, norm="rms",
                                activation="silu", gated=True, bias=False, tied_head=False,
                                params=68_976_648_192),
    "opt-30b": DecoderConfig("opt-30b", hidden=7168, heads=56, kv_heads=56, head_dim=128,
                             ffn=28672, layers=48, vocab=50272, norm="layer", activation="relu",
                             gated=False, bias=True, tied_head=True, learned_positions=2050,
                             params=29_974_346_752),
    "gemma2-27b": DecoderConfig("gemma2-27b", hidden=4608, heads=32, kv_heads=16, head_dim=128,
                                ffn=36864, layers=46, vocab=256000, norm="rms",
                                activation="gelu_tanh", gated=True, bias=False, tied_head=True,
                                post_norms=True, embed_scale=True, attn_softcap=50.0,
                                final_softcap=30.0, sliding_window=4096, norm_eps=1e-6,
                                params=27_227_128_320),
}
DIT = DitConfig()
