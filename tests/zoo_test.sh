#!/usr/bin/env bash
# Exports a zoo model with the CLI, checks it, and verifies ONNX Runtime and tonnx's backend
# against LibTorch's eager outputs (written by --test-data).
# Usage: zoo_test.sh BUILD_DIR SOURCE_DIR MODEL [extra export args]
set -euo pipefail
build=$1 src=$2 model=$3
shift 3
dir="$build/test_tmp/zoo_${model}_$$"  # unique: several variants of a model run in parallel
rm -rf "$dir" && mkdir -p "$dir"
"$build/tonnx" export "$model" -o "$dir/$model.onnx" --test-data "$dir/data" "$@"
"$build/tonnx" check "$dir/$model.onnx"
echo "== ONNX Runtime vs LibTorch"
# shellcheck disable=SC2086  # TONNX_ORT_TOL holds several words
node "$src/tools/ort_run.js" "$dir/$model.onnx" --test-data "$dir/data" ${TONNX_ORT_TOL:-}
echo "== tonnx backend vs LibTorch"
# shellcheck disable=SC2086  # TONNX_TOL holds several words
"$build/tonnx" run "$dir/$model.onnx" --test-data "$dir/data" ${TONNX_TOL:-}
rm -rf "$dir"
