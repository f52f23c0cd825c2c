#!/usr/bin/python3
"""Alternating A/B timing of one-node models on a busy machine: each round runs
ONNX Runtime once (ort_op.js, all models in one process) and then every singa
build on every model (`singa bench --json`); prints per model the median and
minimum of the rounds for each, and each build's median / ORT's median.

    /usr/bin/python3 bench/ops/ab_ops.py BUILD[,BUILD2...] THREADS ROUNDS MODEL.onnx...

A BUILD is a folder holding tools/singa (a build tree, or a copy of one whose
plugins it loads). Needs bench/node_modules (npm ci in bench/).
"""
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    builds, threads, rounds, models = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    res = {}
    for _ in range(rounds):
        p = subprocess.run(["node", os.path.join(HERE, "ort_op.js"), "--threads", threads, "--iters", "20",
                            "--warmup", "3"] + models, capture_output=True, text=True)
        for line in p.stdout.splitlines():
            d = json.loads(line)
            res.setdefault((d["model"], "ort"), []).append(d.get("median_ms") or float("nan"))
        for b in builds:
            for m in models:
                q = subprocess.run([os.path.join(b, "tools", "singa"), "bench", m, "--threads", threads, "--iters", "20",
                                    "--warmup", "3", "--json"], capture_output=True, text=True)
                try:
                    v = json.loads(q.stdout.strip().splitlines()[-1])["median_ms"]
                except (ValueError, IndexError, KeyError):
                    v = float("nan")
                    print(q.stderr.strip()[-300:], file=sys.stderr)
                res.setdefault((m, b), []).append(v)
    for m in models:
        o = res.get((m, "ort"), [float("nan")])
        line = "%-40s ORT med %.4f min %.4f" % (os.path.basename(m)[:-5], statistics.median(o), min(o))
        for b in builds:
            v = res[(m, b)]
            line += " | %s med %.4f min %.4f ratio %.2f" % (os.path.basename(b.rstrip("/")), statistics.median(v), min(v),
                                                           statistics.median(v) / statistics.median(o))
        print(line, flush=True)


if __name__ == "__main__":
    main()
