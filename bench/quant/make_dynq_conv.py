"""Writes a dynamic-quantized conv net as onnxruntime's quantize_dynamic lays
it out: per layer DynamicQuantizeLinear on the activation, ConvInteger with
uint8 weights and a weight zero point, Cast to float, Mul by the two scales,
Add the bias, Relu. Usage: make_dynq_conv.py OUT.onnx [SIZE] [CHANNELS] [LAYERS]"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out = sys.argv[1]
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 256
    ch = int(sys.argv[3]) if len(sys.argv) > 3 else 64
    layers = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    cur, cin = "x", 3
    for i in range(layers):
        wf = rng.standard_normal((ch, cin, 3, 3)).astype(np.float32) * 0.1
        lo, hi = min(wf.min(), 0.0), max(wf.max(), 0.0)
        ws = (hi - lo) / 255.0
        wz = int(np.clip(np.round(-lo / ws), 0, 255))
        wq = np.clip(np.round(wf / ws) + wz, 0, 255).astype(np.uint8)
        inits += [numpy_helper.from_array(wq, f"w{i}"), numpy_helper.from_array(np.array(wz, np.uint8), f"wz{i}"),
                  numpy_helper.from_array(np.array(ws, np.float32), f"ws{i}"),
                  numpy_helper.from_array(rng.standard_normal(ch).astype(np.float32).reshape(1, ch, 1, 1) * 0.1, f"b{i}")]
        p = f"l{i}_"
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [cur], [p + "q", p + "qs", p + "qz"]),
            helper.make_node("ConvInteger", [p + "q", f"w{i}", p + "qz", f"wz{i}"], [p + "acc"], pads=[1, 1, 1, 1]),
            helper.make_node("Cast", [p + "acc"], [p + "f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [p + "qs", f"ws{i}"], [p + "s"]),
            helper.make_node("Mul", [p + "f", p + "s"], [p + "m"]),
            helper.make_node("Add", [p + "m", f"b{i}"], [p + "a"]),
            helper.make_node("Relu", [p + "a"], [p + "y"]),
        ]
        cur, cin = p + "y", ch
    g = helper.make_graph(nodes, "dynq_conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
                          [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [1, ch, size, size])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save(m, out)


if __name__ == "__main__":
    main()
