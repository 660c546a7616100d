#!/usr/bin/env bash
# Quantized models (LibTorch eager-mode quantization, traced by Python torch): exported by
# tonnx's CLI (QuantizeLinear/DequantizeLinear, integer weights kept), then run on ONNX Runtime
# and tonnx's backend against LibTorch's own outputs (integer values, scales and zero points of
# quantized outputs; floats of dequantized ones). See docs/quantization.md.
# Usage: quantized_test.sh BUILD_DIR SOURCE_DIR [OPSET] [MODEL...]
set -euo pipefail
build=$1 src=$2 opset=${3:-13}
shift 3 || shift $#
dir="$build/test_tmp/quantized$opset"
rm -rf "$dir"
mkdir -p "$dir"
/usr/bin/python3 "$src/tests/fixtures/quantized_models.py" "$dir" "$@" 2>/dev/null
for d in "$dir"/*/; do
  m=$(basename "$d")
  echo "== $m (opset $opset)"
  "$build/tonnx" export "$d/model.pt" -o "$d/model.onnx" --opset "$opset" \
    --inputs "$(cat "$d/inputs")" --test-data "$d/data" > "$d/export.txt"
  grep -q QuantizeLinear "$d/export.txt" || grep -q DequantizeLinear "$d/export.txt" ||
    { echo "no QuantizeLinear/DequantizeLinear in the export of $m"; cat "$d/export.txt"; exit 1; }
  tol=$(cat "$d/tolerance")  # where LibTorch's integer arithmetic may round otherwise: why there
  # shellcheck disable=SC2086  # tol holds an option and its value
  node "$src/tools/ort_run.js" "$d/model.onnx" --test-data "$d/data" $tol
  # shellcheck disable=SC2086
  "$build/tonnx" run "$d/model.onnx" --test-data "$d/data" $tol | tail -2
done
