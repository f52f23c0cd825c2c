#!/usr/bin/env bash
# Installs, from Debian's packages, whatever the build and the tests need and
# this machine lacks. Safe to run again: it only calls apt-get when something is missing.
set -euo pipefail
PKGS=(
  meson ninja-build pkg-config g++
  libonnx-dev libprotobuf-dev protobuf-compiler
  libboost-dev libboost-filesystem-dev libboost-program-options-dev
  libgtest-dev libdlpack-dev libopenblas-dev
  libonnx-testdata
  python3-onnx python3-numpy python3-torch python3-torchvision python3-sklearn
  ccache libdnnl-dev
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  dataset-fashion-mnist libopenblas0-pthread
  clang libclang-rt-14-dev
  libre2-dev libjpeg-dev libpng-dev libtiff-dev libwebp-dev libopenjp2-7-dev
  libopenmpi-dev openmpi-bin
  pybind11-dev python3-mesonpy python3-pytest python3-venv python3-pip
)
# Node.js only when the machine has none (it runs ONNX Runtime, our benchmark and export peer).
command -v node >/dev/null 2>&1 || PKGS+=(nodejs npm)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ONNX Runtime's real CPU library, from npm (the variable stops its install script fetching GPU files).
if [ ! -d "$(dirname "$0")/../bench/node_modules/onnxruntime-node" ]; then
  echo "deps: installing onnxruntime-node into bench/node_modules" >&2
  (cd "$(dirname "$0")/../bench" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund --silent >/dev/null) ||
    echo "deps: warning: npm install of onnxruntime-node failed; the ONNX Runtime comparisons will be skipped" >&2
fi
