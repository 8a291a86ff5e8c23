"""The ONNX importer on small hand-built graphs (onnx.helper), shapes only."""

import onnx
import pytest
from onnx import TensorProto, helper

from elk_opt.cli import main
from elk_opt.errors import InputError, UsageError
from elk_opt.frontend.build import instance_from_graph
from elk_opt.frontend.chips import load_chip
from elk_opt.frontend.onnx_file import Bindings
from elk_opt.frontend.onnx_import import import_graph

BF = TensorProto.BFLOAT16


def tiny_decoder(extra_node=None, batch="batch_size", past="past_sequence_length"):
    """x -> RMSNorm -> MatMul(W) (+bias) -> scores against a KV cache -> Softmax -> output."""
    nodes = [
        helper.make_node("RMSNormalization", ["x", "norm.weight"], ["n"], name="layers.0.norm"),
        helper.make_node("MatMul", ["n", "layers.0.q.weight"], ["q0"], name="layers.0.q/MatMul"),
        helper.make_node("Add", ["q0", "layers.0.q.bias"], ["q1"], name="layers.0.q/Add"),
        helper.make_node("Reshape", ["q1", "shape4"], ["q"], name="layers.0.q/Reshape"),
        helper.make_node("Transpose", ["past_key_values.0.key"], ["kt"], perm=[0, 1, 3, 2],
                         name="layers.0.kt"),
        helper.make_node("MatMul", ["q", "kt"], ["s"], name="layers.0.scores"),
        helper.make_node("Softmax", ["s"], ["y"], axis=-1, name="layers.0.softmax"),
    ]
    if extra_node is not None:
        nodes.append(extra_node)
    inputs = [
        helper.make_tensor_value_info("x", BF, [batch, 1, 64]),
        helper.make_tensor_value_info("norm.weight", BF, [64]),
        helper.make_tensor_value_info("layers.0.q.weight", BF, [64, 64]),
        helper.make_tensor_value_info("layers.0.q.bias", BF, [64]),
        helper.make_tensor_value_info("past_key_values.0.key", BF, [batch, 4, past, 16]),
    ]
    shape = helper.make_tensor("shape4", TensorProto.INT64, [4], [-1, 4, 1, 16])
    graph = helper.make_graph(nodes, "tiny", inputs,
                              [helper.make_tensor_value_info("y", BF, None)], [shape])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])


def test_tiny_graph_imports_views_folded_bias_fused():
    ops = import_graph(tiny_decoder(), "tiny.onnx", Bindings(batch=2, kv_len=10, seq=1))
    assert [op.onnx_type for op in ops] == ["RMSNormalization", "MatMul", "MatMul", "Softmax"]
    norm, q, scores, soft = ops
    assert q.inputs == (0,) and scores.inputs == (1,) and soft.inputs == (2,)
    assert q.work.hbm_bytes == (64 * 64 + 64) * 2 and q.hbm_data == "weights"
    assert q.work.dims == (1, 2, 64, 64)
    assert scores.hbm_data == "kv" and scores.work.hbm_bytes == 2 * 4 * 10 * 16 * 2
    assert scores.work.dims == (8, 1, 16, 10) and scores.kind == "batched_matmul"
    assert soft.work.dims == (8, 10) and soft.work.hbm_bytes == 0
    assert all(op.layer == 0 for op in ops)


def test_unknown_op_is_a_clear_error():
    bad = helper.make_node("FancyAttention", ["y"], ["z"], name="layers.0.fancy",
                           domain="com.example")
    model = tiny_decoder(bad)
    with pytest.raises(InputError, match="layers.0.fancy.*'FancyAttention'"):
        import_graph(model, "tiny.onnx", Bindings(batch=2, kv_len=10, seq=1))


def test_unbindable_symbolic_dim_is_a_clear_error():
    model = tiny_decoder(past="mystery")
    with pytest.raises(InputError, match="past_key_values.0.key.*'mystery'"):
        import_graph(model, "tiny.onnx", Bindings(batch=2, kv_len=10, seq=1))


def test_external_weights_are_never_read(tmp_path):
    """An initializer stored as external data whose file does not exist still imports."""
    model = tiny_decoder()
    weight = TensorProto(name="layers.0.q.weight", data_type=BF, dims=[64, 64])
    weight.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "missing.bin"), ("offset", "0"), ("length", "8192")):
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    model.graph.initializer.append(weight)
    del model.graph.input[2]  # the weight is now an initializer, not an input
    path = tmp_path / "ext.onnx"
    onnx.save(model, str(path))
    assert main(["instance", str(path), "--batch", "2", "--kv-len", "10", "--chip", "ipu-mk2",
                 "-o", str(tmp_path / "i.json")]) == 0


def test_instance_from_graph_is_schedulable():
    inst = instance_from_graph(tiny_decoder(), load_chip("ipu-mk2"), name="tiny",
                               source="tiny.onnx", batch=4, kv_len=32, mode="decode")
    assert [op.extra.get("hbm_data") for op in inst.ops] == ["weights", "weights", "kv", None]
    assert all(op.pairs() for op in inst.ops)


def test_cli_unknown_op_exit_2(tmp_path, capsys):
    path = tmp_path / "bad.onnx"
    onnx.save(tiny_decoder(helper.make_node("Frobnicate", ["y"], ["z"], name="n9")), str(path))
    assert main(["instance", str(path), "-o", str(tmp_path / "i.json")]) == 2
    err = capsys.readouterr().err
    assert "n9" in err and "Frobnicate" in err and "Traceback" not in err
    assert not (tmp_path / "i.json").exists()


def hf_style():
    """What torch.onnx.export of a decoder block looks like: shape arithmetic computing Reshape
    targets, an attention mask input, Gemm, Where, Expand, symbolic dims named by HF."""
    i64 = TensorProto.INT64
    nodes = [
        helper.make_node("Shape", ["hidden"], ["shp"], name="/model/layers.0/Shape"),
        helper.make_node("Gather", ["shp", "zero"], ["bsz"], axis=0,
                         name="/model/layers.0/Gather_shape"),
        helper.make_node("Unsqueeze", ["bsz", "axes0"], ["bsz1"], name="/model/layers.0/Unsq"),
        helper.make_node("Concat", ["bsz1", "tail"], ["newshape"], axis=0,
                         name="/model/layers.0/Concat_shape"),
        helper.make_node("Reshape", ["hidden", "newshape"], ["flat"],
                         name="/model/layers.0/Reshape"),
        helper.make_node("Gemm", ["flat", "model.layers.0.fc.weight", "model.layers.0.fc.bias"],
                         ["fc"], transB=1, name="/model/layers.0/fc/Gemm"),
        helper.make_node("Cast", ["attention_mask"], ["maskb"], to=TensorProto.BOOL,
                         name="/model/Cast"),
        helper.make_node("Shape", ["fc"], ["fcshape"], name="/model/layers.0/Shape_1"),
        helper.make_node("Expand", ["maskb", "fcshape"], ["maskx"], name="/model/Expand"),
        helper.make_node("Where", ["maskx", "fc", "neg"], ["masked"],
                         name="/model/layers.0/Where"),
        helper.make_node("Relu", ["masked"], ["out"], name="/model/layers.0/act/Relu"),
    ]
    inputs = [
        helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch_size", 256]),
        helper.make_tensor_value_info("attention_mask", i64, ["batch_size", 512]),
    ]
    inits = [
        helper.make_tensor("zero", i64, [], [0]),
        helper.make_tensor("axes0", i64, [1], [0]),
        helper.make_tensor("tail", i64, [1], [256]),
        helper.make_tensor("neg", TensorProto.FLOAT, [], [-1e4]),
        TensorProto(name="model.layers.0.fc.weight", data_type=TensorProto.FLOAT,
                    dims=[512, 256]),
        TensorProto(name="model.layers.0.fc.bias", data_type=TensorProto.FLOAT, dims=[512]),
    ]
    for t in inits[4:]:  # shape-only initializers stored externally, never read
        t.data_location = TensorProto.EXTERNAL
        entry = t.external_data.add()
        entry.key, entry.value = "location", "weights.bin"
    graph = helper.make_graph(nodes, "hf", inputs,
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_hf_style_export_folds_shape_arithmetic():
    ops = import_graph(hf_style(), "hf.onnx", Bindings(batch=3, kv_len=7, seq=1))
    assert [op.onnx_type for op in ops] == ["Gemm", "Where", "Relu"]
    gemm, where, relu = ops
    assert gemm.work.dims == (1, 3, 256, 512) and gemm.hbm_data == "weights"
    assert gemm.work.hbm_bytes == (512 * 256 + 512) * 4
    assert where.inputs == (0,) and relu.inputs == (1,)
    assert all(op.layer == 0 for op in ops)


# ---------------------------------------------------------------------------- bad input

def matmul_graph(a_shape, b_shape, domain_node=None):
    nodes = [helper.make_node("MatMul", ["x", "layers.0.w.weight"], ["y"], name="layers.0.mm")]
    if domain_node is not None:
        nodes.insert(0, domain_node)
    inputs = [helper.make_tensor_value_info("x", BF, a_shape),
              helper.make_tensor_value_info("layers.0.w.weight", BF, b_shape)]
    graph = helper.make_graph(nodes, "mm", inputs, [helper.make_tensor_value_info("y", BF, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("com.microsoft", 1)])


@pytest.mark.parametrize("content, message", [
    (b'{"format": "elk-plan/1", "instance": {}}', "not an ONNX file: it is an elk-plan/1 file"),
    (b'[1, 2, 3]', "not an ONNX file: it is JSON"),
    (b"hello, not a model\n", "not an ONNX file (not a binary ONNX model)"),
    (b"", "not an ONNX file (no graph or IR version"),
])
def test_not_an_onnx_file_says_so_in_one_line(tmp_path, capsys, content, message):
    path = tmp_path / "plan.json"
    path.write_bytes(content)
    assert main(["instance", str(path), "-o", str(tmp_path / "i.json")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Available Fields" not in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "i.json").exists()


def test_mismatched_matmul_is_reported_as_such():
    model = matmul_graph([4, 64], [32, 16])
    with pytest.raises(InputError) as err:
        import_graph(model, "bad.onnx", Bindings(batch=1, kv_len=1, seq=1))
    text = str(err.value)
    assert "node 'layers.0.mm' (MatMul): Incompatible dimensions" in text
    assert "'x' [4, 64], 'layers.0.w.weight' [32, 16]" in text
    assert "unknown" not in text and "\n" not in text


def test_a_node_missing_an_input_is_reported_without_its_shapes():
    model = tiny_decoder()
    softmax = next(n for n in model.graph.node if n.op_type == "Softmax")
    softmax.op_type = "Add"  # one input where Add needs two: even lenient inference fails
    with pytest.raises(InputError) as err:
        import_graph(model, "bad.onnx", Bindings(batch=2, kv_len=10, seq=1))
    assert "node 'layers.0.softmax' (Add): Input 1 is out of bounds" in str(err.value)


@pytest.mark.parametrize("shape, message", [
    ([0, 64], "input 'x': dimension 0 is 0; every dimension must be at least 1"),
    ([-3, 64], "input 'x': dimension 0 is -3"),
])
def test_empty_or_negative_dimensions_are_rejected(shape, message):
    with pytest.raises(InputError, match=message):
        import_graph(matmul_graph(shape, [64, 16]), "m.onnx", Bindings(1, 1, 1))


def test_an_op_without_onnx_shape_inference_says_why():
    norm = helper.make_node("SkipSimplifiedLayerNormalization", ["x0", "s", "g"], ["x"],
                            name="layers.0.norm", domain="com.microsoft")
    model = matmul_graph([4, 64], [64, 16], norm)
    del model.graph.input[0]
    model.graph.input.extend([helper.make_tensor_value_info(n, BF, s)
                              for n, s in (("x0", [4, 64]), ("s", [4, 64]), ("g", [64]))])
    with pytest.raises(InputError, match="no shape inference for domain 'com.microsoft'"):
        import_graph(model, "ms.onnx", Bindings(1, 1, 1))


def test_a_huge_dimension_is_rejected_before_it_is_split(tmp_path, capsys):
    """2**40 sequences would make billions of chunks (issue 12: 30 s before the error)."""
    from elk_opt.frontend.build import MAX_CHUNKS, split_large_ops
    ops = import_graph(matmul_graph([2**40, 64], [64, 16]), "m.onnx", Bindings(1, 1, 1))
    with pytest.raises(UsageError, match=f"more than {MAX_CHUNKS:,}; lower --batch"):
        split_large_ops(ops, load_chip("ipu-pod4-hbm3e"))
    assert main(["instance", "llama2-7b", "--layers", "1", "--batch", str(2**31 - 1),
                 "-o", str(tmp_path / "i.json")]) == 2  # the largest --batch the flag takes
    assert "chunks" in capsys.readouterr().err


def test_synthetic_size_is_bounded(tmp_path, capsys):
    out = str(tmp_path / "s.json")
    assert main(["instance", "synthetic", "--ops", str(10**8), "-o", out]) == 2
    assert main(["instance", "synthetic", "--plans", str(10**8), "-o", out]) == 2
    assert "--ops x --plans must be at most" in capsys.readouterr().err


def test_divisors_of_large_core_counts_are_fast():
    from elk_opt.frontend.partition import divisors
    for n in (1, 2, 36, 97, 1472, 5888, 2304):
        assert divisors(n) == tuple(d for d in range(1, n + 1) if n % d == 0)
    assert len(divisors(2**40)) == 41  # a chip file may say anything: O(sqrt n), not O(n)
