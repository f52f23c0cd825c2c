"""Int8 QDQ and float16 variants of an exported float32 benchmark model.

qdq(): what a static QDQ quantizer writes: every Conv, MatMul and Gemm reads its float weight
through DequantizeLinear from an int8 initializer (symmetric, per tensor), and its float
activations (inputs and output) through a QuantizeLinear/DequantizeLinear pair with a uint8
per-tensor scale and zero point from a calibration pass on random data.

float16(): tests/models/cases_newer.py's convert_float16 (weights and constants float16,
float32 graph inputs and outputs kept by appended Casts), as the common converter writes it.
"""

import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

QUANTIZED_OPS = ("Conv", "MatMul", "Gemm")


def calibrate(path, singa, dims):
    """min/max of every float value of the model at `path` over one run on random inputs
    (`singa run --all-outputs`, whose random floats are uniform in [0, 1), the inputs
    `singa bench` and bench/ort_bench.js feed too). Only the ranges matter, not the values."""
    cmd = [singa, "run", path, "--all-outputs", "--json", "--top", "1"]
    for k, v in dims.items():
        cmd += ["--dim", "%s=%d" % (k, v)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("calibration run failed (%s): %s" % (" ".join(cmd), out.stderr.strip()[-400:]))
    res = json.loads(out.stdout)
    ranges = {o["name"]: (o["stats"]["min"], o["stats"]["max"]) for o in res["outputs"]
              if o.get("dtype") == "float" and "stats" in o}
    for i in res["inputs"]:
        if i.get("dtype") == "float":
            ranges[i["name"]] = (0.0, 1.0)
    return ranges


def _uint8_params(lo, hi):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / 255.0 or 1.0
    return np.float32(scale), np.uint8(np.clip(round(-lo / scale), 0, 255))


def qdq(model, ranges):
    """The QDQ variant of `model` (float32, topologically sorted) given the value `ranges`."""
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    new_inits, new_nodes = [], []
    dq_of = {}  # tensor name -> name of its dequantized copy

    def activation(name):
        if name not in dq_of:
            scale, zp = _uint8_params(*ranges[name])
            s, z = name + "_scale", name + "_zp"
            new_inits.extend([numpy_helper.from_array(np.array(scale), s), numpy_helper.from_array(np.array(zp), z)])
            new_nodes.append(helper.make_node("QuantizeLinear", [name, s, z], [name + "_q"], name=name + "_Q"))
            new_nodes.append(helper.make_node("DequantizeLinear", [name + "_q", s, z], [name + "_dq"], name=name + "_DQ"))
            dq_of[name] = name + "_dq"
        return dq_of[name]

    def weight(name):
        if name not in dq_of:
            w = numpy_helper.to_array(inits[name])
            scale = np.float32(np.abs(w).max() / 127.0 or 1.0)
            q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
            inits[name].CopyFrom(numpy_helper.from_array(q, name))
            s, z = name + "_scale", name + "_zp"
            new_inits.extend([numpy_helper.from_array(np.array(scale), s), numpy_helper.from_array(np.array(np.int8(0)), z)])
            new_nodes.append(helper.make_node("DequantizeLinear", [name, s, z], [name + "_dq"], name=name + "_DQ"))
            dq_of[name] = name + "_dq"
        return dq_of[name]

    outputs = {o.name for o in g.output}
    nodes = []
    for node in g.node:
        if node.op_type in QUANTIZED_OPS:
            new_nodes.clear()
            # Conv/Gemm biases (input 2) stay float, as the weights' products are dequantized.
            for k in range(min(len(node.input), 2)):
                n = node.input[k]
                if n in inits and inits[n].data_type == TensorProto.FLOAT:
                    node.input[k] = weight(n)
                elif n in ranges:
                    node.input[k] = activation(n)
            nodes.extend(new_nodes)
        nodes.append(node)
        # The output too, so that a runtime can keep int8 between quantized ops.
        if node.op_type in QUANTIZED_OPS and node.output[0] in ranges and node.output[0] not in outputs:
            new_nodes.clear()
            out = node.output[0]
            dq = activation(out)
            nodes.extend(new_nodes)
            for later in g.node:
                if later is not node:
                    for k, n in enumerate(later.input):
                        if n == out:
                            later.input[k] = dq
    g.ClearField("node")
    g.node.extend(nodes)
    g.initializer.extend(new_inits)
    # Intermediate types changed meaning (the quantized ints): let checkers re-infer.
    g.ClearField("value_info")
    onnx.checker.check_model(model)
    return model


def float16(model):
    """The float16-weight variant, by tests/models/cases_newer.py's converter."""
    tests = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    import cases_newer
    # Its self-check insists that the appended Casts leave the graph out of order, which holds
    # only for a model with a float input (the BERT's inputs are all int64): check the model
    # itself instead.
    cases_newer._check_float16 = lambda m: onnx.checker.check_model(cases_newer._topologically_sorted_copy(m))
    return cases_newer.convert_float16(model)[0]
