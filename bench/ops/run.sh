#!/bin/sh
# The op matrix: times one-node models of every op singa runs from ONNX's node
# suite (make_op_models.py) with `singa bench` and ONNX Runtime (ort_op.js),
# at 1 and 2 threads in the same run, and prints a Markdown table with the
# singa/ORT ratio of each; rows above 1.5x are re-timed and then flagged.
#
#   bench/ops/run.sh [BUILD_DIR] [--ops Add,Softmax,...] [--quick] [--iters K] [--threads 1,2]
#
# --quick: the smaller shape of each op, float32 only, 10 iterations.
# Models go to ${TMPDIR:-/tmp}/singa_op_matrix. Needs bench/node_modules
# (npm ci in bench/) and Debian's python3-onnx.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=build
gen=""
iters=20
threads=1,2
while [ $# -gt 0 ]; do
  case "$1" in
    --ops) gen="$gen --ops $2"; shift 2 ;;
    --quick) gen="$gen --quick"; iters=10; shift ;;
    --iters) iters=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) build=$1; shift ;;
  esac
done
models=${TMPDIR:-/tmp}/singa_op_matrix
rm -f "$models"/*.onnx
# shellcheck disable=SC2086
manifest=$(/usr/bin/python3 "$here/make_op_models.py" "$models" $gen)
exec /usr/bin/python3 "$here/run_matrix.py" "$manifest" --singa "$build/tools/singa" --iters "$iters" \
  --threads "$threads"
