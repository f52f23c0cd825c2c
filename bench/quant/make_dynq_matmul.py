"""Writes a dynamic-quantized BERT-base feed-forward stack as onnxruntime's
quantize_dynamic lays it out: per projection DynamicQuantizeLinear on the
activation, MatMulInteger with uint8 weights and a weight zero point, Cast to
float, Mul by the two scales, Add the bias (Relu after the first projection
of each layer). Shapes are BERT-base's: [1, SEQ, 768] x [768, 3072] then
[3072, 768]. Usage: make_dynq_matmul.py OUT.onnx [SEQ] [LAYERS] [HIDDEN] [FF]"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def quantized_weights(rng, k, n):
    wf = rng.standard_normal((k, n)).astype(np.float32) * 0.05
    lo, hi = min(wf.min(), 0.0), max(wf.max(), 0.0)
    ws = (hi - lo) / 255.0
    wz = int(np.clip(np.round(-lo / ws), 0, 255))
    wq = np.clip(np.round(wf / ws) + wz, 0, 255).astype(np.uint8)
    return wq, np.array(wz, np.uint8), np.array(ws, np.float32)


def main():
    out = sys.argv[1]
    seq = int(sys.argv[2]) if len(sys.argv) > 2 else 128
    layers = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    hidden = int(sys.argv[4]) if len(sys.argv) > 4 else 768
    ff = int(sys.argv[5]) if len(sys.argv) > 5 else 3072
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    cur = "x"
    for i in range(2 * layers):
        k, n = (hidden, ff) if i % 2 == 0 else (ff, hidden)
        wq, wz, ws = quantized_weights(rng, k, n)
        inits += [numpy_helper.from_array(wq, f"w{i}"), numpy_helper.from_array(wz, f"wz{i}"),
                  numpy_helper.from_array(ws, f"ws{i}"),
                  numpy_helper.from_array(rng.standard_normal(n).astype(np.float32) * 0.1, f"b{i}")]
        p = f"l{i}_"
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [cur], [p + "q", p + "qs", p + "qz"]),
            helper.make_node("MatMulInteger", [p + "q", f"w{i}", p + "qz", f"wz{i}"], [p + "acc"]),
            helper.make_node("Cast", [p + "acc"], [p + "f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [p + "qs", f"ws{i}"], [p + "s"]),
            helper.make_node("Mul", [p + "f", p + "s"], [p + "m"]),
            helper.make_node("Add", [p + "m", f"b{i}"], [p + "a"]),
        ]
        cur = p + "a"
        if i % 2 == 0:
            nodes.append(helper.make_node("Relu", [cur], [p + "r"]))
            cur = p + "r"
    g = helper.make_graph(nodes, "dynq_matmul",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden])],
                          [helper.make_tensor_value_info(cur, TensorProto.FLOAT, [1, seq, hidden])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save(m, out)


if __name__ == "__main__":
    main()
