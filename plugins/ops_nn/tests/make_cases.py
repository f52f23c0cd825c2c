#!/usr/bin/python3
"""Writes extra conformance cases for the ops_nn pack (ONNX node-test layout:
CASE/model.onnx + CASE/test_data_set_0/{input,output}_K.pb).

The ONNX node suite covers these ops thinly (no grouped, dilated, 1-D or 3-D
Conv, no ConvTranspose groups, no double or float16 data, no chunked im2col,
no per-channel quantized conv). Expected outputs come from PyTorch or plain
numpy, never from singa. Every case passes at the default tolerances.

    /usr/bin/python3 make_cases.py OUTDIR
    singa conformance OUTDIR
"""
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)
OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/ops_nn_cases"
NP2ONNX = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.float16: TensorProto.FLOAT16,
           np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8, np.int32: TensorProto.INT32,
           np.int64: TensorProto.INT64, np.bool_: TensorProto.BOOL}


def vi(name, arr):
    return helper.make_tensor_value_info(name, NP2ONNX[arr.dtype.type], list(arr.shape))


def case(name, op, inputs, outputs, opset, attrs=None, initializers=()):
    """inputs/outputs: lists of (name, array); names in `initializers` become
    initializers instead of graph inputs. A name of '' is an absent input."""
    node = helper.make_node(op, [n for n, _ in inputs], [n for n, _ in outputs], **(attrs or {}))
    graph_inputs = [vi(n, a) for n, a in inputs if n and n not in initializers]
    inits = [numpy_helper.from_array(a, n) for n, a in inputs if n in initializers]
    graph = helper.make_graph([node], name, graph_inputs, [vi(n, a) for n, a in outputs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    d = os.path.join(OUT, "test_nn_" + name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    k = 0
    for n, a in inputs:
        if n and n not in initializers:
            onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(d, "test_data_set_0", f"input_{k}.pb"))
            k += 1
    for k, (n, a) in enumerate(outputs):
        onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(d, "test_data_set_0", f"output_{k}.pb"))


def randn(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


# ------------------------------------------------------------------ Conv
def conv_ref(x, w, b, strides, pads, dils, group):
    r = x.ndim - 2
    # F.pad takes (last_begin, last_end, ..., first_begin, first_end)
    fp = []
    for i in reversed(range(r)):
        fp += [pads[i], pads[i + r]]
    xp = F.pad(t(x).double(), fp)
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[r]
    y = fn(xp, t(w).double(), None if b is None else t(b).double(), stride=strides, dilation=dils, groups=group)
    return y.numpy()


def conv_case(name, xs, ws, group=1, strides=None, pads=None, dils=None, bias=True, dtype=np.float32,
              auto_pad=None, const_w=False, opset=11, positive=False):
    r = len(xs) - 2
    strides = strides or [1] * r
    dils = dils or [1] * r
    if positive:
        # long float sums of mixed signs cancel; keep the relative error meaningful
        x = rng.random(xs).astype(dtype)
        w = rng.random(ws).astype(dtype)
    else:
        x = randn(*xs, dtype=dtype)
        w = randn(*ws, dtype=dtype)
    b = randn(ws[0], dtype=dtype) if bias else None
    attrs = {"group": group, "strides": strides, "dilations": dils}
    if auto_pad == "VALID":
        attrs["auto_pad"] = auto_pad
        pads = [0] * (2 * r)
    elif auto_pad:
        attrs["auto_pad"] = auto_pad
        pads = []
        for i in range(r):
            out = -(-xs[2 + i] // strides[i])
            total = max(0, (out - 1) * strides[i] + (ws[2 + i] - 1) * dils[i] + 1 - xs[2 + i])
            pads.append(total // 2 if auto_pad == "SAME_UPPER" else total - total // 2)
        pads += [0] * r
        for i in range(r):
            out = -(-xs[2 + i] // strides[i])
            total = max(0, (out - 1) * strides[i] + (ws[2 + i] - 1) * dils[i] + 1 - xs[2 + i])
            pads[r + i] = total - pads[i]
    else:
        pads = pads or [0] * (2 * r)
        attrs["pads"] = pads
    y = conv_ref(x.astype(np.float64), w.astype(np.float64), None if b is None else b.astype(np.float64),
                 strides, pads, dils, group).astype(dtype)
    ins = [("x", x), ("w", w)] + ([("b", b)] if bias else [])
    case(name, "Conv", ins, [("y", y)], opset, attrs, initializers=("w", "b") if const_w else ())


conv_case("conv1d_groups_dil_stride_bias", [2, 4, 15], [6, 2, 3], group=2, strides=[2], pads=[1, 2], dils=[2])
conv_case("conv2d_depthwise_bias", [1, 8, 9, 9], [8, 1, 3, 3], group=8, pads=[1, 1, 1, 1])
conv_case("conv2d_depthwise_mult2_stride", [2, 4, 10, 9], [8, 1, 3, 2], group=4, strides=[2, 1], pads=[0, 1, 1, 0])
conv_case("conv2d_groups_asym", [2, 6, 11, 10], [4, 3, 3, 2], group=2, strides=[2, 1], pads=[1, 0, 2, 1], dils=[1, 2])
conv_case("conv3d_stride_pads", [1, 3, 5, 6, 7], [4, 3, 2, 3, 2], strides=[1, 2, 1], pads=[0, 1, 1, 1, 0, 0])
conv_case("conv3d_groups_dil", [1, 4, 6, 6, 6], [4, 2, 2, 2, 2], group=2, dils=[2, 1, 2], bias=False)
conv_case("conv2d_pointwise", [2, 8, 5, 5], [4, 8, 1, 1])
conv_case("conv2d_pointwise_stride", [1, 8, 6, 6], [4, 8, 1, 1], strides=[2, 2])
conv_case("conv2d_same_upper_even", [1, 2, 8, 7], [3, 2, 4, 4], strides=[2, 2], auto_pad="SAME_UPPER")
conv_case("conv2d_same_lower_even", [1, 2, 8, 7], [3, 2, 4, 4], strides=[2, 2], auto_pad="SAME_LOWER")
conv_case("conv2d_valid", [1, 2, 8, 7], [3, 2, 3, 3], strides=[2, 2], auto_pad="VALID")
conv_case("conv2d_double", [2, 3, 7, 6], [5, 3, 3, 3], pads=[1, 1, 1, 1], dtype=np.float64)
conv_case("conv2d_double_depthwise", [1, 3, 7, 6], [3, 1, 3, 3], group=3, dtype=np.float64)
conv_case("conv2d_f16_const_w", [1, 3, 6, 6], [4, 3, 3, 3], pads=[1, 1, 1, 1], dtype=np.float16, const_w=True)
conv_case("conv2d_f16", [1, 3, 6, 6], [4, 3, 3, 3], dtype=np.float16)
conv_case("conv2d_const_w_opset1", [1, 3, 6, 6], [4, 3, 3, 3], const_w=True, opset=1)
conv_case("conv2d_large_chunked", [1, 32, 120, 120], [8, 32, 3, 3], pads=[1, 1, 1, 1], positive=True)
conv_case("conv2d_batch_groups_chunked", [2, 16, 90, 90], [8, 8, 3, 3], group=2, strides=[1, 2], positive=True)


# ---------------------------------------------------------- ConvTranspose
def convt_ref(x, w, b, strides, pads, dils, group, out_pad, out_shape=None):
    r = x.ndim - 2
    fn = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[r]
    full = fn(t(x).double(), t(w).double(), None, stride=strides, dilation=dils, groups=group).numpy()
    # Zero-extend by output_padding / to output_shape, then crop the pads.
    sl = [slice(None), slice(None)]
    size = []
    for i in range(r):
        f = full.shape[2 + i]
        out = out_shape[i] if out_shape else f + out_pad[i] - pads[i] - pads[i + r]
        size.append(out)
    ext = np.zeros(full.shape[:2] + tuple(max(full.shape[2 + i], pads[i] + size[i]) for i in range(r)))
    ext[tuple([slice(None), slice(None)] + [slice(0, full.shape[2 + i]) for i in range(r)])] = full
    sl += [slice(pads[i], pads[i] + size[i]) for i in range(r)]
    y = ext[tuple(sl)]
    if b is not None:
        y = y + b.reshape([1, -1] + [1] * r)
    return y


def convt_case(name, xs, ws, group=1, strides=None, pads=None, dils=None, out_pad=None, bias=True,
               dtype=np.float32, out_shape=None):
    r = len(xs) - 2
    strides = strides or [1] * r
    dils = dils or [1] * r
    pads = pads or [0] * (2 * r)
    out_pad = out_pad or [0] * r
    x = randn(*xs, dtype=dtype)
    w = randn(*ws, dtype=dtype)
    b = randn(ws[1] * group, dtype=dtype) if bias else None
    attrs = {"group": group, "strides": strides, "dilations": dils}
    if out_shape:
        attrs["output_shape"] = out_shape
        ref_pads = []
        for i in range(r):
            full = strides[i] * (xs[2 + i] - 1) + out_pad[i] + (ws[2 + i] - 1) * dils[i] + 1
            total = max(0, full - out_shape[i])
            ref_pads.append(total // 2)
        ref_pads += [0] * r
    else:
        attrs["pads"] = pads
        attrs["output_padding"] = out_pad
        ref_pads = pads
    y = convt_ref(x.astype(np.float64), w.astype(np.float64), None if b is None else b.astype(np.float64), strides,
                  ref_pads, dils, group, out_pad, out_shape).astype(dtype)
    ins = [("x", x), ("w", w)] + ([("b", b)] if bias else [])
    case(name, "ConvTranspose", ins, [("y", y)], 11, attrs)


convt_case("convt2d_groups_dil_pads_outpad", [2, 4, 5, 4], [4, 3, 3, 2], group=2, strides=[2, 3], pads=[1, 0, 2, 1],
           dils=[2, 1], out_pad=[1, 2])
convt_case("convt1d_bias", [1, 3, 7], [3, 2, 4], strides=[3])
convt_case("convt3d_bias", [1, 2, 3, 4, 3], [2, 3, 2, 3, 2], strides=[2, 1, 2], pads=[1, 0, 0, 0, 1, 1])
convt_case("convt2d_output_shape_grow", [1, 2, 3, 3], [2, 2, 3, 3], strides=[2, 2], out_shape=[9, 8])
convt_case("convt2d_output_shape_shrink", [1, 2, 4, 4], [2, 2, 3, 3], strides=[2, 2], out_shape=[7, 8])
convt_case("convt2d_double", [1, 2, 3, 3], [2, 3, 3, 3], strides=[2, 2], dtype=np.float64)
convt_case("convt2d_f16", [1, 2, 3, 3], [2, 3, 3, 3], strides=[2, 2], dtype=np.float16)


# -------------------------------------------------------------- pooling
def maxpool_case(name, xs, k, strides=None, pads=None, dils=None, ceil=False, indices=True, dtype=np.float32,
                 order=0, opset=12):
    r = len(k)
    strides = strides or [1] * r
    dils = dils or [1] * r
    pads = pads or [0] * (2 * r)
    assert pads[:r] == pads[r:], "torch pads symmetrically"
    if dtype in (np.int8, np.uint8):
        x = rng.integers(-100 if dtype == np.int8 else 0, 100, size=xs).astype(dtype)
    else:
        # distinct values so the argmax is unique
        x = rng.permutation(int(np.prod(xs))).reshape(xs).astype(dtype) / 7
    fn = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[r]
    y, idx = fn(t(x.astype(np.float64)), k, strides, pads[:r], dils, ceil_mode=ceil, return_indices=True)
    y = y.numpy().astype(dtype)
    idx = idx.numpy()
    spatial = xs[2:]
    if order == 1:
        coords = np.unravel_index(idx, spatial)
        idx = np.ravel_multi_index(coords, spatial, order="F")
    plane = int(np.prod(spatial))
    idx = idx + (np.arange(xs[0] * xs[1]) * plane).reshape(xs[0], xs[1], *([1] * r))
    attrs = {"kernel_shape": k, "strides": strides, "pads": pads}
    if opset >= 10:
        attrs.update(dilations=dils, ceil_mode=int(ceil))
    if order:
        attrs["storage_order"] = order
    outs = [("y", y)] + ([("i", idx.astype(np.int64))] if indices else [])
    case(name, "MaxPool", [("x", x)], outs, opset, attrs)


maxpool_case("maxpool3d_pads_strides_idx", [1, 2, 5, 6, 7], [2, 3, 2], strides=[2, 2, 1], pads=[1, 1, 0, 1, 1, 0])
maxpool_case("maxpool2d_dil_ceil_pads_idx", [2, 3, 9, 8], [3, 2], strides=[2, 2], pads=[1, 1, 1, 1], dils=[2, 1],
             ceil=True)
maxpool_case("maxpool1d_ceil", [2, 3, 10], [3], strides=[2], ceil=True)
maxpool_case("maxpool3d_colmajor_idx", [1, 2, 4, 5, 6], [2, 2, 3], strides=[2, 2, 2], order=1)
maxpool_case("maxpool2d_int8", [1, 2, 6, 6], [3, 3], strides=[2, 2], pads=[1, 1, 1, 1], dtype=np.int8,
             indices=False)
maxpool_case("maxpool2d_double", [1, 2, 6, 6], [2, 2], strides=[2, 2], dtype=np.float64)
maxpool_case("maxpool2d_opset8", [1, 2, 6, 6], [2, 2], strides=[2, 2], opset=8)


def avgpool_case(name, xs, k, strides=None, pads=None, ceil=False, include=0, dtype=np.float32):
    r = len(k)
    strides = strides or [1] * r
    pads = pads or [0] * (2 * r)
    x = randn(*xs, dtype=dtype)
    fn = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[r]
    y = fn(t(x.astype(np.float64)), k, strides, pads[:r], ceil_mode=ceil, count_include_pad=bool(include))
    attrs = {"kernel_shape": k, "strides": strides, "pads": pads, "ceil_mode": int(ceil), "count_include_pad": include}
    case(name, "AveragePool", [("x", x)], [("y", y.numpy().astype(dtype))], 11, attrs)


avgpool_case("avgpool2d_ceil_include_pad", [1, 2, 7, 8], [3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil=True,
             include=1)
avgpool_case("avgpool2d_ceil_exclude_pad", [1, 2, 7, 8], [3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil=True)
avgpool_case("avgpool3d_pads", [1, 2, 5, 6, 4], [2, 3, 2], strides=[1, 2, 2], pads=[1, 1, 0, 1, 1, 0])
avgpool_case("avgpool1d_stride_double", [2, 3, 11], [3], strides=[2], dtype=np.float64)


def lppool_case(name, xs, k, p, strides=None):
    r = len(k)
    strides = strides or [1] * r
    x = randn(*xs)
    fn = {1: F.lp_pool1d, 2: F.lp_pool2d}[r]
    y = fn(t(np.abs(x).astype(np.float64)), p, k if r > 1 else k[0], strides if r > 1 else strides[0])  # torch's lp_pool does not take |x|
    case(name, "LpPool", [("x", x)], [("y", y.numpy().astype(np.float32))], 11,
         {"kernel_shape": k, "strides": strides, "p": p})


lppool_case("lppool2d_p2", [1, 2, 6, 6], [2, 3], 2, strides=[2, 1])
lppool_case("lppool1d_p3", [1, 2, 9], [3], 3, strides=[2])

x = randn(2, 3, 4, 5, 3)
case("globallppool_p3", "GlobalLpPool", [("x", x)],
     [("y", ((np.abs(x.astype(np.float64)) ** 3).sum(axis=(2, 3, 4), keepdims=True) ** (1 / 3)).astype(np.float32))],
     2, {"p": 3})
x = randn(2, 3, 7)
case("globalmaxpool_1d", "GlobalMaxPool", [("x", x)], [("y", x.max(axis=2, keepdims=True))], 1)
x = randn(2, 3, 3, 4, 5, dtype=np.float64)
case("globalavgpool_3d_double", "GlobalAveragePool", [("x", x)], [("y", x.mean(axis=(2, 3, 4), keepdims=True))], 1)

# -------------------------------------------------------- normalisation
x = randn(2, 3, 4)
s, b, m, v = randn(3, 4), randn(3, 4), randn(3, 4), np.abs(randn(3, 4)) + 0.5
case("batchnorm_opset7_not_spatial", "BatchNormalization", [("x", x), ("s", s), ("b", b), ("m", m), ("v", v)],
     [("y", ((x - m) / np.sqrt(v + 1e-5) * s + b).astype(np.float32))], 7, {"spatial": 0})
x = randn(2, 3, 4, 5, dtype=np.float16)
s, b, m, v = randn(3), randn(3), randn(3), np.abs(randn(3)) + 0.5
r4 = lambda a: a.reshape(1, 3, 1, 1).astype(np.float64)
y = ((x.astype(np.float64) - r4(m)) / np.sqrt(r4(v) + 1e-5) * r4(s) + r4(b)).astype(np.float16)
case("batchnorm_f16_x_f32_params_opset15", "BatchNormalization",
     [("x", x), ("s", s), ("b", b), ("m", m), ("v", v)], [("y", y)], 15)
x = randn(4, 2, 3, dtype=np.float64)
s, b, m, v = randn(2, dtype=np.float64), randn(2, dtype=np.float64), randn(2, dtype=np.float64), np.abs(randn(2, dtype=np.float64))
bm, bv = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
r3 = lambda a: a.reshape(1, 2, 1)
case("batchnorm_training_double_opset14", "BatchNormalization",
     [("x", x), ("s", s), ("b", b), ("m", m), ("v", v)],
     [("y", (x - r3(bm)) / np.sqrt(r3(bv) + 1e-5) * r3(s) + r3(b)), ("rm", m * 0.8 + bm * 0.2), ("rv", v * 0.8 + bv * 0.2)],
     14, {"training_mode": 1, "momentum": 0.8})

x = randn(2, 3, 4, 2, 3, dtype=np.float64)
s, b = randn(3, dtype=np.float64), randn(3, dtype=np.float64)
y = F.instance_norm(t(x), weight=t(s), bias=t(b), eps=1e-3).numpy()
case("instancenorm_3d_double", "InstanceNormalization", [("x", x), ("s", s), ("b", b)], [("y", y)], 6,
     {"epsilon": 1e-3})

x = randn(2, 6, 3, 4)
# ONNX's window is [c - floor((size-1)/2), c + ceil((size-1)/2)]; torch centres
# even sizes the other way, so numpy it is.
sq = np.zeros_like(x, dtype=np.float64)
for c in range(6):
    sq[:, c] = (x[:, max(0, c - 1):min(6, c + 3)].astype(np.float64) ** 2).sum(axis=1)
y = (x / (1.5 + 1e-2 / 4 * sq) ** 0.6).astype(np.float32)
case("lrn_even_size", "LRN", [("x", x)], [("y", y)], 13, {"size": 4, "alpha": 1e-2, "beta": 0.6, "bias": 1.5})

x = randn(3, 4, 5, dtype=np.float64)
s = randn(4, 5, dtype=np.float64)
mu = x.mean(axis=(1, 2), keepdims=True)
inv = 1 / np.sqrt(x.var(axis=(1, 2), keepdims=True) + 1e-5)
case("layernorm_double_no_bias", "LayerNormalization", [("x", x), ("s", s)],
     [("y", (x - mu) * inv * s), ("mean", mu.astype(np.float32)), ("inv", inv.astype(np.float32))], 17, {"axis": 1})

# ---------------------------------------------------------- activations
x = randn(3, 4, 5, dtype=np.float64)
case("elu_double", "Elu", [("x", x)], [("y", np.where(x < 0, 0.5 * np.expm1(x), x))], 6, {"alpha": 0.5})
x = randn(3, 4, 5, dtype=np.float16)
case("sigmoid_f16", "Sigmoid", [("x", x)], [("y", (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float16))], 13)
x = (randn(3, 4, 5) * 30).astype(np.float32)
case("softplus_large", "Softplus", [("x", x)], [("y", np.logaddexp(0, x.astype(np.float64)).astype(np.float32))], 1)
x = rng.integers(-50, 50, size=(3, 7)).astype(np.int32)
case("relu_int32_opset14", "Relu", [("x", x)], [("y", np.maximum(x, 0))], 14)
x = randn(4, 6)
case("clip_opset6_attrs", "Clip", [("x", x)], [("y", np.clip(x, -0.3, 0.4))], 6, {"min": -0.3, "max": 0.4})
x = randn(4, 6)
case("clip_opset11_min_only", "Clip", [("x", x), ("lo", np.array(-0.2, np.float32))],
     [("y", np.maximum(x, -0.2).astype(np.float32))], 11)
x = rng.integers(-50, 50, size=(3, 7)).astype(np.int32)
case("clip_int32_max_only", "Clip", [("x", x), ("", None), ("hi", np.array(10, np.int32))],
     [("y", np.minimum(x, 10))], 12)
x = randn(2, 3, 4, 5)
sl = randn(3, 1, 1)
case("prelu_channel_slope", "PRelu", [("x", x), ("s", sl)], [("y", np.where(x < 0, x * sl, x))], 9)
x = randn(3, 4)
case("dropout_opset7_mask_T", "Dropout", [("x", x)], [("y", x), ("m", np.ones_like(x))], 7, {"ratio": 0.3})
case("dropout_opset10_mask_bool", "Dropout", [("x", x)], [("y", x), ("m", np.ones(x.shape, np.bool_))], 10)
case("dropout_opset13_not_training", "Dropout",
     [("x", x), ("r", np.array(0.7, np.float32)), ("tm", np.array(False))],
     [("y", x), ("m", np.ones(x.shape, np.bool_))], 13)

# ------------------------------------------------------- 8-bit convolutions
xq = rng.integers(0, 256, size=(2, 4, 7, 6)).astype(np.uint8)
wq = rng.integers(-128, 128, size=(6, 2, 3, 2)).astype(np.int8)
xz, wz = np.array(131, np.uint8), rng.integers(-5, 5, size=6).astype(np.int8)
acc = conv_ref(xq.astype(np.float64) - 131, wq.astype(np.float64) - wz.reshape(6, 1, 1, 1), None, [2, 1],
               [1, 0, 1, 1], [1, 2], 2)
case("convinteger_groups_int8w_perchannel_zp", "ConvInteger", [("x", xq), ("w", wq), ("xz", xz), ("wz", wz)],
     [("y", acc.astype(np.int32))], 10, {"group": 2, "strides": [2, 1], "pads": [1, 0, 1, 1], "dilations": [1, 2]})
xq = rng.integers(-128, 128, size=(1, 3, 6, 6)).astype(np.int8)
wq = rng.integers(-128, 128, size=(4, 3, 3, 3)).astype(np.int8)
xs, xz = np.array(0.02, np.float32), np.array(-3, np.int8)
ws, wz = (rng.random(4) * 0.01 + 0.001).astype(np.float32), np.zeros(4, np.int8)
ys_, yz = np.array(0.5, np.float32), np.array(7, np.int8)
bq = rng.integers(-2000, 2000, size=4).astype(np.int32)
acc = conv_ref(xq.astype(np.float64) + 3, wq.astype(np.float64), None, [1, 1], [1, 1, 1, 1], [1, 1], 1)
real = (acc + bq.reshape(1, 4, 1, 1)) * (float(xs) * ws.astype(np.float64).reshape(1, 4, 1, 1) / float(ys_))
yq = np.clip(np.rint(real) + 7, -128, 127).astype(np.int8)
case("qlinearconv_int8_perchannel_bias", "QLinearConv",
     [("x", xq), ("xs", xs), ("xz", xz), ("w", wq), ("ws", ws), ("wz", wz), ("ys", ys_), ("yz", yz), ("b", bq)],
     [("y", yq)], 10, {"pads": [1, 1, 1, 1]})

# ---------------------------------------------------------- misc nn ops
x = randn(2, 3, 4, 5)
mu = x.astype(np.float64).mean(axis=(1, 3), keepdims=True)
sd = x.astype(np.float64).std(axis=(1, 3), keepdims=True)
case("mvn_axes_1_3", "MeanVarianceNormalization", [("x", x)], [("y", ((x - mu) / (sd + 1e-9)).astype(np.float32))],
     13, {"axes": [1, 3]})
x = rng.integers(-10, 10, size=(4, 5)).astype(np.int32)
case("shrink_int32", "Shrink", [("x", x)], [("y", np.where(x < -2, x + 1, np.where(x > 2, x - 1, 0)).astype(np.int32))],
     9, {"lambd": 2.0, "bias": 1.0})
src = rng.permutation(2 * 3 * 4 * 6 * 4).reshape(2, 3, 4, 6, 4).astype(np.float32)
pooled, idx = F.max_pool3d(t(src), 2, 2, return_indices=True)
plane = 4 * 6 * 4
flat = idx.numpy() + (np.arange(6) * plane).reshape(2, 3, 1, 1, 1)
unpooled = F.max_unpool3d(pooled, idx, 2, 2).numpy()
case("maxunpool3d", "MaxUnpool", [("x", pooled.numpy()), ("i", flat.astype(np.int64))], [("y", unpooled)], 11,
     {"kernel_shape": [2, 2, 2], "strides": [2, 2, 2]})
print("cases written to", OUT)
