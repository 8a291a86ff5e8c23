"""The zoo models as shape-only ONNX graphs (onnx.helper), named like Hugging Face exports.

Weights and KV caches are graph inputs with shapes but no data (`layers.3.mlp.up_proj.weight`,
`past_key_values.3.key`), so a 70B graph is a few hundred kilobytes. Every node's name starts
with its block (`layers.3.`), which the importer turns into the op's layer.

Modes: "decode" runs one new token per sequence against a KV cache of `kv_len` tokens;
"prefill" runs a prompt of `kv_len` tokens and computes logits for the last one; "forward"
runs `kv_len` tokens and computes logits for all of them (a training-like forward pass).
"""

from __future__ import annotations

import math

import onnx
from onnx import TensorProto, helper

from elk_opt.frontend.zoo.configs import DecoderConfig, DitConfig

OPSET = 24
DTYPES = {"bf16": TensorProto.BFLOAT16, "fp16": TensorProto.FLOAT16,
          "fp32": TensorProto.FLOAT, "fp8": TensorProto.FLOAT8E4M3FN}


class _Graph:
    """A tiny builder: named inputs, nodes and constants, then one ModelProto."""

    def __init__(self, dtype: int):
        self.dtype = dtype
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.count = 0

    def input(self, name: str, shape: list[int], dtype: int | None = None) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, dtype or self.dtype, shape))
        return name

    def output(self, name: str) -> None:
        self.outputs.append(helper.make_tensor_value_info(name, self.dtype, None))

    def ints(self, values: list[int]) -> str:
        """An int64 immediate (shape or axes operand)."""
        self.count += 1
        name = f"const.{self.count}"
        self.inits.append(helper.make_tensor(name, TensorProto.INT64, [len(values)], values))
        return name

    def scalar(self, value: float) -> str:
        self.count += 1
        name = f"const.{self.count}"
        self.inits.append(helper.make_tensor(name, TensorProto.FLOAT, [], [value]))
        cast = f"{name}.cast"
        self.nodes.append(helper.make_node("Cast", [name], [cast], to=self.dtype,
                                           name=f"{name}/Cast"))
        return cast

    def node(self, op: str, name: str, inputs: list[str], **attrs) -> str:
        out = f"{name}.out"
        self.nodes.append(helper.make_node(op, inputs, [out], name=name, **attrs))
        return out

    def reshape(self, name: str, x: str, shape: list[int]) -> str:
        return self.node("Reshape", name, [x, self.ints(shape)])

    def transpose(self, name: str, x: str, perm: list[int]) -> str:
        return self.node("Transpose", name, [x], perm=perm)

    def model(self, name: str) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, self.inputs, self.outputs, self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                 producer_name="elk-opt zoo")


def _linear(g: _Graph, name: str, x: str, d_in: int, d_out: int, bias: bool) -> str:
    w = g.input(f"{name}.weight", [d_in, d_out])  # stored transposed: x @ W
    y = g.node("MatMul", f"{name}/MatMul", [x, w])
    if bias:
        y = g.node("Add", f"{name}/Add", [y, g.input(f"{name}.bias", [d_out])])
    return y


def _norm(g: _Graph, cfg: DecoderConfig, name: str, x: str) -> str:
    w = g.input(f"{name}.weight", [cfg.hidden])
    if cfg.norm == "rms":
        return g.node("RMSNormalization", name, [x, w], axis=-1, epsilon=cfg.norm_eps)
    b = g.input(f"{name}.bias", [cfg.hidden])
    return g.node("LayerNormalization", name, [x, w, b], axis=-1, epsilon=cfg.norm_eps)


def _softcap(g: _Graph, name: str, x: str, cap: float) -> str:
    y = g.node("Div", f"{name}/Div", [x, g.scalar(cap)])
    y = g.node("Tanh", f"{name}/Tanh", [y])
    return g.node("Mul", f"{name}/Mul", [y, g.scalar(cap)])


def decoder_graph(cfg: DecoderConfig, batch: int, kv_len: int, layers: int, mode: str,
                  dtype: str = "bf16") -> onnx.ModelProto:
    g = _Graph(DTYPES[dtype])
    b, h, dh = batch, cfg.hidden, cfg.head_dim
    seq = 1 if mode == "decode" else kv_len
    group = cfg.heads // cfg.kv_heads
    ids = g.input("input_ids", [b, seq], TensorProto.INT64)
    table = g.input("embed_tokens.weight", [cfg.vocab, h])
    x = g.node("Gather", "embed_tokens/Gather", [table, ids], axis=0)
    positions = g.input("position_ids", [b, seq], TensorProto.INT64)
    if cfg.learned_positions:
        pos_table = g.input("embed_positions.weight", [cfg.learned_positions, h])
        pos = g.node("Gather", "embed_positions/Gather", [pos_table, positions], axis=0)
        x = g.node("Add", "embed/Add", [x, pos])
    else:
        max_pos = max(4096, kv_len + seq)
        cos = g.input("rotary.cos", [max_pos, dh // 2])
        sin = g.input("rotary.sin", [max_pos, dh // 2])
    if cfg.embed_scale:
        x = g.node("Mul", "embed/Mul", [x, g.scalar(math.sqrt(h))])
    for i in range(layers):
        p = f"layers.{i}"
        residual = x
        y = _norm(g, cfg, f"{p}.input_layernorm", x)
        q = _linear(g, f"{p}.self_attn.q_proj", y, h, cfg.heads * dh, cfg.bias)
        k = _linear(g, f"{p}.self_attn.k_proj", y, h, cfg.kv_heads * dh, cfg.bias)
        v = _linear(g, f"{p}.self_attn.v_proj", y, h, cfg.kv_heads * dh, cfg.bias)
        q = g.transpose(f"{p}.self_attn.q/Transpose",
                        g.reshape(f"{p}.self_attn.q/Reshape", q, [b, seq, cfg.heads, dh]),
                        [0, 2, 1, 3])
        k = g.transpose(f"{p}.self_attn.k/Transpose",
                        g.reshape(f"{p}.self_attn.k/Reshape", k, [b, seq, cfg.kv_heads, dh]),
                        [0, 2, 1, 3])
        v = g.transpose(f"{p}.self_attn.v/Transpose",
                        g.reshape(f"{p}.self_attn.v/Reshape", v, [b, seq, cfg.kv_heads, dh]),
                        [0, 2, 1, 3])
        if not cfg.learned_positions:
            q = g.node("RotaryEmbedding", f"{p}.self_attn.q_rotary", [q, cos, sin, positions])
            k = g.node("RotaryEmbedding", f"{p}.self_attn.k_rotary", [k, cos, sin, positions])
        if mode == "decode":
            window = cfg.sliding_window if cfg.sliding_window and i % 2 == 0 else 0
            past = min(kv_len, window) if window else kv_len
            past_k = g.input(f"past_key_values.{i}.key", [b, cfg.kv_heads, past, dh])
            past_v = g.input(f"past_key_values.{i}.value", [b, cfg.kv_heads, past, dh])
            k = g.node("Concat", f"{p}.self_attn.present_key/Concat", [past_k, k], axis=2)
            v = g.node("Concat", f"{p}.self_attn.present_value/Concat", [past_v, v], axis=2)
        g.output(k)
        g.output(v)
        qg = g.reshape(f"{p}.self_attn.q_group/Reshape", q, [b, cfg.kv_heads, group * seq, dh])
        kt = g.transpose(f"{p}.self_attn.k_t/Transpose", k, [0, 1, 3, 2])
        s = g.node("MatMul", f"{p}.self_attn.scores/MatMul", [qg, kt])
        if cfg.attn_softcap:
            s = _softcap(g, f"{p}.self_attn.softcap", s, cfg.attn_softcap)
        s = g.node("Softmax", f"{p}.self_attn.softmax", [s], axis=-1)
        c = g.node("MatMul", f"{p}.self_attn.context/MatMul", [s, v])
        c = g.reshape(f"{p}.self_attn.context/Reshape2", g.transpose(
            f"{p}.self_attn.context/Transpose", g.reshape(
                f"{p}.self_attn.context/Reshape", c, [b, cfg.heads, seq, dh]), [0, 2, 1, 3]),
            [b, seq, cfg.heads * dh])
        o = _linear(g, f"{p}.self_attn.o_proj", c, cfg.heads * dh, h, cfg.bias)
        if cfg.post_norms:
            o = _norm(g, cfg, f"{p}.post_attention_layernorm", o)
        x = g.node("Add", f"{p}.attn_residual/Add", [residual, o])
        residual = x
        name = "pre_feedforward_layernorm" if cfg.post_norms else "post_attention_layernorm"
        y = _norm(g, cfg, f"{p}.{name}", x)
        if cfg.gated:
            gate = _linear(g, f"{p}.mlp.gate_proj", y, h, cfg.ffn, cfg.bias)
            up = _linear(g, f"{p}.mlp.up_proj", y, h, cfg.ffn, cfg.bias)
            act = (g.node("Swish", f"{p}.mlp.act/Swish", [gate]) if cfg.activation == "silu"
                   else g.node("Gelu", f"{p}.mlp.act/Gelu", [gate], approximate="tanh"))
            y = g.node("Mul", f"{p}.mlp.gate/Mul", [act, up])
            y = _linear(g, f"{p}.mlp.down_proj", y, cfg.ffn, h, cfg.bias)
        else:
            y = _linear(g, f"{p}.mlp.fc1", y, h, cfg.ffn, cfg.bias)
            y = g.node("Relu", f"{p}.mlp.act/Relu", [y])
            y = _linear(g, f"{p}.mlp.fc2", y, cfg.ffn, h, cfg.bias)
        if cfg.post_norms:
            y = _norm(g, cfg, f"{p}.post_feedforward_layernorm", y)
        x = g.node("Add", f"{p}.mlp_residual/Add", [residual, y])
    if mode == "prefill":
        x = g.node("Slice", "last_token/Slice", [x, g.ints([seq - 1]), g.ints([seq]),
                                                 g.ints([1])])
    x = _norm(g, cfg, "norm", x)
    if cfg.tied_head:
        head = g.transpose("lm_head/Transpose", table, [1, 0])
        logits = g.node("MatMul", "lm_head/MatMul", [x, head])
    else:
        logits = _linear(g, "lm_head", x, h, cfg.vocab, False)
    if cfg.final_softcap:
        logits = _softcap(g, "final_softcap", logits, cfg.final_softcap)
    g.output(logits)
    return g.model(f"{cfg.name}-{mode}-b{batch}-kv{kv_len}-l{layers}")


def dit_graph(cfg: DitConfig, batch: int, layers: int, dtype: str = "bf16") -> onnx.ModelProto:
    """One denoising step of DiT over all latent patches (the model has no KV cache)."""
    g = _Graph(DTYPES[dtype])
    b, h = batch, cfg.hidden
    side = cfg.latent // cfg.patch
    tokens = side * side
    dh = h // cfg.heads
    latent = g.input("latent", [b, cfg.latent_channels, cfg.latent, cfg.latent])
    x = g.node("Conv", "x_embedder.proj/Conv",
               [latent, g.input("x_embedder.proj.weight",
                                [h, cfg.latent_channels, cfg.patch, cfg.patch]),
                g.input("x_embedder.proj.bias", [h])],
               kernel_shape=[cfg.patch, cfg.patch], strides=[cfg.patch, cfg.patch])
    x = g.transpose("x_embedder/Transpose", g.reshape("x_embedder/Reshape", x, [b, h, tokens]),
                    [0, 2, 1])
    x = g.node("Add", "pos_embed/Add", [x, g.input("pos_embed", [1, tokens, h])])
    t = g.input("timestep_frequencies", [b, cfg.freq_dim])
    t = _dit_linear(g, "t_embedder.mlp.0", t, cfg.freq_dim, h)
    t = g.node("Swish", "t_embedder.mlp.1/Swish", [t])
    t = _dit_linear(g, "t_embedder.mlp.2", t, h, h)
    labels = g.input("class_labels", [b], TensorProto.INT64)
    y = g.node("Gather", "y_embedder/Gather",
               [g.input("y_embedder.embedding_table.weight", [cfg.classes, h]), labels], axis=0)
    c = g.node("Add", "conditioning/Add", [t, y])
    c_act = g.node("Swish", "conditioning/Swish", [c])
    for i in range(layers):
        p = f"blocks.{i}"
        mod = _dit_linear(g, f"{p}.adaLN_modulation.1", c_act, h, 6 * h)
        mod = g.reshape(f"{p}.adaLN/Reshape", mod, [b, 6, 1, h])
        chunks = [f"{p}.adaLN.chunk{j}" for j in range(6)]
        g.nodes.append(helper.make_node("Split", [mod], chunks, axis=1, num_outputs=6,
                                        name=f"{p}.adaLN/Split"))
        shift1, scale1, gate1, shift2, scale2, gate2 = (
            g.reshape(f"{p}.adaLN.chunk{j}/Reshape", chunks[j], [b, 1, h]) for j in range(6))
        y = _dit_modulate(g, f"{p}.norm1", x, shift1, scale1, h)
        qkv = _dit_linear(g, f"{p}.attn.qkv", y, h, 3 * h)
        qkv = g.transpose(f"{p}.attn.qkv/Transpose",
                          g.reshape(f"{p}.attn.qkv/Reshape", qkv, [b, tokens, 3, cfg.heads, dh]),
                          [2, 0, 3, 1, 4])
        parts = [f"{p}.attn.q", f"{p}.attn.k", f"{p}.attn.v"]
        g.nodes.append(helper.make_node("Split", [qkv], parts, axis=0, num_outputs=3,
                                        name=f"{p}.attn.qkv/Split"))
        q, k, v = (g.reshape(f"{part}/Reshape", part, [b, cfg.heads, tokens, dh])
                   for part in parts)
        s = g.node("MatMul", f"{p}.attn.scores/MatMul",
                   [q, g.transpose(f"{p}.attn.k_t/Transpose", k, [0, 1, 3, 2])])
        s = g.node("Softmax", f"{p}.attn.softmax", [s], axis=-1)
        o = g.node("MatMul", f"{p}.attn.context/MatMul", [s, v])
        o = g.reshape(f"{p}.attn.context/Reshape", g.transpose(
            f"{p}.attn.context/Transpose", o, [0, 2, 1, 3]), [b, tokens, h])
        o = _dit_linear(g, f"{p}.attn.proj", o, h, h)
        x = g.node("Add", f"{p}.attn_residual/Add",
                   [x, g.node("Mul", f"{p}.attn_gate/Mul", [gate1, o])])
        y = _dit_modulate(g, f"{p}.norm2", x, shift2, scale2, h)
        y = _dit_linear(g, f"{p}.mlp.fc1", y, h, cfg.mlp)
        y = g.node("Gelu", f"{p}.mlp.act/Gelu", [y], approximate="tanh")
        y = _dit_linear(g, f"{p}.mlp.fc2", y, cfg.mlp, h)
        x = g.node("Add", f"{p}.mlp_residual/Add",
                   [x, g.node("Mul", f"{p}.mlp_gate/Mul", [gate2, y])])
    mod = _dit_linear(g, "final_layer.adaLN_modulation.1", c_act, h, 2 * h)
    mod = g.reshape("final_layer.adaLN/Reshape", mod, [b, 2, 1, h])
    g.nodes.append(helper.make_node("Split", [mod], ["final.shift", "final.scale"], axis=1,
                                    num_outputs=2, name="final_layer.adaLN/Split"))
    shift = g.reshape("final.shift/Reshape", "final.shift", [b, 1, h])
    scale = g.reshape("final.scale/Reshape", "final.scale", [b, 1, h])
    y = _dit_modulate(g, "final_layer.norm_final", x, shift, scale, h)
    out = cfg.patch * cfg.patch * cfg.out_channels
    g.output(_dit_linear(g, "final_layer.linear", y, h, out))
    return g.model(f"{cfg.name}-b{batch}-l{layers}")


def _dit_linear(g: _Graph, name: str, x: str, d_in: int, d_out: int) -> str:
    return _linear(g, name, x, d_in, d_out, True)


def _dit_modulate(g: _Graph, name: str, x: str, shift: str, scale: str, h: int) -> str:
    """LayerNorm without affine parameters, then x * (1 + scale) + shift."""
    ones = g.node("ConstantOfShape", f"{name}/ones", [g.ints([h])],
                  value=helper.make_tensor("one", g.dtype, [1], [1.0]))
    zeros = g.node("ConstantOfShape", f"{name}/zeros", [g.ints([h])],
                   value=helper.make_tensor("zero", g.dtype, [1], [0.0]))
    y = g.node("LayerNormalization", name, [x, ones, zeros], axis=-1, epsilon=1e-6)
    y = g.node("Mul", f"{name}/modulate_scale/Mul",
               [y, g.node("Add", f"{name}/one_plus_scale/Add", [scale, g.scalar(1.0)])])
    return g.node("Add", f"{name}/modulate_shift/Add", [y, shift])
