#!/usr/bin/env bash
# The main job, SINGA's sonnx MNIST workflow on Fashion-MNIST: install what is
# missing (apt), build, install the Python package (build-py/venv), then train the seed CNN, export it to ONNX, load the
# file back and test it, re-train the imported model, and transfer-learn (the
# imported model cut before its last layer, Linear 500->128->32->10 appended),
# printing the test accuracy after each stage.
#
#   scripts/demo.sh [singa train options]     e.g. --epochs 1, --threads 1, --json
#
# The state is checkpointed after every epoch (build/demo/fashion_mnist.ckpt):
# run the script again after an interruption and it resumes where it stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
scripts/install_python.sh
BUILD=${SINGA_BUILD_DIR:-build}
OUT="$BUILD/demo"
mkdir -p "$OUT"
ckpt="$OUT/fashion_mnist.ckpt"
resume=()
# A checkpoint left by an interrupted run is picked up; a finished run starts afresh.
if [ -f "$ckpt" ] && [ ! -f "$OUT/done" ]; then
  echo "demo: resuming from $ckpt" >&2
  resume=(--resume)
fi
rm -f "$OUT/done"
"$BUILD/tools/singa" train --model "$OUT/fashion_mnist.onnx" --checkpoint "$ckpt" "${resume[@]}" "$@"
touch "$OUT/done"
echo "demo: the trained model is $OUT/fashion_mnist.onnx (singa run / singa info read it; so does ONNX Runtime)"
echo "demo: the Python package is in build-py/venv; examples/python/ runs the same workflow in Python"
