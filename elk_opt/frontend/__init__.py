"""The model front end: what turns a model and a chip into an `elk-instance/1`.

ONNX import and the built-in zoo give the operator graph; `chips` the chip presets;
`partition` searches each operator's partition plans; `cost/` times them (analytic, table,
elk-paper); `build` and `sources` put the pieces together into an instance.
"""
