#!/usr/bin/env bash
# Installs the singa Python package into a venv with pip (meson-python; the
# build folder build-py is kept, so a re-install recompiles only what changed).
# The venv sees Debian's numpy, onnx and pytest (--system-site-packages): there
# is no PyPI here.
#   scripts/install_python.sh            # venv: build-py/venv, or $SINGA_PY_VENV
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${SINGA_PY_VENV:-$ROOT/build-py/venv}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}
mkdir -p "$(dirname "$VENV")"
[ -x "$VENV/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$VENV"
# pip 23.0 spells it --config-settings; meson-python 0.12 calls the key builddir.
flock /tmp/singa-py-build.lock "$VENV/bin/pip" install -q --no-build-isolation --no-deps \
  --config-settings=builddir=build-py "$ROOT"
echo "singa Python package installed into $VENV (activate: . $VENV/bin/activate)" >&2
