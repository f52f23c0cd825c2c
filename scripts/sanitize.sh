#!/bin/bash
# Builds singa with AddressSanitizer + UndefinedBehaviorSanitizer (everything, plugins included:
# -Dsanitize_all=true) and runs, with halt_on_error and LeakSanitizer on:
#   1. the unit suites (GoogleTest) and the hardening suite (malformed corpus, leak loop, fuzz
#      regression replay: tests/malformed/),
#   2. a spread subset of the ONNX node conformance cases that are expected to pass.
# Prints one summary; exit status 0 only when every stage passed and no sanitizer reported.
#
#   scripts/sanitize.sh [BUILD_DIR]        (default: build-asan next to this script's repo)
#   SANITIZE_CONFORMANCE_CASES=150  SANITIZE_JOBS=2  CC/CXX as for meson (gcc or clang)
#
# An existing BUILD_DIR is reused (and switched to sanitize_all/tests), so CI can cache it.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${1:-$root/build-asan}")
cases=${SANITIZE_CONFORMANCE_CASES:-150}
jobs=${SANITIZE_JOBS:-2}
onnx_data=/usr/include/onnx/backend/test/data/node
logdir="$build/sanitize-logs"

# abort_on_error: a report ends the process with SIGABRT, which every runner counts as a failure.
# intercept_tls_get_addr=0: GCC 12's sanitizer runtime (up to GCC 13 / LLVM 16) takes a dynamic
# TLS block whose address is 16 mod 4096 for one carrying a glibc 2.19 header and reads a bogus
# range from the words before it; LeakSanitizer's exit-time tracer then dies scanning it
# ("Tracer caught signal 11", "DTLS 10 at 0x0001000008d0-..." with LSAN_OPTIONS=verbosity=1).
# Every plugin is dlopen'ed and keeps thread_local scratch, so test_train_kernels hit it in 1 run
# of ~30 (CI failed on it); with the interception off, 0 of 500 runs. Dynamic TLS blocks are
# then found through the thread's DTV like any heap block, so leak checking still covers them.
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:intercept_tls_get_addr=0"
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="print_suppressions=0"
export SINGA_PLUGIN_PATH=
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}  # see scripts/build.sh

declare -a names results times
stage() {  # stage NAME COMMAND...: runs it, records pass/fail and seconds
  local name=$1; shift
  local t0=$SECONDS
  echo "== $name: $*"
  "$@" > "$logdir/$name.log" 2>&1
  local rc=$?
  names+=("$name"); times+=($((SECONDS - t0)))
  if [ $rc -eq 0 ]; then results+=("PASS"); else results+=("FAIL (exit $rc, see $logdir/$name.log)"); fi
  tail -n 3 "$logdir/$name.log"
}

t_start=$SECONDS
if [ -f "$build/build.ninja" ]; then
  meson configure "$build" -Dsanitize_all=true -Dtests=true > /dev/null || exit 1
else
  meson setup "$build" "$root" -Dsanitize_all=true -Dbuildtype=debugoptimized -Doptimization=1 \
    -Dcuda=disabled -Dopencl=disabled || exit 1
fi
mkdir -p "$logdir"
stage build ninja -C "$build" -j"$jobs"
if [ "${results[0]}" != PASS ]; then
  tail -n 30 "$logdir/build.log"; exit 1
fi

# Every unit and hardening test except sdk_example (it installs the tree and builds the SDK
# example without sanitizers: it tests packaging, not memory safety).
mapfile -t tests < <(meson test -C "$build" --list 2>/dev/null | sed -n 's/^singa:\(unit\|malformed\) \/ //p' | grep -v '^sdk_example$')
stage tests meson test -C "$build" --no-rebuild --print-errorlogs --num-processes "$jobs" -t 4 "${tests[@]}"

# A spread of the passing node cases: every k-th name of the expected list.
subset="$logdir/conformance-subset.txt"
total=$(grep -cv '^\s*\(#\|$\)' "$root/tests/conformance/expected_node.txt")
step=$(( total / cases )); [ $step -lt 1 ] && step=1
grep -v '^\s*\(#\|$\)' "$root/tests/conformance/expected_node.txt" | awk -v s=$step -v n=$cases 'NR % s == 0 && c < n {print; c++}' > "$subset"
mapfile -t dirs < <(sed "s|^|$onnx_data/|" "$subset")
stage conformance "$build/tools/singa" conformance "${dirs[@]}" --expect "$subset" --timeout 600

# The same spread of ONNX 1.23's node suite (IR 9+ and opset 18+ models take singa's own intake
# path), when its data is beside the checkout (or at $SINGA_ONNX_NODE_1_23).
node_1_23=${SINGA_ONNX_NODE_1_23:-$root/../shared/onnx-node-1.23/node}
subset_1_23="$logdir/conformance-1.23-subset.txt"
: > "$subset_1_23"
if [ -d "$node_1_23" ]; then
  total=$(grep -cv '^\s*\(#\|$\)' "$root/tests/conformance/expected_node_1_23.txt")
  step=$(( total / cases )); [ $step -lt 1 ] && step=1
  grep -v '^\s*\(#\|$\)' "$root/tests/conformance/expected_node_1_23.txt" | awk -v s=$step -v n=$cases 'NR % s == 0 && c < n {print; c++}' > "$subset_1_23"
  mapfile -t dirs < <(sed "s|^|$node_1_23/|" "$subset_1_23")
  stage conformance-1.23 "$build/tools/singa" conformance "${dirs[@]}" --expect "$subset_1_23" --timeout 600
fi

# A sanitizer report in any log counts even where a runner swallowed the exit status.
reports=$(grep -l -E "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$logdir"/*.log "$build"/meson-logs/testlog.txt 2>/dev/null | sort -u)

echo
echo "sanitize.sh summary ($(basename "$build"), $(nproc) cores, ASan+UBSan, halt_on_error, LSan on):"
ok=1
for i in "${!names[@]}"; do
  printf '  %-12s %-6s %5ss\n' "${names[$i]}" "${results[$i]}" "${times[$i]}"
  [ "${results[$i]}" = PASS ] || ok=0
done
echo "  conformance subset: $(wc -l < "$subset") node cases of ONNX 1.12, $(wc -l < "$subset_1_23") of ONNX 1.23 (a spread of each expected list)"
echo "  tests: $(grep -E '^(Ok|Fail|Expected Fail|Unexpected Pass|Skipped|Timeout):' "$logdir/tests.log" | tr -s ' ' | paste -sd' ')"
if [ -n "$reports" ]; then
  ok=0
  echo "  sanitizer reports in: $reports"
  grep -h -E "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" $reports | sort | uniq -c | head -20
else
  echo "  sanitizer reports: none"
fi
echo "  total: $((SECONDS - t_start))s"
[ $ok = 1 ]
