#!/usr/bin/python3
"""Writes extra conformance cases for TfIdfVectorizer (ONNX node-test layout:
CASE/model.onnx + CASE/test_data_set_0/{input,output}_K.pb).

The ONNX node suite covers only mode TF on int32 2-D input without weights;
these add IDF and TFIDF, weights, int64 and 1-D input, unigram-only pools and
several skip counts. Expected outputs come from ONNX Runtime (the node package
under bench/), never from singa.

    /usr/bin/python3 make_cases.py OUTDIR
    singa conformance OUTDIR/*
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/ops_string_cases"
ORT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../bench/node_modules/onnxruntime-node")
NP2ONNX = {np.int32: TensorProto.INT32, np.int64: TensorProto.INT64, np.float32: TensorProto.FLOAT}

# Runs each case's model in ORT on the case's input; prints {case: {data, dims}}.
ORT_SCRIPT = r"""
const ort = require(process.argv[1]);
const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));
(async () => {
  const res = {};
  for (const c of cases) {
    const s = await ort.InferenceSession.create(c.model);
    const x = c.type === 'int32' ? new ort.Tensor('int32', Int32Array.from(c.data), c.dims)
                                 : new ort.Tensor('int64', BigInt64Array.from(c.data.map(BigInt)), c.dims);
    const y = (await s.run({X: x})).Y;
    res[c.name] = {data: Array.from(y.data), dims: y.dims};
  }
  process.stdout.write(JSON.stringify(res));
})();
"""

X2 = np.array([[1, 1, 3, 3, 3, 7], [8, 6, 7, 5, 6, 8]], np.int32)
POOL = [2, 3, 5, 4, 5, 6, 7, 8, 6, 7]  # unigrams 2 3 5 4, bigrams (5,6) (7,8) (6,7)
cases = []
for mode in ("TF", "IDF", "TFIDF"):
    for lo, hi, skip in ((1, 2, 0), (1, 2, 3), (2, 2, 5), (1, 1, 2)):
        for weights in (None, [0.5, 1, 2, 3, 4, 5, 6]):
            for x in (X2, X2[0].astype(np.int64)):
                name = f"tfidf_{mode}_{lo}{hi}{skip}_{'w' if weights else 'nw'}_{x.ndim}d"
                attrs = dict(mode=mode, min_gram_length=lo, max_gram_length=hi, max_skip_count=skip,
                             ngram_counts=[0, 4], ngram_indexes=[6, 0, 1, 2, 3, 4, 5], pool_int64s=POOL)
                if weights:
                    attrs["weights"] = weights
                node = helper.make_node("TfIdfVectorizer", ["X"], ["Y"], **attrs)
                out_shape = [x.shape[0], 7] if x.ndim == 2 else [7]
                graph = helper.make_graph([node], name, [helper.make_tensor_value_info("X", NP2ONNX[x.dtype.type], x.shape)],
                                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, out_shape)])
                d = os.path.join(OUT, name)
                os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
                onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)]), os.path.join(d, "model.onnx"))
                with open(os.path.join(d, "test_data_set_0", "input_0.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(x, "X").SerializeToString())
                cases.append(dict(name=name, model=os.path.join(d, "model.onnx"), type=str(x.dtype),
                                  data=x.ravel().tolist(), dims=list(x.shape)))

ort_out = json.loads(subprocess.run(["node", "-e", ORT_SCRIPT, ORT], input=json.dumps(cases), text=True,
                                    capture_output=True, check=True).stdout)
for c in cases:
    y = np.array(ort_out[c["name"]]["data"], np.float32).reshape(ort_out[c["name"]]["dims"])
    with open(os.path.join(OUT, c["name"], "test_data_set_0", "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y, "Y").SerializeToString())
print("wrote", len(cases), "cases to", OUT)
