#!/usr/bin/env bash
# Installs what is missing (Debian packages, the npm oracle) and builds tonnx.
# Idempotent: quick when everything is in place. Usage: scripts/setup.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build}"

# Build and run time: LibTorch, libonnx, protobuf, oneDNN's headers (LibTorch already links
# the library), OpenBLAS (Debian's default BLAS is the slow reference one), GoogleTest,
# ccache, ninja, Graphviz's library (tonnx print --format svg). Tests only: Python torch/onnx (peer
# comparisons), ONNX's backend test data, Node.js for ONNX Runtime, parameterized and xz-utils
# (torch.onnx's own test suite, tests/torch_onnx_suite/).
PACKAGES=(cmake g++ ninja-build ccache pkg-config libtorch-dev libonnx-dev libprotobuf-dev
  protobuf-compiler libdnnl-dev libopenblas0-openmp libgtest-dev python3-torch python3-torchvision
  python3-onnx python3-parameterized xz-utils libonnx-testdata nodejs libgraphviz-dev)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v npm >/dev/null || { echo "setup: npm is missing (install Debian's npm package)"; exit 1; }

# ONNX Runtime for Node: the independent runtime that checks tonnx's files. Its postinstall
# script tries a download; the package already ships libonnxruntime for linux x64.
if [ ! -f tools/node_modules/onnxruntime-node/package.json ]; then
  echo "setup: installing onnxruntime-node into tools/"
  (cd tools && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi

export CCACHE_DIR="${CCACHE_DIR:-$HOME/.ccache}"
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release ${TONNX_CMAKE_ARGS:-}
fi
cmake --build "$BUILD_DIR" -j2
