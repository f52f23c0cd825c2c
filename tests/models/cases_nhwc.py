"""Channels-last (NHWC) graphs in the shape tf2onnx gives TensorFlow/Keras models.

tf2onnx has no NHWC convolution to map onto, so it wraps every Conv in Transpose(0,3,1,2) /
Transpose(0,2,3,1) and keeps the element-wise work (bias adds, folded batch norm, ReLU6) in
NHWC; after its optimiser, many graphs instead transpose the input once and run NCHW from there.
Without tf2onnx (no PyPI here) the graphs are written with onnx.helper in that style, and the
expected outputs come from PyTorch's functional ops on the same weights, not from the graph.
"""

import numpy as np
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

from export_helpers import write_proto_case

TO_NCHW, TO_NHWC = [0, 3, 1, 2], [0, 2, 3, 1]


class GraphWriter:
    """Collects nodes and initializers; weights are drawn here and kept for the reference."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.w = [], [], {}

    def weight(self, name, shape, scale=None, values=None):
        if values is None:
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
            scale = np.sqrt(2.0 / fan_in) if scale is None else scale
            values = self.rng.standard_normal(shape) * scale
        values = np.asarray(values)
        if values.dtype.kind == "f":
            values = values.astype(np.float32)
        self.inits.append(numpy_helper.from_array(values, name))
        self.w[name] = torch.from_numpy(values)
        return name

    def node(self, op, inputs, out, **attrs):
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def model(self, name, inputs, outputs, opset):
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        # tf2onnx stamps its own producer; the runtime must not care.
        return helper.make_model(graph, producer_name="tf2onnx-style",
                                 opset_imports=[helper.make_opsetid("", opset)])


def _squeeze(g, x, axes, out, opset):
    if opset >= 13:
        return g.node("Squeeze", [x, g.weight(out + "/axes", None, values=np.array(axes, np.int64))],
                      out)
    return g.node("Squeeze", [x], out, axes=axes)


def transposed_convnet(opset):
    """Every Conv wrapped in transposes; bias, folded batch norm and ReLU6 applied in NHWC."""
    g = GraphWriter(100 + opset)
    x = "input_1"
    t = g.node("Transpose", [x], "conv1/t_in", perm=TO_NCHW)
    c = g.node("Conv", [t, g.weight("conv1/W", [16, 3, 3, 3])], "conv1/conv", pads=[1, 1, 1, 1])
    n = g.node("Transpose", [c], "conv1/t_out", perm=TO_NHWC)
    a = g.node("Add", [n, g.weight("conv1/bias", [16], 0.1)], "conv1/BiasAdd")
    r = g.node("Relu", [a], "conv1/Relu")
    t = g.node("Transpose", [r], "dw/t_in", perm=TO_NCHW)
    # Depthwise 3x3, stride 2, TensorFlow SAME on an even size: the one padding row/column goes
    # at the bottom/right only.
    c = g.node("Conv", [t, g.weight("dw/W", [16, 1, 3, 3])], "dw/conv", group=16,
               strides=[2, 2], pads=[0, 0, 1, 1], kernel_shape=[3, 3])
    n = g.node("Transpose", [c], "dw/t_out", perm=TO_NHWC)
    m = g.node("Mul", [n, g.weight("bn/scale", None, values=g.rng.uniform(0.5, 1.5, 16))],
               "bn/mul")
    a = g.node("Add", [m, g.weight("bn/shift", [16], 0.2)], "bn/add")
    lo = g.weight("relu6/min", None, values=np.array(0.0, np.float32))
    hi = g.weight("relu6/max", None, values=np.array(6.0, np.float32))
    r6 = g.node("Clip", [a, lo, hi], "relu6")
    t = g.node("Transpose", [r6], "pw/t_in", perm=TO_NCHW)
    c = g.node("Conv", [t, g.weight("pw/W", [24, 16, 1, 1]), g.weight("pw/b", [24], 0.1)],
               "pw/conv")
    feats = g.node("Transpose", [c], "features", perm=TO_NHWC)
    pooled = g.node("ReduceMean", [feats], "pool/mean", axes=[1, 2], keepdims=1)
    flat = _squeeze(g, pooled, [1, 2], "pool/squeeze", opset)
    mm = g.node("MatMul", [flat, g.weight("dense/W", [24, 10], 0.3)], "dense/MatMul")
    logits = g.node("Add", [mm, g.weight("dense/b", [10], 0.1)], "dense/BiasAdd")
    g.node("Softmax", [logits], "probs", axis=1)

    batch = "unk__0"
    proto = g.model("transposed_convnet",
                    [helper.make_tensor_value_info(x, TensorProto.FLOAT, [batch, 32, 32, 3])],
                    [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [batch, 10]),
                     helper.make_tensor_value_info("features", TensorProto.FLOAT,
                                                   [batch, 16, 16, 24])], opset)
    w = g.w

    def reference(image):
        y = F.conv2d(image.permute(0, 3, 1, 2), w["conv1/W"], padding=1).permute(0, 2, 3, 1)
        y = torch.relu(y + w["conv1/bias"]).permute(0, 3, 1, 2)
        y = F.conv2d(F.pad(y, (0, 1, 0, 1)), w["dw/W"], stride=2, groups=16).permute(0, 2, 3, 1)
        y = torch.clamp(y * w["bn/scale"] + w["bn/shift"], 0.0, 6.0).permute(0, 3, 1, 2)
        feats = F.conv2d(y, w["pw/W"], w["pw/b"]).permute(0, 2, 3, 1)
        logits = feats.mean(dim=(1, 2)) @ w["dense/W"] + w["dense/b"]
        return logits.softmax(dim=1), feats

    return proto, reference


def input_transposed_convnet(opset):
    """One input Transpose, then NCHW: SAME_UPPER strided Conv, BatchNormalization, LeakyRelu,
    a dilated Conv and MaxPool, and a Transpose back so the Keras Flatten order (H, W, C) holds."""
    g = GraphWriter(200 + opset)
    x = "input_1"
    t = g.node("Transpose", [x], "to_nchw", perm=TO_NCHW)
    c = g.node("Conv", [t, g.weight("c1/W", [8, 3, 5, 5]), g.weight("c1/b", [8], 0.1)], "c1",
               strides=[2, 2], auto_pad="SAME_UPPER")
    stats = dict(scale=g.rng.uniform(0.5, 1.5, 8), bias=g.rng.normal(0, 0.2, 8),
                 mean=g.rng.normal(0, 0.3, 8), var=g.rng.uniform(0.5, 2.0, 8))
    bn_in = [g.weight(f"bn/{k}", None, values=v) for k, v in stats.items()]
    bn = g.node("BatchNormalization", [c] + bn_in, "bn", epsilon=1e-3)
    r = g.node("LeakyRelu", [bn], "leaky", alpha=0.2)
    c = g.node("Conv", [r, g.weight("c2/W", [12, 8, 3, 3]), g.weight("c2/b", [12], 0.1)], "c2",
               dilations=[2, 2], pads=[2, 2, 2, 2])
    p = g.node("MaxPool", [c], "pool", kernel_shape=[2, 2], strides=[2, 2])
    back = g.node("Transpose", [p], "to_nhwc", perm=TO_NHWC)
    flat = g.node("Reshape", [back, g.weight("flatten/shape", None,
                                              values=np.array([-1, 7 * 7 * 12], np.int64))],
                  "flatten")
    mm = g.node("MatMul", [flat, g.weight("dense/W", [588, 6], 0.06)], "dense/MatMul")
    logits = g.node("Add", [mm, g.weight("dense/b", [6], 0.1)], "dense/BiasAdd")
    g.node("Sigmoid", [logits], "scores")

    proto = g.model("input_transposed_convnet",
                    [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["N", 28, 28, 3])],
                    [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["N", 6])], opset)
    w = g.w

    def reference(image):
        # SAME_UPPER, 28 -> 14 with a 5x5 kernel at stride 2: 3 padding rows, 1 above, 2 below.
        y = F.conv2d(F.pad(image.permute(0, 3, 1, 2), (1, 2, 1, 2)), w["c1/W"], w["c1/b"],
                     stride=2)
        y = F.batch_norm(y, w["bn/mean"], w["bn/var"], w["bn/scale"], w["bn/bias"], eps=1e-3)
        y = F.leaky_relu(y, 0.2)
        y = F.max_pool2d(F.conv2d(y, w["c2/W"], w["c2/b"], padding=2, dilation=2), 2)
        flat = y.permute(0, 2, 3, 1).reshape(y.shape[0], -1)
        return torch.sigmoid(flat @ w["dense/W"] + w["dense/b"])

    return proto, reference


def case_transposed(root, opset):
    proto, reference = transposed_convnet(opset)
    gen = torch.Generator().manual_seed(opset)
    # Batch 2 then batch 1 through the symbolic batch axis tf2onnx writes (unk__0).
    data_sets = [[torch.randn(2, 32, 32, 3, generator=gen)], [torch.randn(1, 32, 32, 3, generator=gen)]]
    write_proto_case(root, f"nhwc_transposed_convnet_opset{opset}", proto, data_sets, reference)


def case_input_transposed(root, opset):
    proto, reference = input_transposed_convnet(opset)
    gen = torch.Generator().manual_seed(opset)
    data_sets = [[torch.randn(3, 28, 28, 3, generator=gen)]]
    write_proto_case(root, f"nhwc_input_transposed_opset{opset}", proto, data_sets, reference)


CASES = {
    "nhwc_transposed_convnet_opset11": lambda root: case_transposed(root, 11),
    "nhwc_transposed_convnet_opset17": lambda root: case_transposed(root, 17),
    "nhwc_input_transposed_opset13": lambda root: case_input_transposed(root, 13),
}
