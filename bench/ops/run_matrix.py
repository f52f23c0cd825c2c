#!/usr/bin/python3
"""Driver of bench/ops/run.sh: times every model of a make_op_models.py manifest
with `singa bench` and ONNX Runtime (ort_op.js) at each thread count, in the
same run, and prints a Markdown table of median latencies and singa/ORT ratios.

    /usr/bin/python3 bench/ops/run_matrix.py MANIFEST --singa PATH [--threads 1,2] [--iters K]
        [--warmup W] [--repeat R] [--limit X]

Rows above --limit (default 1.5) at some thread count are timed R more times
(default 2, both runtimes again) and keep each runtime's best median, so one
noisy sample on a shared machine does not flag an op; rows still above it are
marked "**SLOW**".
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def singa_time(singa, model, threads, iters, warmup):
    p = subprocess.run([singa, "bench", model, "--threads", str(threads), "--iters", str(iters), "--warmup",
                        str(warmup), "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(p.stdout.strip().splitlines()[-1])["median_ms"], None


# Models per node process: onnxruntime-node 1.30 crashes (SIGSEGV, before the
# first model) when node's command line holds about 500 paths.
ORT_CHUNK = 200


def ort_times(models, threads, iters, warmup):
    """{model path: (median ms or None, error)} from node processes of ORT_CHUNK models."""
    out = {}
    for k in range(0, len(models), ORT_CHUNK):
        chunk = models[k:k + ORT_CHUNK]
        p = subprocess.run(["node", os.path.join(HERE, "ort_op.js"), "--threads", str(threads), "--iters", str(iters),
                            "--warmup", str(warmup)] + chunk, capture_output=True, text=True)
        for line in p.stdout.splitlines():
            r = json.loads(line)
            out[r["model"]] = (r.get("median_ms"), r.get("error"))
        for m in chunk:
            why = (p.stderr.strip().splitlines() or ["no result (exit status %d)" % p.returncode])[-1]
            out.setdefault(m, (None, "ort_op.js: " + why))
    return out


def main():
    args = sys.argv[1:]
    opts = {"--singa": "build/tools/singa", "--threads": "1,2", "--iters": "20", "--warmup": "3", "--repeat": "2",
            "--limit": "1.5"}
    manifest = None
    while args:
        a = args.pop(0)
        if a in opts:
            opts[a] = args.pop(0)
        else:
            manifest = a
    threads = [int(t) for t in opts["--threads"].split(",")]
    iters, warmup, limit = int(opts["--iters"]), int(opts["--warmup"]), float(opts["--limit"])
    rows = [line.rstrip("\n").split("\t") for line in open(manifest) if line.strip()]
    paths = [r[4] for r in rows]
    res = {}  # (path, threads) -> [singa ms, ort ms, note]
    for t in threads:
        ort = ort_times(paths, t, iters, warmup)
        for p in paths:
            s, serr = singa_time(opts["--singa"], p, t, iters, warmup)
            o, oerr = ort[p]
            res[(p, t)] = [s, o, serr or oerr or ""]
    for _ in range(int(opts["--repeat"])):
        slow = [(p, t) for (p, t), (s, o, _) in res.items() if s and o and s / o > limit]
        for t in threads:
            again = [p for (p, tt) in slow if tt == t]
            if not again:
                continue
            ort = ort_times(again, t, iters, warmup)
            for p in again:
                s, _ = singa_time(opts["--singa"], p, t, iters, warmup)
                r = res[(p, t)]
                if s is not None:
                    r[0] = min(r[0], s)
                if ort[p][0] is not None:
                    r[1] = min(r[1], ort[p][0])

    head = "| op | model | dtype |" + "".join(" singa %dT ms | ORT %dT ms | ratio %dT |" % (t, t, t) for t in threads)
    print(head + " note |")
    print("|" + "---|" * (3 + 3 * len(threads) + 1))
    slow_rows = 0
    for name, op, dtype, shape, path in rows:
        cells, notes, flag = [], set(), False
        for t in threads:
            s, o, note = res[(path, t)]
            if note:
                notes.add(note[:80])
            cells += ["%.4f" % s if s is not None else "n/a", "%.4f" % o if o is not None else "n/a"]
            if s is not None and o is not None:
                ratio = s / o
                flag = flag or ratio > limit
                cells.append(("**%.2f**" if ratio > limit else "%.2f") % ratio)
            else:
                cells.append("n/a")
        if flag:
            notes.add("**SLOW**")
            slow_rows += 1
        print("| %s | %s | %s | %s | %s |" % (op, name, dtype, " | ".join(cells), "; ".join(sorted(notes))))
    print("\n%d of %d rows above %.2fx ORT" % (slow_rows, len(rows), limit))


if __name__ == "__main__":
    main()
