#!/usr/bin/env python3
"""What a call from Python adds to one SingaRep.run, and whether numpy data is copied.

For small models (a 2-layer MLP and a tiny CNN, batch 1, one thread, and a
Shape node that does no arithmetic, so its time is nearly all overhead) it
times, in alternating rounds within one process:

* C++:    ``Rep::run_values`` in a C++ loop on the same converted inputs
          (``_singa.Rep.time_runs``: the call the C++ API makes, timed with
          steady_clock around each call);
* Python: ``rep.run([x])`` on a numpy array, timed with perf_counter_ns around
          each call (argument list, conversions and numpy outputs included);

and prints the medians and their difference, the per-call overhead. With
``--cli build/tools/singa`` it also reports ``singa bench --json`` (another
process) as a cross-check. Then it checks the zero-copy claims:

* outputs are numpy views of singa's memory (no owned data, a capsule base);
* a numpy input is shared, not copied: a 256 MiB input to a model that only
  reads its shape costs the same as a tiny one, and peak RSS does not grow.

Run with the installed package (scripts/install_python.sh first):
    build-py/venv/bin/python bench/python_overhead.py [--iters 2000] [--rounds 7] [--cli build/tools/singa]
Exit status 1 when a zero-copy check fails (the timings are only reported).
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from singa import sonnx


def mlp_model():
    """x[1,64] -> MatMul[64,128] -> Relu -> MatMul[128,10]."""
    rng = np.random.default_rng(0)
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("MatMul", ["r", "W2"], ["y"])], "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(rng.standard_normal((64, 128)).astype(np.float32), "W1"),
         numpy_helper.from_array(rng.standard_normal((128, 10)).astype(np.float32), "W2")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), [1, 64]


def cnn_model():
    """x[1,3,16,16] -> Conv 8x3x3 -> Relu -> GlobalAveragePool -> Flatten -> Gemm[8,4]."""
    rng = np.random.default_rng(1)
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("GlobalAveragePool", ["r"], ["p"]), helper.make_node("Flatten", ["p"], ["f"]),
         helper.make_node("Gemm", ["f", "Wf", "Bf"], ["y"])], "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "W"),
         numpy_helper.from_array(np.zeros(8, np.float32), "B"),
         numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "Wf"),
         numpy_helper.from_array(np.zeros(4, np.float32), "Bf")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), [1, 3, 16, 16]


def shape_model(n):
    """x[n] -> Shape: touches no element of x, so its cost does not depend on n unless x is copied."""
    g = helper.make_graph([helper.make_node("Shape", ["x"], ["s"])], "shape",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
                          [helper.make_tensor_value_info("s", TensorProto.INT64, [1])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def python_times(rep, x, iters, warmup):
    """Per-call seconds of rep.run([x]) timed from Python."""
    clock = time.perf_counter_ns
    run = rep.run
    for _ in range(warmup):
        run([x])
    out = np.empty(iters)
    for i in range(iters):
        t0 = clock()
        run([x])
        out[i] = clock() - t0
    return out * 1e-9


def measure(name, model, shape, args):
    rep = sonnx.prepare(model, threads=1)
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    cpp, py = [], []
    for _ in range(args.rounds):  # alternate so drifting machine load hits both alike
        cpp.append(np.median(rep.crep.time_runs([x], args.iters, args.warmup)))
        py.append(np.median(python_times(rep, x, args.iters, args.warmup)))
    cpp_us, py_us = np.array(cpp) * 1e6, np.array(py) * 1e6
    over = py_us - cpp_us
    row = {"model": name, "cpp_us": float(np.median(cpp_us)), "python_us": float(np.median(py_us)),
           "overhead_us": float(np.median(over)), "overhead_min_us": float(over.min()),
           "overhead_max_us": float(over.max())}
    if args.cli:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, name + ".onnx")
            onnx.save(model, path)
            r = subprocess.run([args.cli, "bench", path, "--json", "--threads", "1", "--iters", str(args.iters),
                                "--warmup", str(args.warmup)], capture_output=True, text=True, check=True)
            row["cli_us"] = json.loads(r.stdout.strip().splitlines()[-1])["median_ms"] * 1e3
    return row


def check_zero_copy():
    """(name, ok, detail) for each zero-copy claim."""
    results = []
    model, shape = mlp_model()
    rep = sonnx.prepare(model, threads=1)
    y = rep.run([np.ones(shape, np.float32)])[0]
    view = not y.flags.owndata and type(y.base).__name__ == "PyCapsule"
    results.append(("output is a view of singa memory", view,
                    "owndata=%s base=%s" % (y.flags.owndata, type(y.base).__name__)))

    n = 64 << 20  # 256 MiB of float32
    rep = sonnx.prepare(shape_model(n), threads=1)
    small = np.ones(16, np.float32)
    big = np.ones(n, np.float32)  # pages touched now, before the baseline is read
    t_small = np.median(python_times(rep, small, 200, 20))
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t_big = np.median(python_times(rep, big, 200, 20))
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024.0
    ok = grown_mib < 64 and int(rep.run([big])[0][0]) == n
    results.append(("256 MiB input not copied", ok,
                    "run %.1f us (16-element input %.1f us), peak RSS grew %.1f MiB" % (t_big * 1e6, t_small * 1e6,
                                                                                     grown_mib)))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, default=2000, help="timed calls per round (default 2000)")
    ap.add_argument("--warmup", type=int, default=100, help="untimed calls before each round (default 100)")
    ap.add_argument("--rounds", type=int, default=7, help="alternating C++ / Python rounds (default 7)")
    ap.add_argument("--cli", help="path of the singa CLI, for a `singa bench --json` cross-check")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = ap.parse_args()

    # The Shape model does no arithmetic: its Python time is nearly all call overhead.
    rows = [measure("mlp_64x128x10", *mlp_model(), args), measure("cnn_3x16x16", *cnn_model(), args),
            measure("shape_16", shape_model(16), [16], args)]
    checks = check_zero_copy()
    if args.json:
        print(json.dumps({"rows": rows, "zero_copy": [{"check": c, "ok": ok, "detail": d} for c, ok, d in checks]}))
    else:
        print("per call, medians of %d rounds x %d calls (1 thread)" % (args.rounds, args.iters))
        print("%-15s %9s %11s %12s %17s%s" % ("model", "C++ us", "Python us", "overhead us", "(min..max round)",
                                             "  CLI us" if args.cli else ""))
        for r in rows:
            print("%-15s %9.2f %11.2f %12.2f %17s%s" % (
                r["model"], r["cpp_us"], r["python_us"], r["overhead_us"],
                "(%.2f..%.2f)" % (r["overhead_min_us"], r["overhead_max_us"]),
                "  %6.2f" % r["cli_us"] if "cli_us" in r else ""))
        for c, ok, d in checks:
            print("%-34s %s  %s" % (c, "ok" if ok else "FAILED", d))
    return 0 if all(ok for _, ok, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
