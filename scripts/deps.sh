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
  python3-onnx python3-numpy python3-torch python3-torchvision
)
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
