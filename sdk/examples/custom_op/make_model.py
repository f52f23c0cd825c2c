#!/usr/bin/python3
"""Writes the worked example's model and data into OUT_DIR:

  model.onnx       D = Relu(ScaledAdd(A, B, alpha=0.5)), ScaledAdd from the
                   com.example domain (opset 1), Relu from the default domain
  A.npy, B.npy     inputs, float32 [2, 3]
  expected_D.npy   what numpy computes for D
  train_model.onnx D = Relu(ScaledAdd(A, W, alpha=0.5)) in float64, with W
                   an initializer: the model train_scaled_add.cpp trains

Needs the `onnx` and `numpy` Python packages (Debian: python3-onnx).
"""
import os
import sys

import numpy as np
import onnx
import onnx.numpy_helper
from onnx import TensorProto, helper

ALPHA = 0.5


def build_model():
    scaled_add = helper.make_node("ScaledAdd", ["A", "B"], ["C"], name="scaled_add",
                                  domain="com.example", alpha=ALPHA)
    relu = helper.make_node("Relu", ["C"], ["D"], name="relu")
    graph = helper.make_graph(
        [scaled_add, relu], "custom_op_example",
        inputs=[helper.make_tensor_value_info("A", TensorProto.FLOAT, [2, 3]),
                helper.make_tensor_value_info("B", TensorProto.FLOAT, [2, 3])],
        outputs=[helper.make_tensor_value_info("D", TensorProto.FLOAT, [2, 3])])
    # A custom domain needs its own opset import, or ONNX tools reject the node.
    model = helper.make_model(graph, producer_name="singa-sdk-example",
                              opset_imports=[helper.make_opsetid("", 13),
                                             helper.make_opsetid("com.example", 1)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def build_train_model():
    """The training model: W is a parameter that reaches D only through ScaledAdd."""
    w = np.array([[0.5, -1.0, 2.0], [1.0, 0.25, -0.5]], dtype=np.float64)
    scaled_add = helper.make_node("ScaledAdd", ["A", "W"], ["C"], name="scaled_add",
                                  domain="com.example", alpha=ALPHA)
    relu = helper.make_node("Relu", ["C"], ["D"], name="relu")
    graph = helper.make_graph(
        [scaled_add, relu], "custom_op_training",
        inputs=[helper.make_tensor_value_info("A", TensorProto.DOUBLE, [2, 3])],
        outputs=[helper.make_tensor_value_info("D", TensorProto.DOUBLE, [2, 3])],
        initializer=[onnx.numpy_helper.from_array(w, "W")])
    model = helper.make_model(graph, producer_name="singa-sdk-example",
                              opset_imports=[helper.make_opsetid("", 13),
                                             helper.make_opsetid("com.example", 1)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_model.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    onnx.save(build_model(), os.path.join(out, "model.onnx"))
    a = np.array([[1.0, -2.0, 3.0], [0.25, -0.5, 4.0]], dtype=np.float32)
    b = np.array([[2.0, 6.0, -1.0], [1.5, 0.5, -4.0]], dtype=np.float32)
    np.save(os.path.join(out, "A.npy"), a)
    np.save(os.path.join(out, "B.npy"), b)
    np.save(os.path.join(out, "expected_D.npy"), np.maximum(a + np.float32(ALPHA) * b, 0))
    onnx.save(build_train_model(), os.path.join(out, "train_model.onnx"))


if __name__ == "__main__":
    main()
