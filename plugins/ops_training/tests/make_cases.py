#!/usr/bin/python3
"""Writes extra conformance cases for the ops_training pack (ONNX node-test
layout: CASE/model.onnx + CASE/test_data_set_0/{input,output}_K.pb).

The ONNX node suite has only float32 cases with T = 0 or one fixed step; these
add double data, several tensors per node, decay and both momentum modes at
T = 0 and T > 0. Expected outputs follow the operators' pseudo code in numpy.

    /usr/bin/python3 make_cases.py OUTDIR
    singa conformance OUTDIR/*
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/ops_training_cases"
DOMAIN = "ai.onnx.preview.training"
NP2ONNX = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.int64: TensorProto.INT64}


def save(name, node, inputs, outputs):
    d = os.path.join(OUT, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    vi = lambda k, v: helper.make_tensor_value_info(k, NP2ONNX[v.dtype.type], list(v.shape))
    graph = helper.make_graph([node], name, [vi(k, v) for k, v in inputs], [vi(k, v) for k, v in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)])
    onnx.save(model, os.path.join(d, "model.onnx"))
    for kind, values in (("input", inputs), ("output", outputs)):
        for i, (k, v) in enumerate(values):
            with open(os.path.join(d, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(v, k).SerializeToString())


rng = np.random.default_rng(1)
for dt in (np.float32, np.float64):
    tag = np.dtype(dt).name
    r = np.array(0.1, dt)
    x1, g1, v1, h1 = [rng.standard_normal((3, 2)).astype(dt) for _ in range(4)]
    x2, g2, v2, h2 = [rng.standard_normal((4,)).astype(dt) for _ in range(4)]
    h1, h2 = np.abs(h1), np.abs(h2)

    for tv in (0, 3):
        t = np.array(tv, np.int64)

        def adagrad(x, g, h, nc=0.01, eps=1e-6, decay=0.1):
            rr = r / (1 + t * decay)
            gr = nc * x + g
            hn = h + gr * gr
            return (x - rr * gr / (np.sqrt(hn) + eps)).astype(dt), hn.astype(dt)

        (a1, b1), (a2, b2) = adagrad(x1, g1, h1), adagrad(x2, g2, h2)
        node = helper.make_node("Adagrad", ["R", "T", "X1", "X2", "G1", "G2", "H1", "H2"], ["X1n", "X2n", "H1n", "H2n"],
                                domain=DOMAIN, norm_coefficient=0.01, epsilon=1e-6, decay_factor=0.1)
        save(f"adagrad_two_{tv}_{tag}", node,
             [("R", r), ("T", t), ("X1", x1), ("X2", x2), ("G1", g1), ("G2", g2), ("H1", h1), ("H2", h2)],
             [("X1n", a1), ("X2n", a2), ("H1n", b1), ("H2n", b2)])

        def adam(x, g, v, h, al=0.9, be=0.99, eps=1e-3, nc=0.02, post=0.01):
            gr = nc * x + g
            vn = al * v + (1 - al) * gr
            hn = be * h + (1 - be) * gr * gr
            ra = r * np.sqrt(1 - be ** tv) / (1 - al ** tv) if tv > 0 else r
            xn = (1 - post) * (x - ra * vn / (np.sqrt(hn) + eps))
            return xn.astype(dt), vn.astype(dt), hn.astype(dt)

        (a1, b1, c1), (a2, b2, c2) = adam(x1, g1, v1, h1), adam(x2, g2, v2, h2)
        node = helper.make_node("Adam", ["R", "T", "X1", "X2", "G1", "G2", "V1", "V2", "H1", "H2"],
                                ["X1n", "X2n", "V1n", "V2n", "H1n", "H2n"], domain=DOMAIN, alpha=0.9, beta=0.99,
                                epsilon=1e-3, norm_coefficient=0.02, norm_coefficient_post=0.01)
        save(f"adam_two_{tv}_{tag}", node,
             [("R", r), ("T", t), ("X1", x1), ("X2", x2), ("G1", g1), ("G2", g2), ("V1", v1), ("V2", v2), ("H1", h1),
              ("H2", h2)],
             [("X1n", a1), ("X2n", a2), ("V1n", b1), ("V2n", b2), ("H1n", c1), ("H2n", c2)])

        for mode in ("standard", "nesterov"):
            al, be, nc = 0.9, 0.7, 0.02
            gr = nc * x1 + g1
            vn = al * v1 + (be if tv > 0 else 1.0) * gr
            xn = x1 - r * (gr + al * vn) if mode == "nesterov" else x1 - r * vn
            node = helper.make_node("Momentum", ["R", "T", "X", "G", "V"], ["Xn", "Vn"], domain=DOMAIN, alpha=al,
                                    beta=be, norm_coefficient=nc, mode=mode)
            save(f"momentum_{mode}_{tv}_{tag}", node, [("R", r), ("T", t), ("X", x1), ("G", g1), ("V", v1)],
                 [("Xn", xn.astype(dt)), ("Vn", vn.astype(dt))])
print("wrote cases to", OUT)
