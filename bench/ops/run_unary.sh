#!/bin/sh
# Times the one-node models of make_unary_models.py with singa and ONNX
# Runtime (bench/ort_bench.js) at 1 and 2 threads; prints a Markdown table.
#
#   bench/ops/run_unary.sh [BUILD_DIR] [--ops Sigmoid,Tanh,...] [--iters K]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=build
ops=""
iters=30
while [ $# -gt 0 ]; do
  case "$1" in
    --ops) ops=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    *) build=$1; shift ;;
  esac
done
models=${TMPDIR:-/tmp}/singa_ops_models
if [ -n "$ops" ]; then
  /usr/bin/python3 "$here/make_unary_models.py" "$models" --ops "$ops" > /dev/null
else
  /usr/bin/python3 "$here/make_unary_models.py" "$models" > /dev/null
fi
echo "| model | threads | singa ms | ORT ms | singa/ORT |"
echo "|---|---|---|---|---|"
for m in "$models"/*.onnx; do
  name=$(basename "$m" .onnx)
  if [ -n "$ops" ]; then
    case ",$ops," in *",${name%%_*},"*) ;; *) continue ;; esac
  fi
  for t in 1 2; do
    s=$("$build/tools/singa" bench "$m" --threads "$t" --iters "$iters" --warmup 3 --json)
    o=$(node "$here/../ort_bench.js" "$m" --threads "$t" --iters "$iters" --warmup 3)
    /usr/bin/python3 -c 'import json,sys; s=json.loads(sys.argv[1]); o=json.loads(sys.argv[2]); print("| %s | %s | %.3f | %.3f | %.2f |" % (sys.argv[3], sys.argv[4], s["median_ms"], o["median_ms"], s["median_ms"]/o["median_ms"]))' "$s" "$o" "$name" "$t"
  done
done
