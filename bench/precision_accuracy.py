#!/usr/bin/python3
"""How far a lower-precision option moves a model's outputs from singa's float32 ones.

Runs each model with and without the option (default `cpu.precision=bf16`) on a few seeded
random inputs through `singa run` and prints, per model, the largest and the mean deviation
relative to the float32 output, and how often the argmax over the last axis agrees (top-1
for classifiers, per token for sequence outputs).

    /usr/bin/python3 bench/precision_accuracy.py --cli build/tools/singa \
        --models "resnet50 vit_tiny bert_mask_s128" [--option cpu.precision=bf16] [--seeds 8]

Models are read from bench/.models (NAME.onnx with NAME.json giving the inputs and any
symbolic dims; bench/make_models.py writes them). Integer inputs named input_ids get ids
below 1000, attention_mask its last quarter masked, token_type_ids zeros.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def spec_of(models, name):
    """The model file, its inputs' shapes and --dim bindings from NAME.json."""
    with open(os.path.join(models, name + ".json")) as f:
        spec = json.load(f)
    onnx_file = os.path.join(models, spec.get("model", name + ".onnx"))
    dims = [f"{k}={v}" for k, v in spec.get("dims", {}).items()]
    return onnx_file, spec["inputs"], dims


def draw_inputs(shapes, seed, folder):
    rng = np.random.default_rng(seed)
    files = {}
    for k, shape in shapes.items():
        if k == "input_ids":
            a = rng.integers(0, 1000, shape).astype(np.int64)
        elif k == "attention_mask":
            a = np.ones(shape, np.int64)
            a[..., shape[-1] * 3 // 4:] = 0
        elif k == "token_type_ids":
            a = np.zeros(shape, np.int64)
        else:
            a = rng.standard_normal(shape).astype(np.float32)
        files[k] = os.path.join(folder, k + ".npy")
        np.save(files[k], a)
    return files


def run(cli, model, inputs, dims, options, out):
    os.makedirs(out, exist_ok=True)
    cmd = [cli, "run", model, "-o", out, "--threads", "1"]
    for k, v in inputs.items():
        cmd += ["-i", f"{k}={v}"]
    for d in dims:
        cmd += ["--dim", d]
    for o in options:
        cmd += ["--option", o]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"singa run failed ({' '.join(cmd)}):\n{r.stderr}")
    outs = {}
    for f in sorted(os.listdir(out)):
        t = TensorProto()
        with open(os.path.join(out, f), "rb") as fh:
            t.ParseFromString(fh.read())
        outs[f] = numpy_helper.to_array(t).astype(np.float64)
    return outs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", default="build/tools/singa")
    ap.add_argument("--models", default="resnet50 vit_tiny bert_mask_s128")
    ap.add_argument("--dir", default=os.path.join(HERE, ".models"))
    ap.add_argument("--option", action="append", default=None)
    ap.add_argument("--seeds", type=int, default=8)
    a = ap.parse_args()
    options = a.option or ["cpu.precision=bf16"]
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.models.split():
            model, shapes, dims = spec_of(a.dir, name)
            max_rel, mean_rel, agree, rows = 0.0, [], 0, 0
            for seed in range(a.seeds):
                d = os.path.join(tmp, name, str(seed))
                os.makedirs(d)
                ins = draw_inputs(shapes, seed, d)
                ref = run(a.cli, model, ins, dims, [], os.path.join(d, "fp32"))
                low = run(a.cli, model, ins, dims, options, os.path.join(d, "low"))
                for k, r in ref.items():
                    b = low[k]
                    max_rel = max(max_rel, float(np.abs(b - r).max() / max(np.abs(r).max(), 1e-30)))
                    mean_rel.append(float(np.abs(b - r).mean() / max(np.abs(r).mean(), 1e-30)))
                    if r.ndim >= 2:
                        rr, bb = r.reshape(-1, r.shape[-1]), b.reshape(-1, b.shape[-1])
                        agree += int((rr.argmax(-1) == bb.argmax(-1)).sum())
                        rows += rr.shape[0]
            print(f"{name}: max |low - fp32| / max |fp32| = {max_rel:.2e}, mean |low - fp32| / mean |fp32| = "
                  f"{np.mean(mean_rel):.2e}, argmax agreement {agree}/{rows}  ({' '.join(options)})", flush=True)


if __name__ == "__main__":
    main()
