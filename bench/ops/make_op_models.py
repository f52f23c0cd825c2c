#!/usr/bin/python3
"""One-node ONNX models for the op matrix: every op singa runs that ONNX's node
suite covers, at realistic sizes, for timing singa against ONNX Runtime.

    /usr/bin/python3 bench/ops/make_op_models.py [OUT_DIR] [--ops Add,Softmax,...] [--quick]

writes OUT_DIR/<row>.onnx (default OUT_DIR: $TMPDIR/singa_op_matrix, outside the
tree) and OUT_DIR/manifest.tsv, one line per model: row name, op type, dtype,
shape, path. bench/ops/run.sh reads the manifest.

Sizes: elementwise ops at 1x64x56x56 and 8x256x28x28 (a ResNet stage), MatMul,
Gemm, Softmax and LayerNorm at BERT-base shapes (seq 128, hidden 768, 12 heads).
--quick keeps only the first (smaller) shape of each op and float32.

Only real graph inputs are float32 or float64 (what both `singa bench` and
ort_op.js fill with random values); indices, shapes and weights are
initializers, which neither runtime can fold away since the data input is not
constant. `singa bench` makes no random float16 input, so float16 rows take a
float32 input through a Cast first; both runtimes pay for that Cast, and the
row's name says "f16c".

The models use onnx.helper only (no checker: Debian's onnx knows opset 17 at
most, the newest ops here are from opset 23).
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

F32, F16, F64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE
NP = {F32: np.float32, F16: np.float16, F64: np.float64}
TAG = {F32: "f32", F16: "f16c", F64: "f64"}

ACT_SMALL, ACT_BIG = (1, 64, 56, 56), (8, 256, 28, 28)
ELEM_SHAPES = [ACT_SMALL, ACT_BIG]
BERT_TOK = (1, 128, 768)  # [batch, seq, hidden]
BERT_TOK8 = (8, 128, 768)
BERT_SCORES = (1, 12, 128, 128)  # attention probabilities
BERT_SCORES8 = (8, 12, 128, 128)


class Row:
    """One model: a single node `op` with graph inputs `ins` ((name, shape)),
    initializers `inits` ((name, numpy array)), attributes and opset."""

    def __init__(self, name, op, ins, inits=(), attrs=None, opset=18, out_type=None, types=(F32,), shape=None,
                 n_out=1, domain=""):
        self.name, self.op, self.ins, self.inits = name, op, list(ins), list(inits)
        self.attrs, self.opset, self.out_type, self.types = attrs or {}, opset, out_type, types
        self.shape = shape or (ins[0][1] if ins else ())
        self.n_out, self.domain = n_out, domain


def rnd(shape, dtype=np.float32, lo=-1.0, hi=1.0, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape).astype(dtype)


def sx(shape):
    return "x".join(map(str, shape))


def unary_rows():
    ops = [
        ("Relu", {}), ("LeakyRelu", {"alpha": 0.1}), ("Sigmoid", {}), ("Tanh", {}), ("Exp", {}), ("Log", {}),
        ("Erf", {}), ("Gelu", {}), ("HardSwish", {}), ("HardSigmoid", {}), ("Softplus", {}), ("Softsign", {}),
        ("Mish", {}), ("Elu", {}), ("Selu", {}), ("Celu", {}), ("ThresholdedRelu", {}), ("Abs", {}), ("Neg", {}),
        ("Sqrt", {}), ("Reciprocal", {}), ("Floor", {}), ("Ceil", {}), ("Round", {}), ("Sign", {}), ("Sin", {}),
        ("Cos", {}), ("Identity", {}),
    ]
    rows = []
    for op, attrs in ops:
        opset = 20 if op == "Gelu" else 18
        for s in ELEM_SHAPES:
            rows.append(Row("%s_%s" % (op, sx(s)), op, [("x", s)], attrs=attrs, opset=opset, types=(F32, F16, F64)))
    for s in ELEM_SHAPES:
        rows.append(Row("GeluTanh_%s" % sx(s), "Gelu", [("x", s)], attrs={"approximate": "tanh"}, opset=20,
                        types=(F32, F16)))
        rows.append(Row("Clip_%s" % sx(s), "Clip", [("x", s)],
                        inits=[("lo", np.array(0.0, np.float32)), ("hi", np.array(6.0, np.float32))],
                        types=(F32, F16, F64)))
    return rows


def binary_rows():
    rows = []
    for op in ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "PRelu", "Equal", "Less", "Greater"]:
        cmp_op = op in ("Equal", "Less", "Greater")
        types = (F32, F16, F64) if op != "PRelu" else (F32, F16)
        for s in ELEM_SHAPES:
            c = s[1]
            variants = [("same", s), ("chan", (1, c, 1, 1)), ("scalar", (1,))]
            if op == "PRelu":
                variants = [("chan", (c, 1, 1)), ("scalar", (1,))]
            for tag, bs in variants:
                if op == "Pow" and tag != "scalar":
                    continue
                if op == "Pow":
                    # x^2 (variance in decomposed norms) and a general exponent
                    for e, etag in [(2.0, "sq"), (1.7, "e")]:
                        rows.append(Row("Pow_%s_%s" % (etag, sx(s)), op, [("a", s)],
                                        inits=[("b", np.array([e], np.float32))], types=types, opset=18))
                    continue
                name = "%s_%s_%s" % (op, tag, sx(s))
                ins = [("a", s), ("b", bs)] if tag == "same" else [("a", s)]
                inits = [] if tag == "same" else [("b", rnd(bs, lo=0.5, hi=1.5, seed=1))]
                rows.append(Row(name, op, ins, inits=inits, types=types, opset=18,
                                out_type=TensorProto.BOOL if cmp_op else None))
    for op in ["Sum", "Mean"]:
        for s in ELEM_SHAPES:
            rows.append(Row("%s3_%s" % (op, sx(s)), op, [("a", s), ("b", s), ("c", s)], types=(F32, F16, F64)))
    for s in ELEM_SHAPES:
        rows.append(Row("Where_%s" % sx(s), "Where", [("x", s), ("y", s)],
                        inits=[("cond", np.random.default_rng(2).integers(0, 2, size=s).astype(bool))],
                        types=(F32, F16, F64)))
    return rows


def norm_rows():
    rows = []
    for s in [BERT_TOK, BERT_TOK8]:
        h = s[-1]
        g, b = ("scale", rnd((h,), seed=3)), ("bias", rnd((h,), seed=4))
        rows.append(Row("LayerNormalization_%s" % sx(s), "LayerNormalization", [("x", s)], inits=[g, b],
                        attrs={"axis": -1, "epsilon": 1e-5}, opset=17, types=(F32, F16, F64)))
        rows.append(Row("RMSNormalization_%s" % sx(s), "RMSNormalization", [("x", s)], inits=[g],
                        attrs={"axis": -1}, opset=23, types=(F32, F16, F64)))
        rows.append(Row("LpNormalization_%s" % sx(s), "LpNormalization", [("x", s)], attrs={"axis": -1, "p": 2},
                        opset=18, types=(F32,)))
    for s in ELEM_SHAPES:
        c = s[1]
        bn = [("scale", rnd((c,), seed=5)), ("B", rnd((c,), seed=6)), ("mean", rnd((c,), seed=7)),
              ("var", rnd((c,), lo=0.5, hi=2.0, seed=8))]
        rows.append(Row("BatchNormalization_%s" % sx(s), "BatchNormalization", [("x", s)], inits=bn, opset=15,
                        types=(F32, F16, F64)))
        rows.append(Row("InstanceNormalization_%s" % sx(s), "InstanceNormalization", [("x", s)], inits=bn[:2],
                        opset=18, types=(F32, F16, F64)))
        rows.append(Row("GroupNormalization_%s" % sx(s), "GroupNormalization", [("x", s)], inits=bn[:2],
                        attrs={"num_groups": 32, "epsilon": 1e-5}, opset=21, types=(F32, F16, F64)))
        rows.append(Row("MeanVarianceNormalization_%s" % sx(s), "MeanVarianceNormalization", [("x", s)], opset=18))
        rows.append(Row("LRN_%s" % sx(s), "LRN", [("x", s)], attrs={"size": 5}, opset=18))
    return rows


def reduce_rows():
    rows = []
    ops = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
           "ReduceLogSumExp", "ReduceSumSquare"]
    for op in ops:
        for s, axes, tag in [(BERT_TOK8, [-1], "last"), (ACT_BIG, [2, 3], "hw"), (ACT_BIG, [1], "c")]:
            rows.append(Row("%s_%s_%s" % (op, tag, sx(s)), op, [("x", s)],
                            inits=[("axes", np.array(axes, np.int64))], attrs={"keepdims": 1}, opset=18,
                            types=(F32, F16, F64) if op in ("ReduceSum", "ReduceMean", "ReduceMax") else (F32,)))
    for op in ["ArgMax", "ArgMin"]:
        rows.append(Row("%s_last_%s" % (op, sx(BERT_TOK8)), op, [("x", BERT_TOK8)], attrs={"axis": -1}, opset=13,
                        out_type=TensorProto.INT64))
    rows.append(Row("CumSum_%s" % sx(BERT_TOK8), "CumSum", [("x", BERT_TOK8)],
                    inits=[("axis", np.array(1, np.int64))], opset=14))
    rows.append(Row("TopK_%s" % sx(BERT_TOK8), "TopK", [("x", BERT_TOK8)], inits=[("k", np.array([5], np.int64))],
                    opset=11, n_out=2))
    return rows


def softmax_rows():
    rows = []
    for op in ["Softmax", "LogSoftmax", "Hardmax"]:
        for s in [BERT_SCORES, BERT_SCORES8]:
            rows.append(Row("%s_%s" % (op, sx(s)), op, [("x", s)], attrs={"axis": -1}, opset=13,
                            types=(F32, F16, F64) if op != "Hardmax" else (F32,)))
    return rows


def matmul_rows():
    rows = []
    w = rnd((768, 768), seed=9) * 0.05
    rows.append(Row("MatMul_w_128x768x768", "MatMul", [("x", (128, 768))], inits=[("w", w)], opset=13,
                    types=(F32, F64)))
    rows.append(Row("MatMul_w_1024x768x3072", "MatMul", [("x", (1024, 768))],
                    inits=[("w", rnd((768, 3072), seed=10) * 0.05)], opset=13))
    rows.append(Row("MatMul_qk_12x128x64x128", "MatMul", [("a", (12, 128, 64)), ("b", (12, 64, 128))], opset=13,
                    types=(F32, F64)))
    rows.append(Row("MatMul_pv_12x128x128x64", "MatMul", [("a", (12, 128, 128)), ("b", (12, 128, 64))], opset=13))
    rows.append(Row("Gemm_128x768x768", "Gemm", [("x", (128, 768))],
                    inits=[("w", w), ("bias", rnd((768,), seed=11))], attrs={"transB": 1}, opset=13,
                    types=(F32, F64)))
    rows.append(Row("Einsum_bhqd_12x128x64", "Einsum", [("a", (1, 12, 128, 64)), ("b", (1, 12, 128, 64))],
                    attrs={"equation": "bhqd,bhkd->bhqk"}, opset=12))
    rows.append(Row("Attention_1x12x128x64", "Attention",
                    [("q", (1, 12, 128, 64)), ("k", (1, 12, 128, 64)), ("v", (1, 12, 128, 64))], opset=23))
    rows.append(Row("Attention_causal_1x12x128x64", "Attention",
                    [("q", (1, 12, 128, 64)), ("k", (1, 12, 128, 64)), ("v", (1, 12, 128, 64))],
                    attrs={"is_causal": 1}, opset=23))
    return rows


def conv_rows():
    rows = []
    specs = [  # name, x shape, w shape, attrs
        ("3x3", (1, 64, 56, 56), (64, 64, 3, 3), {"pads": [1, 1, 1, 1]}),
        ("1x1", (1, 256, 28, 28), (64, 256, 1, 1), {}),
        ("dw3x3", (1, 128, 56, 56), (128, 1, 3, 3), {"pads": [1, 1, 1, 1], "group": 128}),
        ("dw5x5s2", (1, 96, 56, 56), (96, 1, 5, 5), {"pads": [2, 2, 2, 2], "group": 96, "strides": [2, 2]}),
        ("7x7s2", (1, 3, 224, 224), (64, 3, 7, 7), {"pads": [3, 3, 3, 3], "strides": [2, 2]}),
    ]
    for tag, xs, ws, attrs in specs:
        rows.append(Row("Conv_%s_%s" % (tag, sx(xs)), "Conv", [("x", xs)],
                        inits=[("w", rnd(ws, seed=12) * 0.1), ("b", rnd((ws[0],), seed=13))], attrs=attrs, opset=11))
    rows.append(Row("ConvTranspose_2x2s2_1x64x28x28", "ConvTranspose", [("x", (1, 64, 28, 28))],
                    inits=[("w", rnd((64, 32, 2, 2), seed=14) * 0.1)], attrs={"strides": [2, 2]}, opset=11))
    pool = (1, 64, 112, 112)
    rows.append(Row("MaxPool_3x3s2_%s" % sx(pool), "MaxPool", [("x", pool)],
                    attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, opset=12,
                    types=(F32, F16, F64)))
    rows.append(Row("AveragePool_3x3_%s" % sx(ACT_SMALL), "AveragePool", [("x", ACT_SMALL)],
                    attrs={"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, opset=19, types=(F32, F16, F64)))
    for op in ["GlobalAveragePool", "GlobalMaxPool"]:
        for s in ELEM_SHAPES:
            rows.append(Row("%s_%s" % (op, sx(s)), op, [("x", s)], opset=1, types=(F32, F16, F64)))
    return rows


def layout_rows():
    rows, s, b = [], ACT_BIG, BERT_TOK
    i64 = lambda v: np.array(v, np.int64)  # noqa: E731
    rows.append(Row("Transpose_nhwc_%s" % sx(s), "Transpose", [("x", s)], attrs={"perm": [0, 2, 3, 1]}, opset=13,
                    types=(F32, F16, F64)))
    rows.append(Row("Transpose_heads_1x128x12x64", "Transpose", [("x", (1, 128, 12, 64))],
                    attrs={"perm": [0, 2, 1, 3]}, opset=13))
    rows.append(Row("Concat_c_%s" % sx(s), "Concat", [("a", s), ("b", s)], attrs={"axis": 1}, opset=13))
    rows.append(Row("Split_c_%s" % sx(s), "Split", [("x", s)], attrs={"axis": 1, "num_outputs": 2}, opset=18,
                    n_out=2))
    rows.append(Row("Slice_c_%s" % sx(s), "Slice", [("x", s)],
                    inits=[("st", i64([0])), ("en", i64([128])), ("ax", i64([1]))], opset=13))
    rows.append(Row("Slice_hw_%s" % sx(s), "Slice", [("x", s)],
                    inits=[("st", i64([1, 1])), ("en", i64([27, 27])), ("ax", i64([2, 3]))], opset=13))
    rows.append(Row("Gather_c_%s" % sx(s), "Gather", [("x", s)],
                    inits=[("idx", np.random.default_rng(15).integers(0, 256, size=(128,)).astype(np.int64))],
                    attrs={"axis": 1}, opset=13))
    rows.append(Row("Gather_embed_%s" % sx(b), "Gather", [("x", (1000, 768))],
                    inits=[("idx", np.random.default_rng(16).integers(0, 1000, size=(1, 128)).astype(np.int64))],
                    attrs={"axis": 0}, opset=13, shape=b))
    rows.append(Row("Reshape_heads_%s" % sx(b), "Reshape", [("x", b)], inits=[("sh", i64([1, 128, 12, 64]))],
                    opset=14))
    rows.append(Row("Flatten_%s" % sx(s), "Flatten", [("x", s)], attrs={"axis": 1}, opset=13))
    rows.append(Row("Expand_chan_%s" % sx(s), "Expand", [("x", (1, 256, 1, 1))], inits=[("sh", i64(list(s)))],
                    opset=13, shape=s, types=(F32, F16, F64)))
    rows.append(Row("Tile_2x_%s" % sx(ACT_SMALL), "Tile", [("x", ACT_SMALL)], inits=[("r", i64([1, 1, 2, 2]))],
                    opset=13))
    rows.append(Row("Pad_1_%s" % sx(s), "Pad", [("x", s)], inits=[("p", i64([0, 0, 1, 1, 0, 0, 1, 1]))], opset=18))
    rows.append(Row("DepthToSpace_2_%s" % sx(s), "DepthToSpace", [("x", s)], attrs={"blocksize": 2}, opset=13))
    rows.append(Row("SpaceToDepth_2_%s" % sx(s), "SpaceToDepth", [("x", s)], attrs={"blocksize": 2}, opset=13))
    rows.append(Row("Trilu_%s" % sx(BERT_SCORES), "Trilu", [("x", BERT_SCORES)], opset=14))
    for to, tag in [(F16, "f16"), (TensorProto.INT64, "i64"), (F64, "f64")]:
        rows.append(Row("Cast_to%s_%s" % (tag, sx(s)), "Cast", [("x", s)], attrs={"to": to}, opset=19, out_type=to))
    for mode, extra in [("nearest", {"nearest_mode": "floor"}), ("linear", {})]:
        rows.append(Row("Resize_%s2x_%s" % (mode, sx(ACT_SMALL)), "Resize", [("x", ACT_SMALL)],
                        inits=[("roi", np.zeros((0,), np.float32)), ("scales", np.array([1, 1, 2, 2], np.float32))],
                        attrs=dict(mode=mode, **extra), opset=19, types=(F32, F16)))
    return rows


def all_rows():
    return unary_rows() + binary_rows() + norm_rows() + reduce_rows() + softmax_rows() + matmul_rows() + \
        conv_rows() + layout_rows()


def build(row, dtype):
    """The model of `row` with float data of type `dtype` (float16: through a Cast)."""
    nodes, inputs, inits = [], [], []
    node_ins = []
    for name, shape in row.ins:
        in_type = F32 if dtype == F16 else dtype
        inputs.append(helper.make_tensor_value_info(name, in_type, list(shape)))
        if dtype == F16:
            nodes.append(helper.make_node("Cast", [name], [name + "_h"], to=F16))
            node_ins.append(name + "_h")
        else:
            node_ins.append(name)
    for name, arr in row.inits:
        # Float data follows the row's dtype except Clip bounds / Resize roi-scales rules below.
        if arr.dtype == np.float32 and not (row.op == "Resize"):
            arr = arr.astype(NP[dtype])
        inits.append(numpy_helper.from_array(arr, name))
        node_ins.append(name)
    if row.op == "Resize":
        node_ins = node_ins[:1] + ["roi", "scales"]
    if row.op == "Where":
        node_ins = ["cond"] + node_ins[:2]
    outs = ["y%d" % i for i in range(row.n_out)]
    nodes.append(helper.make_node(row.op, node_ins, outs, domain=row.domain, **row.attrs))
    out_type = row.out_type if row.out_type is not None else dtype
    outputs = [helper.make_tensor_value_info(outs[0], out_type, None)]
    if row.n_out == 2:
        outputs.append(helper.make_tensor_value_info(outs[1], TensorProto.INT64 if row.op == "TopK" else out_type,
                                                     None))
    graph = helper.make_graph(nodes, row.name, inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", row.opset)])
    model.ir_version = 9 if row.opset <= 21 else 10
    return model


def main():
    args = sys.argv[1:]
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), "singa_op_matrix")
    only, quick = None, False
    while args:
        a = args.pop(0)
        if a == "--ops":
            only = set(args.pop(0).split(","))
        elif a == "--quick":
            quick = True
        elif a.startswith("-"):
            # an unknown flag (e.g. --help) must not become the output folder's name
            sys.exit("usage: %s [--ops A,B,...] [--quick] [OUT_DIR]" % sys.argv[0])
        else:
            out = a
    os.makedirs(out, exist_ok=True)
    seen_ops = {}
    lines = []
    for row in all_rows():
        if only and row.op not in only and row.name.split("_")[0] not in only:
            continue
        if quick:
            # the first row of each (op, variant) family: the smaller shape
            fam = row.name.rsplit("_", 1)[0] if row.name.count("_") > 1 else row.op
            if fam in seen_ops:
                continue
            seen_ops[fam] = True
        for dtype in (row.types if not quick else (F32,)):
            name = "%s_%s" % (row.name, TAG[dtype])
            path = os.path.join(out, name + ".onnx")
            with open(path, "wb") as f:
                f.write(build(row, dtype).SerializeToString())
            lines.append("\t".join([name, row.op, TAG[dtype], sx(row.shape), path]))
    with open(os.path.join(out, "manifest.tsv"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(os.path.join(out, "manifest.tsv"))


if __name__ == "__main__":
    main()
