#!/usr/bin/env bash
# Configures (once) and builds the tree in ./build.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${SINGA_BUILD_DIR:-build}
# ccache (used by meson when installed) then hashes paths relative to the checkout,
# so a fresh clone of the same sources (CI) reuses the objects of an earlier build.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
if [ ! -f "$BUILD/build.ninja" ]; then
  meson setup "$BUILD" --buildtype=release >/dev/null
fi
ninja -C "$BUILD" -j"$(nproc)" >/dev/null
