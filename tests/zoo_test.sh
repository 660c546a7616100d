#!/usr/bin/env bash
# Exports a zoo model with the CLI, checks it, verifies ONNX Runtime against LibTorch's eager
# outputs (written by --test-data), and holds tonnx's backend to the accuracy rule
# (tests/accuracy_rule.py, docs/backend.md "Accuracy"): its error against the model run in
# double by LibTorch at most twice the larger of ONNX Runtime's and LibTorch-float32's.
# Usage: zoo_test.sh BUILD_DIR SOURCE_DIR MODEL [extra export args]
set -euo pipefail
build=$1 src=$2 model=$3
shift 3
dir="$build/test_tmp/zoo_${model}_$$"  # unique: several variants of a model run in parallel
rm -rf "$dir" && mkdir -p "$dir"
"$build/tonnx" export "$model" -o "$dir/$model.onnx" --test-data "$dir/data" --float64-reference "$@"
"$build/tonnx" check "$dir/$model.onnx"
echo "== ONNX Runtime vs LibTorch"
# shellcheck disable=SC2086  # TONNX_ORT_TOL holds several words
node "$src/tools/ort_run.js" "$dir/$model.onnx" --test-data "$dir/data" --output-dir "$dir/ort" \
  ${TONNX_ORT_TOL:-}
echo "== tonnx backend vs LibTorch (per element, for information; the rule below decides)"
rc=0
"$build/tonnx" run "$dir/$model.onnx" --test-data "$dir/data" --output-dir "$dir/tonnx" || rc=$?
[ "$rc" -le 1 ] || { echo "tonnx run failed (exit $rc)"; exit 1; }
echo "== the accuracy rule against LibTorch in float64"
/usr/bin/python3 "$src/tests/accuracy_rule.py" "$dir/data/float64_reference" \
  "$dir/data/test_data_set_0" "$dir/tonnx" "$dir/ort"
rm -rf "$dir"
