#!/usr/bin/python3
"""Writes the toy device example's model and data into OUT_DIR.

The model (default domain, opset 13), with where each node should run when
it is prepared for --device toy:

  H  = MatMul(X, W)      \\  the core makes these one Gemm (MatMul + Add of
  H2 = Add(H, Bias)       |  a constant bias); the toy's pass then claims
  R  = Relu(H2)          /   Gemm + Relu: toy.vendor::GemmRelu on toy
  A  = Add(R, S)         \\  claimed by the toy's pass:
  A2 = Relu(A)           /   toy.vendor::AddRelu on toy
  G  = Sigmoid(A2)           no toy kernel: the CPU
  G3 = Unsqueeze(G, [0])     no toy kernel: the CPU
  M  = MatMul(G3, W3)        the toy's MatMul declines rank 3: the CPU
  Y  = Add(M, K)             plain Add on toy (output)
  Z0 = MatMul(A2, W2)        plain MatMul on toy
  Z1 = Add(Z0, Zb)           a row broadcast: the pass leaves this Add+Relu
                             alone and the toy's Add declines it: the CPU
  Z  = Relu(Z1)              plain Relu on toy (output)

Files: model.onnx, X.npy, S.npy, K.npy, Zb.npy (inputs) and expected_Y.npy,
expected_Z.npy (numpy's results, float64 arithmetic rounded to float32).
Needs the `onnx` and `numpy` Python packages (Debian: python3-onnx).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(38)


def rand(*shape):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(np.float32)


WEIGHTS = {"W": rand(8, 5), "Bias": rand(5), "W3": rand(5, 3), "W2": rand(5, 2)}


def build_model():
    f = TensorProto.FLOAT
    nodes = [
        helper.make_node("MatMul", ["X", "W"], ["H"], name="dense_matmul"),
        helper.make_node("Add", ["H", "Bias"], ["H2"], name="dense_bias"),
        helper.make_node("Relu", ["H2"], ["R"], name="dense_relu"),
        helper.make_node("Add", ["R", "S"], ["A"], name="skip_add"),
        helper.make_node("Relu", ["A"], ["A2"], name="skip_relu"),
        helper.make_node("Sigmoid", ["A2"], ["G"], name="gate"),
        helper.make_node("Unsqueeze", ["G", "axes"], ["G3"], name="batch"),
        helper.make_node("MatMul", ["G3", "W3"], ["M"], name="batched_matmul"),
        helper.make_node("Add", ["M", "K"], ["Y"], name="out_add"),
        helper.make_node("MatMul", ["A2", "W2"], ["Z0"], name="out_matmul"),
        helper.make_node("Add", ["Z0", "Zb"], ["Z1"], name="row_add"),
        helper.make_node("Relu", ["Z1"], ["Z"], name="out_relu"),
    ]
    inits = [numpy_helper.from_array(v, k) for k, v in WEIGHTS.items()]
    inits.append(numpy_helper.from_array(np.array([0], dtype=np.int64), "axes"))
    graph = helper.make_graph(
        nodes, "toy_device_example",
        inputs=[helper.make_tensor_value_info("X", f, [4, 8]),
                helper.make_tensor_value_info("S", f, [4, 5]),
                helper.make_tensor_value_info("K", f, [1, 4, 3]),
                helper.make_tensor_value_info("Zb", f, [2])],
        outputs=[helper.make_tensor_value_info("Y", f, [1, 4, 3]),
                 helper.make_tensor_value_info("Z", f, [4, 2])],
        initializer=inits)
    model = helper.make_model(graph, producer_name="singa-sdk-example",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def reference(x, s, k, zb):
    """numpy's Y and Z, computed in float64 and rounded once."""
    w = {n: v.astype(np.float64) for n, v in WEIGHTS.items()}
    r = np.maximum(x.astype(np.float64) @ w["W"] + w["Bias"], 0)
    a2 = np.maximum(r + s, 0)
    g = 1.0 / (1.0 + np.exp(-a2))
    y = g[None] @ w["W3"] + k
    z = np.maximum(a2 @ w["W2"] + zb, 0)
    return y.astype(np.float32), z.astype(np.float32)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_model.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    onnx.save(build_model(), os.path.join(out, "model.onnx"))
    x, s, k, zb = rand(4, 8), rand(4, 5), rand(1, 4, 3), rand(2)
    for name, v in (("X", x), ("S", s), ("K", k), ("Zb", zb)):
        np.save(os.path.join(out, name + ".npy"), v)
    y, z = reference(x, s, k, zb)
    np.save(os.path.join(out, "expected_Y.npy"), y)
    np.save(os.path.join(out, "expected_Z.npy"), z)


if __name__ == "__main__":
    main()
