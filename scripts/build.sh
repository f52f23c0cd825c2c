#!/usr/bin/env bash
# Configures (once) and builds the tree in ./build.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${SINGA_BUILD_DIR:-build}
if [ ! -f "$BUILD/build.ninja" ]; then
  meson setup "$BUILD" --buildtype=release >/dev/null
fi
ninja -C "$BUILD" -j"$(nproc)" >/dev/null
