#!/usr/bin/env python3
"""Writes the per-op gradient status table of docs/training.md ("Gradient coverage").

Input: the JSON lines of `singa conformance --gradients --json DIR`, one file per
node suite, each given as LABEL=FILE (e.g. 1.12=grad_1_12.jsonl). Output (stdout):
a Markdown table with, per differentiable op and suite, the cases passing /
failing / without a gradient, then the failing cases with their reasons. Skipped cases (nothing differentiable to check) are counted in a
closing line only.

Usage: scripts/gradient_table.py 1.12=a.jsonl 1.23=b.jsonl > table.md
"""
import collections
import json
import sys


def read(path):
    """Case records (dicts with case, op, status, reason) of one JSON-lines file."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            rec = json.loads(line)
            if "case" in rec:
                out.append(rec)
    return out


def main(argv):
    if len(argv) < 2 or any("=" not in a for a in argv[1:]):
        sys.exit(__doc__)
    suites = [a.split("=", 1) for a in argv[1:]]
    labels = [label for label, _ in suites]
    # counts[op][label] = Counter of statuses
    counts = collections.defaultdict(lambda: collections.defaultdict(collections.Counter))
    problems = []
    skipped = collections.Counter()
    for label, path in suites:
        for rec in read(path):
            status, op = rec["status"], rec.get("op") or "?"
            if status == "SKIP":
                skipped[label] += 1
                continue
            counts[op][label][status] += 1
            if status == "FAIL":
                problems.append((op, label, rec["case"], status, rec.get("reason", "")))

    head = "| op | " + " | ".join(f"ONNX {l}: pass / fail / no gradient" for l in labels) + " | status |"
    print(head)
    print("|" + "---|" * (len(labels) + 2))
    for op in sorted(counts, key=str.lower):
        cells, total = [], collections.Counter()
        for l in labels:
            c = counts[op].get(l)
            if not c:
                cells.append("-")
                continue
            total.update(c)
            cells.append(f"{c['PASS']} / {c['FAIL']} / {c['NOGRAD']}")
        if total["NOGRAD"] and not total["PASS"]:
            status = "no gradient"
        elif total["FAIL"] or total["NOGRAD"]:
            status = "partly failing"
        else:
            status = "correct"
        print(f"| {op} | " + " | ".join(cells) + f" | {status} |")
    print()
    n_ops = len(counts)
    n_ok = sum(1 for op in counts if all(not c["FAIL"] and not c["NOGRAD"] for c in counts[op].values()))
    print(f"{n_ok} of {n_ops} differentiable ops pass every checked case. Skipped cases (no differentiable "
          "real-valued input or output, random ops, multi-node models, inputs or attributes autograd cannot "
          "take): " + ", ".join(f"{skipped[l]} in ONNX {l}" for l in labels) + ".")
    if problems:
        print()
        print("Failing cases, per op, with the first one's reason (ops without a gradient are in the table):")
        print()
        by_op = collections.defaultdict(list)
        for p in sorted(problems, key=lambda p: (p[0].lower(), p[1], p[2])):
            by_op[p[0]].append(p)
        for op, ps in sorted(by_op.items(), key=lambda kv: kv[0].lower()):
            per_suite = collections.Counter(p[1] for p in ps)
            where = ", ".join(f"{per_suite[l]} in ONNX {l}" for l in labels if per_suite[l])
            reason = ps[0][4].replace("|", "\\|")
            if len(reason) > 200:
                reason = reason[:197] + "..."
            print(f"- **{op}** ({where}), e.g. `{ps[0][2]}`: {reason}")

if __name__ == "__main__":
    main(sys.argv)
