#!/bin/sh
# Proves that the installed SDK is enough to build a device plugin with its
# own fusion: installs this build into a staging folder, builds
# sdk/examples/toy_device from a copy of its sources with only the staged
# singa-sdk.pc, and runs the example's model with `singa run --device toy`
# (the plugin found through SINGA_PLUGIN_PATH). It checks that
#  - the outputs equal numpy's;
#  - the toy's graph pass fused Gemm+Relu and Add+Relu into toy.vendor ops
#    that ran on the toy device, and its plain kernels ran there too;
#  - the op the toy lacks (Sigmoid) and the node its MatMul declines (rank 3)
#    fell back to the CPU;
#  - buffers really came from the toy's pool and crossed by its copies;
#  - the result equals the run without the fusion (the pass switched off
#    with --option where the CLI has it, and the CPU run in any case);
#  - the host orders the toy's asynchronous streams (ABI 1.4 events): with
#    every toy stream pausing before each task, the model (toy nodes mixed
#    with CPU fallback nodes) run many times, and from two threads at once
#    through the staged Python package, gives the CPU's results every time.
#
# usage: sdk_device_example_test.sh SOURCE_ROOT BUILD_ROOT SINGA_EXE
set -eu

src_root=$1
build_root=$2
singa=$3
python=/usr/bin/python3

work=$(mktemp -d "${TMPDIR:-/tmp}/singa_sdk_device.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

fail() {
  echo "sdk_device_example_test: FAIL: $*" >&2
  exit 1
}

. "$src_root/tests/sdk_stage.sh"

# Build from a copy, so nothing of the singa tree is next to the sources.
cp -R "$src_root/sdk/examples/toy_device" "$work/src"
echo "== building the toy device plugin"
meson setup "$work/build" "$work/src" >"$work/setup.log" 2>&1 || { cat "$work/setup.log" >&2; fail "meson setup failed"; }
ninja -C "$work/build" >"$work/ninja.log" 2>&1 || { cat "$work/ninja.log" >&2; fail "the example does not compile"; }
plugin="$work/build/singa_example_toy_device.so"
[ -f "$plugin" ] || fail "the example built no $plugin"
if grep -q "$src_root/sdk/include" "$work/build/compile_commands.json"; then
  fail "the example was compiled against the source tree's SDK, not the installed one"
fi
exported=$(nm -D --defined-only "$plugin" | awk '$2 ~ /^[TDBR]$/ {print $3}')
[ "$exported" = "singa_plugin_init" ] || fail "the example exports '$exported', expected only singa_plugin_init"

SINGA_PLUGIN_PATH="$work/build"
export SINGA_PLUGIN_PATH

echo "== singa plugins"
"$singa" plugins >"$work/plugins.log" 2>&1 || { cat "$work/plugins.log" >&2; fail "singa plugins failed"; }
grep -q "toy_device" "$work/plugins.log" || { cat "$work/plugins.log" >&2; fail "singa plugins does not list toy_device"; }
grep -q "toy: 1 available" "$work/plugins.log" || { cat "$work/plugins.log" >&2; fail "the toy device is not listed as available"; }

echo "== making the model"
"$python" "$work/src/make_model.py" "$work/data"

run_model() {
  out=$1
  shift
  "$singa" run "$work/data/model.onnx" --input "X=$work/data/X.npy" --input "S=$work/data/S.npy" \
    --input "K=$work/data/K.npy" --input "Zb=$work/data/Zb.npy" --output-dir "$work/$out" --verbose "$@" >"$work/$out.log" 2>&1 ||
    { cat "$work/$out.log" >&2; fail "singa run $* failed"; }
}

echo "== running on the toy device (SINGA_LOG_LEVEL=0 shows the pool's events)"
SINGA_LOG_LEVEL=0 SINGA_OPTIONS=toy.stream_delay_us=50 run_model toy --device toy
cat "$work/toy.log"

# The placement lines read: node  op  device  plugin.
placed() { # NODE_NAME_PATTERN OP DEVICE: some placement line matches all three
  awk -v n="$1" -v o="$2" -v d="$3" '$1 ~ n && $2 == o && $3 == d {found = 1} END {exit !found}' "$work/toy.log"
}
placed '' GemmRelu toy || fail "no toy.vendor::GemmRelu ran on toy: the pass did not fuse Gemm+Relu"
placed '' AddRelu toy || fail "no toy.vendor::AddRelu ran on toy: the pass did not fuse Add+Relu"
grep -q "toy_device" "$work/toy.log" || fail "the placement names no node run by the toy_device plugin"
placed '^out_add$' Add toy || fail "the plain Add (out_add) did not run on toy"
placed '^out_matmul$' MatMul toy || fail "the plain MatMul (out_matmul) did not run on toy"
placed '^out_relu$' Relu toy || fail "the plain Relu (out_relu) did not run on toy"
placed '^gate$' Sigmoid cpu || fail "Sigmoid, which the toy lacks, did not fall back to the cpu"
placed '^batched_matmul$' MatMul cpu || fail "the rank-3 MatMul the toy declines did not fall back to the cpu"
placed '^row_add$' Add cpu || fail "the row-broadcast Add the toy declines did not fall back to the cpu"
if grep -q "dense_relu\|skip_relu" "$work/toy.log" || placed '' Gemm toy; then
  fail "a Relu or Gemm ran unfused on toy although the pass should have claimed it"
fi
grep -q "toy: alloc" "$work/toy.log" || fail "the toy's pool logged no allocation"
grep -q "toy: copy host->toy" "$work/toy.log" || fail "no value was copied onto the toy device"
grep -q "toy: copy toy->host" "$work/toy.log" || fail "no value was copied back from the toy device"

compare() { # DIR_A DIR_B_OR_EXPECTED MODE: MODE 'numpy' compares with expected_*.npy, 'run' two runs
  "$python" - "$work/$1" "$2" "$3" <<'PY'
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def load_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


got_dir, other, mode = sys.argv[1:4]
for name in ("Y", "Z"):
    got = load_pb(os.path.join(got_dir, name + ".pb"))
    want = np.load(os.path.join(other, f"expected_{name}.npy")) if mode == "numpy" else load_pb(os.path.join(other, name + ".pb"))
    if got.shape != want.shape or got.dtype != want.dtype:
        sys.exit(f"{name} is {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}")
    # float32 sums of 8 products: a few ulps from numpy's float64 rounded once;
    # the same arithmetic in another order (fused or not, toy or CPU) likewise.
    if not np.allclose(got, want, rtol=1e-5, atol=1e-6):
        sys.exit(f"{name} differs ({mode}):\n got {got.tolist()}\nwant {want.tolist()}")
    print(f"{name} matches ({mode}), max abs difference {float(np.max(np.abs(got - want))):.3g}")
PY
}

compare toy "$work/data" numpy || fail "the toy run differs from numpy"

echo "== the same model on the cpu"
run_model cpu --device cpu
compare toy "$work/cpu" run || fail "the toy run differs from the cpu run"

if "$singa" run --help 2>&1 | grep -q -- '--option'; then
  echo "== on the toy device with the pass switched off (--option pass.toy.fusions=0)"
  run_model unfused --device toy --option pass.toy.fusions=0
  cat "$work/unfused.log"
  if grep -q "GemmRelu\|AddRelu" "$work/unfused.log"; then fail "pass.toy.fusions=0 did not switch the pass off"; fi
  awk '$2 == "Relu" && $3 == "toy" {found = 1} END {exit !found}' "$work/unfused.log" ||
    fail "without the pass, Relu did not run on toy"
  compare toy "$work/unfused" run || fail "the fused run differs from the unfused one"
else
  echo "== (this singa has no --option: the unfused comparison is the cpu run above)"
fi
# The toy's streams are worker threads; toy.stream_delay_us makes each pause
# before every task, so a hand-off the host does not wait for reads memory
# that is not written yet. Runs through the staged Python package (the CLI
# runs a model once): sequentially, then from two threads.
pyext=$(find "$work/stage" -name '_singa*.so' | head -n 1)
corelib=$(find "$work/stage" -name 'libsinga_core.so' | head -n 1)
if [ -n "$pyext" ] && [ -n "$corelib" ]; then
  echo "== many runs on the toy's asynchronous streams, from one thread and from two"
  SINGA_OPTIONS=toy.stream_delay_us=50 PYTHONPATH="$(dirname "$(dirname "$pyext")")" \
    LD_LIBRARY_PATH="$(dirname "$corelib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$python" - "$work/data" <<'PY' || fail "runs on the toy's streams differ from the cpu's"
import os
import sys
import threading

import numpy as np
import singa  # loads the plugins: the build's, and the toy through SINGA_PLUGIN_PATH
from singa import _singa

data = sys.argv[1]
with open(os.path.join(data, "model.onnx"), "rb") as f:
    model = f.read()
base = [np.load(os.path.join(data, n + ".npy")) for n in ("X", "S", "K", "Zb")]
cpu = _singa.prepare(model, device="cpu")
toy = _singa.prepare(model, device="toy")
devices = {p[2] for p in toy.placement()}
if devices != {"toy", "cpu"}:
    sys.exit(f"expected nodes on the toy and the cpu, got {sorted(devices)}")

rng = np.random.default_rng(1)
cases = [[x * rng.uniform(0.5, 1.5, size=x.shape).astype(x.dtype) for x in base] for _ in range(40)]


def outputs(rep, xs):
    return [np.array(v.numpy()) for _, v in rep.run(xs)]


wants = [outputs(cpu, xs) for xs in cases]
wrong = []


def check(indices):
    for i in indices:
        for got, want in zip(outputs(toy, cases[i]), wants[i]):
            # the same float32 arithmetic in another order (fused or not)
            if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-6):
                wrong.append(i)
                break


check(range(len(cases)))
print(f"{len(cases)} sequential runs: {len(cases) - len(wrong)} match the cpu")
if wrong:
    sys.exit(f"sequential runs {sorted(wrong)} differ from the cpu's")
threads = [threading.Thread(target=check, args=(range(t, len(cases), 2),)) for t in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"{len(cases)} runs from two threads: {len(cases) - len(wrong)} match the cpu")
if wrong:
    sys.exit(f"concurrent runs {sorted(set(wrong))} differ from the cpu's")
PY
else
  echo "== (no Python package in this build: the runs on several threads are left to tests/unit/test_events.cpp)"
fi
echo "sdk_device_example_test: PASS"
