#!/usr/bin/env bash
# Builds and runs every test suite (unit, ABI, conformance, models), then
# prints one line "N passed, M failed" over every case that ran.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh || exit 1
scripts/build.sh || { echo "0 passed, 1 failed"; exit 1; }
BUILD=${SINGA_BUILD_DIR:-build}
meson test -C "$BUILD" --print-errorlogs --num-processes "$(nproc)" "$@"
rc=$?
# The Python package, installed into a venv with pip and tested from outside
# the source tree (SINGA_SKIP_PYTHON=1 leaves it out).
py=()
if [ "${SINGA_SKIP_PYTHON:-0}" != 1 ]; then
  mkdir -p "$BUILD/meson-logs"
  scripts/test_python.sh -k "not cuda" > "$BUILD/meson-logs/pytest.log" 2>&1 || rc=1
  tail -n 15 "$BUILD/meson-logs/pytest.log"
  py=(--pytest-log "$BUILD/meson-logs/pytest.log")
fi
# The same unit and hardening suites, and a spread of conformance cases, under
# ASan+UBSan+LSan (its own build folder; SINGA_SKIP_SANITIZE=1 leaves it out).
extra=()
if [ "${SINGA_SKIP_SANITIZE:-0}" != 1 ]; then
  ASAN_BUILD=${SINGA_ASAN_BUILD_DIR:-build-asan}
  scripts/sanitize.sh "$ASAN_BUILD" > "sanitize.log" 2>&1
  san=$?
  sed -n '/^sanitize.sh summary/,$p' sanitize.log
  if [ -f "$ASAN_BUILD/meson-logs/testlog.json" ] && [ -f "$ASAN_BUILD/sanitize-logs/conformance.log" ]; then
    extra=("$ASAN_BUILD/meson-logs/testlog.json" --conformance-log "$ASAN_BUILD/sanitize-logs/conformance.log")
    [ -f "$ASAN_BUILD/sanitize-logs/conformance-1.23.log" ] &&
      extra+=(--conformance-log "$ASAN_BUILD/sanitize-logs/conformance-1.23.log")
  fi
  if [ $san -ne 0 ]; then
    rc=1
    [ ${#extra[@]} -eq 0 ] && extra=(--failed-stage sanitize) && tail -n 30 sanitize.log
  fi
fi
/usr/bin/python3 scripts/summarize_tests.py "$BUILD/meson-logs/testlog.json" "${py[@]}" "${extra[@]}"
exit $rc
