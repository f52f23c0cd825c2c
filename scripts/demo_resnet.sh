#!/usr/bin/env bash
# Inference demo: install what is missing, build, make a ResNet-18 (random
# weights, exported by PyTorch) and run it, printing its top outputs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh
BUILD=${SINGA_BUILD_DIR:-build}
MODELS="$BUILD/demo-models"
if [ ! -f "$MODELS/resnet18_opset13/model.onnx" ]; then
  /usr/bin/python3 tests/models/make_models.py "$MODELS" --only resnet18_opset13 >/dev/null
fi
"$BUILD/tools/singa" run "$MODELS/resnet18_opset13/model.onnx" \
  --input image="$MODELS/resnet18_opset13/test_data_set_0/input_0.pb" --top 5 "$@"
# The same model checked against PyTorch's own outputs (rtol 1e-3, atol 1e-4).
"$BUILD/tools/singa" conformance "$MODELS/resnet18_opset13" --atol 1e-4
