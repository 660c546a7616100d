#!/usr/bin/env bash
# The main job: the seed's AlexNet example, in C++. Installs what is missing, builds, exports
# AlexNet (batch 10; names actual_input_1, learned_0..15, output1; verbose), checks the file,
# runs it on tonnx's backend and on ONNX Runtime, and prints the largest difference from
# LibTorch's own outputs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
mkdir -p out
build/example_alexnet out/alexnet.onnx out/alexnet_data
build/tonnx check out/alexnet.onnx
echo "== ONNX Runtime vs LibTorch"
node tools/ort_run.js out/alexnet.onnx --test-data out/alexnet_data
