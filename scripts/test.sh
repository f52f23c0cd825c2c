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
/usr/bin/python3 scripts/summarize_tests.py "$BUILD/meson-logs/testlog.json"
exit $rc
