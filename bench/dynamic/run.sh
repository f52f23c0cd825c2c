#!/bin/sh
# A model with a dynamic `seq` axis, prepared once and run at several
# lengths, against ONNX Runtime on the same machine in the same run. Prints a
# Markdown table of median latencies (ms): for each row, the median over
# --repeat rounds of each runtime's median, the runtimes alternating so that
# drifting machine load hits all alike.
#
#   bench/dynamic/run.sh [BUILD_DIR] [--values 1,8,128] [--threads "1 2"]
#                        [--iters K] [--repeat R] [--model FILE.onnx]
#
# Columns: general = the plan prepared with seq symbolic (core.shape_cache=0);
# specialized = the same Rep with the shape cache on (the default), one plan
# per length; bound = a prepare per length with every dim bound (what
# `singa bench --dim` times); ort = onnxruntime-node, dims from its inputs.
# The model defaults to an HF-style BERT-tiny that make_bert_tiny.py writes
# into BUILD_DIR/bench-dynamic (needs /usr/bin/python3 with torch and onnx);
# ORT needs bench/node_modules.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build
values=1,8,128
threads="1 2"
iters=200
repeat=5
model=""
while [ $# -gt 0 ]; do
  case "$1" in
    --values) values=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    *) build=$1; shift ;;
  esac
done
[ -f "$build/core/libsinga_core.so" ] || { echo "run.sh: $build/core/libsinga_core.so not found (give the build folder)" >&2; exit 2; }
bin=$build/bench-dynamic/dyn_bench
mkdir -p "$(dirname "$bin")"
if [ -z "$model" ]; then
  model=$build/bench-dynamic/bert_tiny.onnx
  [ -f "$model" ] || /usr/bin/python3 "$here/make_bert_tiny.py" "$model" 2>/dev/null
fi
c++ -O2 -std=c++17 -I"$root/core/include" -I"$root/sdk/include" "$here/dyn_bench.cpp" -L"$build/core" -lsinga_core \
  -Wl,-rpath,"$build/core" -o "$bin"

results=$(mktemp)
trap 'rm -f "$results"' EXIT
r=0
while [ "$r" -lt "$repeat" ]; do
  for t in $threads; do
    "$bin" "$model" --values "$values" --threads "$t" --iters "$iters" --option core.shape_cache=0 | sed 's/^/general /' >> "$results"
    "$bin" "$model" --values "$values" --threads "$t" --iters "$iters" | sed 's/^/specialized /' >> "$results"
    "$bin" "$model" --values "$values" --threads "$t" --iters "$iters" --mode bound | sed 's/^/bound /' >> "$results"
    for v in $(echo "$values" | tr ',' ' '); do
      node "$root/bench/ort_bench.js" "$model" --threads "$t" --iters "$iters" --warmup 5 --dim seq="$v" |
        sed "s/^/ort $v /" >> "$results"
    done
  done
  r=$((r + 1))
  echo "  round $r of $repeat done" >&2
done

/usr/bin/python3 - "$results" <<'EOF'
import collections, json, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    kind, rest = line.split(" ", 1)
    if kind == "ort":
        seq, js = rest.split(" ", 1)
        d = json.loads(js)
        rows[("ort", d["threads"], int(seq))].append(d["median_ms"])
    else:
        d = json.loads(rest)
        rows[(kind, d["threads"], d["seq"])].append(d["median_ms"])
keys = sorted({(t, s) for (_, t, s) in rows})
print("| threads | seq | general | specialized | bound | ORT | specialized / ORT |")
print("|---|---|---|---|---|---|---|")
for t, s in keys:
    m = {k: statistics.median(rows[(k, t, s)]) for k in ("general", "specialized", "bound", "ort") if rows[(k, t, s)]}
    ratio = m["specialized"] / m["ort"] if "ort" in m and "specialized" in m else float("nan")
    print(f"| {t} | {s} | {m.get('general', 0):.3f} | {m.get('specialized', 0):.3f} | {m.get('bound', 0):.3f} | "
          f"{m.get('ort', 0):.3f} | {ratio:.2f} |")
EOF
