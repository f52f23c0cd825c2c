#!/usr/bin/env bash
# Installs the singa Python package into a venv (pip, meson-python, build dir
# build-py) and runs python/tests with pytest from outside the source tree, so
# the installed package is what gets tested.
#   scripts/test_python.sh [pytest args...]
# SINGA_PY_VENV picks the venv (default: build-py/venv).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${SINGA_PY_VENV:-$ROOT/build-py/venv}
SINGA_PY_VENV=$VENV scripts/install_python.sh
cd "$(mktemp -d)"
exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider -rfE "$ROOT/python/tests" "$@"
