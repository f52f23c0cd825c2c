#!/usr/bin/python3
"""Writes gradient-check cases the ONNX node suites lack (node-test layout:
CASE/model.onnx + CASE/test_data_set_0/{input,output}_K.pb), for the rules in
plugins/*/grad_builders_more.cpp: zeros inside ReduceProd and CumProd groups
(where dividing by the input would fail), singular matrices for Det, Celu below 0, and an
all-ignored NegativeLogLikelihoodLoss batch. Expected outputs come from numpy.

    /usr/bin/python3 tests/conformance/extra/make_grad_cases.py OUTDIR   (meson test gradients_extra)
    singa conformance --gradients OUTDIR
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/misc_grad_cases"
TYPES = {np.float64: TensorProto.DOUBLE, np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64}


def case(name, op, inputs, outputs, opset, **attrs):
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    ins = [f"x{i}" for i in range(len(inputs))]
    outs = [f"y{i}" for i in range(len(outputs))]
    node = helper.make_node(op, ins, outs, **attrs)
    vi = lambda n, a: helper.make_tensor_value_info(n, TYPES[a.dtype.type], list(a.shape))
    g = helper.make_graph([node], name, [vi(n, a) for n, a in zip(ins, inputs)], [vi(n, a) for n, a in zip(outs, outputs)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(m.SerializeToString())
    for kind, arrs in (("input", inputs), ("output", outputs)):
        for i, a in enumerate(arrs):
            with open(os.path.join(d, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a).SerializeToString())


rng = np.random.default_rng(3)
# ReduceProd with one zero in some groups and two in another.
x = rng.uniform(0.5, 1.5, (3, 4, 2))
x[0, 1, 0] = 0
x[1, 0, 1] = x[1, 3, 1] = 0
case("grad_reduce_prod_zeros_axis1", "ReduceProd", [x], [np.prod(x, axis=1, keepdims=True)], 13, axes=[1])
case("grad_reduce_prod_zeros_all", "ReduceProd", [x[2:]], [np.prod(x[2:], keepdims=True)], 13)
case("grad_reduce_prod_zeros_axes_input", "ReduceProd", [x, np.array([0, 2], np.int64)],
     [np.prod(x, axis=(0, 2))], 18, keepdims=0)


def cumprod(a, axis, exclusive, reverse):
    a = np.flip(a, axis) if reverse else a
    if exclusive:
        pad = [(0, 0)] * a.ndim
        pad[axis] = (1, 0)
        a = np.delete(np.pad(a, pad, constant_values=1), -1, axis)
    y = np.cumprod(a, axis)
    return np.flip(y, axis) if reverse else y


c = rng.uniform(0.5, 1.5, (3, 5))
c[0, 2] = 0
c[1, 1] = c[1, 3] = 0
for ex in (0, 1):
    for rev in (0, 1):
        case(f"grad_cumprod_zeros_ex{ex}_rev{rev}", "CumProd", [c, np.array(1, np.int64)], [cumprod(c, 1, ex, rev)], 26,
             exclusive=ex, reverse=rev)
case("grad_cumprod_zeros_axis0", "CumProd", [c.T.copy(), np.array(0, np.int64)], [cumprod(c.T, 0, 0, 0)], 26)

# Det of singular matrices (rank n-1 and rank n-2) and of a 1x1 batch.
s = rng.uniform(-1, 1, (2, 4, 4))
s[0, 3] = s[0, 0] + 2 * s[0, 1]
s[1, 2] = s[1, 0]
s[1, 3] = s[1, 1]
case("grad_det_singular", "Det", [s], [np.linalg.det(s)], 11)
one = rng.uniform(-1, 1, (3, 1, 1))
case("grad_det_1x1", "Det", [one], [np.linalg.det(one)], 11)

# NegativeLogLikelihoodLoss: weights and ignore_index with every reduction,
# including a batch whose items are all ignored for "sum".
lp = rng.uniform(-3, 0, (3, 4, 2))
t = np.array([[1, 2], [2, 0], [3, 2]], np.int64)
w = rng.uniform(0.5, 2, 4)
keep = t != 2
picked = -np.take_along_axis(lp, t[:, None, :], 1)[:, 0, :] * w[t] * keep
for red in ("none", "sum", "mean"):
    ref = picked if red == "none" else picked.sum() if red == "sum" else picked.sum() / (w[t] * keep).sum()
    case(f"grad_nllloss_weight_ii_{red}", "NegativeLogLikelihoodLoss", [lp, t, w], [np.asarray(ref)], 13,
         reduction=red, ignore_index=2)
case("grad_nllloss_all_ignored_sum", "NegativeLogLikelihoodLoss", [lp, np.full_like(t, 2)], [np.asarray(0.0)], 13,
     reduction="sum", ignore_index=2)

# Mod (fmod=1) with broadcasting of the divisor.
a = rng.uniform(-5, 5, (3, 4))
b = rng.uniform(0.7, 2, (4,)) * np.array([1, -1, 1, -1])
case("grad_mod_fmod_broadcast", "Mod", [a, b], [np.fmod(a, b)], 13, fmod=1)

# Celu's negative branch (the suite's inputs are all positive), float32 before opset 28.
z = rng.uniform(-3, 3, (4, 5)).astype(np.float32)
case("grad_celu_negative", "Celu", [z], [np.where(z > 0, z, 1.5 * np.expm1(z / 1.5)).astype(np.float32)], 12, alpha=1.5)
print("wrote cases to", OUT)
