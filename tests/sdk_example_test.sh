#!/bin/sh
# Proves that the installed SDK is enough to build an op pack: installs this
# build into a staging folder, builds sdk/examples/custom_op from a copy of
# its sources with only the staged singa-sdk.pc to find the headers, then
# runs the example's model through `singa run` with the pack found through
# SINGA_PLUGIN_PATH and compares the output with numpy's. Then trains through
# the custom op: the example's trainer, built against the staged libsinga_core
# and headers, checks W's gradient (ScaledAdd's backward kernel) against
# central differences and fits a target with SGD.
#
# usage: sdk_example_test.sh SOURCE_ROOT BUILD_ROOT SINGA_EXE
set -eu

src_root=$1
build_root=$2
singa=$3
python=/usr/bin/python3

work=$(mktemp -d "${TMPDIR:-/tmp}/singa_sdk_example.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

fail() {
  echo "sdk_example_test: FAIL: $*" >&2
  exit 1
}

. "$src_root/tests/sdk_stage.sh"

echo "== pkg-config --cflags singa-sdk: $(pkg-config --cflags singa-sdk)"
inc=$(pkg-config --cflags-only-I singa-sdk | tr ' ' '\n' | sed -n 's/^-I//p' | while read -r d; do
  [ -f "$d/singa/singa_abi.h" ] && echo "$d"; done | head -n 1)
[ -n "$inc" ] || fail "pkg-config --cflags singa-sdk names no folder holding singa/singa_abi.h"
case $inc in
  "$work/stage"*) ;;
  *) fail "singa-sdk.pc points at $inc, outside the staged install" ;;
esac

# Build from a copy, so nothing of the singa tree is next to the sources.
cp -R "$src_root/sdk/examples/custom_op" "$work/src"
echo "== building the example"
core_lib=$(find "$work/stage" -name 'libsinga_core.so*' | head -n 1)
[ -n "$core_lib" ] || fail "the install has no libsinga_core.so"
core_libdir=$(dirname "$core_lib")
meson setup "$work/build" "$work/src" -Dsinga_libdir="$core_libdir" >"$work/setup.log" 2>&1 ||
  { cat "$work/setup.log" >&2; fail "meson setup failed"; }
ninja -C "$work/build" >"$work/ninja.log" 2>&1 || { cat "$work/ninja.log" >&2; fail "the example does not compile"; }
plugin="$work/build/singa_example_custom_op.so"
[ -f "$plugin" ] || fail "the example built no $plugin"
if grep -q "$src_root/sdk/include" "$work/build/compile_commands.json"; then
  fail "the example was compiled against the source tree's SDK, not the installed one"
fi
exported=$(nm -D --defined-only "$plugin" | awk '$2 ~ /^[TDBR]$/ {print $3}')
[ "$exported" = "singa_plugin_init" ] || fail "the example exports '$exported', expected only singa_plugin_init"

echo "== making the model"
"$python" "$work/src/make_model.py" "$work/data"

run_model() {
  "$singa" run "$work/data/model.onnx" --input "A=$work/data/A.npy" --input "B=$work/data/B.npy" "$@"
}

# Without the pack, com.example::ScaledAdd has no kernel: the run must fail
# and say so, or the check below would prove nothing.
if env -u SINGA_PLUGIN_PATH "$singa" run "$work/data/model.onnx" >"$work/without.log" 2>&1; then
  fail "the model ran without the example plugin"
fi
grep -q "ScaledAdd" "$work/without.log" || { cat "$work/without.log" >&2; fail "the error does not name ScaledAdd"; }

echo "== running the model with SINGA_PLUGIN_PATH=$work/build"
SINGA_PLUGIN_PATH="$work/build" run_model --output-dir "$work/out" --verbose >"$work/run.log" 2>&1 ||
  { cat "$work/run.log" >&2; fail "singa run failed"; }
cat "$work/run.log"
grep "scaled_add" "$work/run.log" | grep -q "example_custom_op" ||
  fail "the placement does not show scaled_add running in example_custom_op"

"$python" - "$work/out/D.pb" "$work/data/expected_D.npy" <<'PY'
import sys

import numpy as np
import onnx
from onnx import numpy_helper

got_path, want_path = sys.argv[1], sys.argv[2]
t = onnx.TensorProto()
with open(got_path, "rb") as f:
    t.ParseFromString(f.read())
got = numpy_helper.to_array(t)
want = np.load(want_path)
if got.shape != want.shape or got.dtype != want.dtype:
    sys.exit(f"D is {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}")
if not np.allclose(got, want, rtol=1e-6, atol=1e-6):
    sys.exit(f"D differs from numpy:\n got {got.tolist()}\nwant {want.tolist()}")
print("D matches numpy:", got.tolist())
PY
echo "== training through the custom op"
trainer="$work/build/train_scaled_add"
[ -x "$trainer" ] || fail "the example built no trainer (libsinga_core not found in $core_libdir?)"
if grep -q "$src_root/core/include" "$work/build/compile_commands.json"; then
  fail "the trainer was compiled against the source tree's headers, not the installed ones"
fi
# Without the pack the model cannot even be prepared: proves the trainer
# really runs the out-of-tree op.
if env -u SINGA_PLUGIN_PATH LD_LIBRARY_PATH="$core_libdir" "$trainer" "$work/data/train_model.onnx" >"$work/train_without.log" 2>&1; then
  fail "the trainer ran without the example plugin"
fi
SINGA_PLUGIN_PATH="$work/build" LD_LIBRARY_PATH="$core_libdir" "$trainer" "$work/data/train_model.onnx" >"$work/train.log" 2>&1 ||
  { cat "$work/train.log" >&2; fail "training through ScaledAdd failed"; }
cat "$work/train.log"
echo "sdk_example_test: PASS"
