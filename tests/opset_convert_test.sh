#!/usr/bin/env bash
# `tonnx convert --opset` on whole models (issue 54's emulation of today's torch.onnx, which
# writes opset 18): zoo models exported by tonnx and torchvision models exported by Python's
# torch.onnx 1.13 at opset 17 are converted to opsets 18, 20 and 23 and back down to 17 (and
# to 13, where LayerNormalization and HardSwish become their definitions); each file runs on
# ONNX Runtime and on tonnx's backend against torch's outputs.
# Usage: opset_convert_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
dir="$build/test_tmp/opset_convert_$$"
rm -rf "$dir" && mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
both() {  # MODEL DATA
  node "$src/tools/ort_run.js" "$1" --test-data "$2" --rtol 1e-3 --atol 1e-4 | tail -1
  "$build/tonnx" run "$1" --test-data "$2" --rtol 1e-3 --atol 1e-4 | tail -1
}
for m in resnet18 inception_v3 word_language_model transformer_encoder_small; do
  "$build/tonnx" export "$m" -o "$dir/$m.onnx" --test-data "$dir/${m}_data" >/dev/null
done
for m in mobilenet_v3_small convnext_tiny swin_t; do
  /usr/bin/python3 "$src/bench/torch_export.py" "$m" 1x3x224x224 "$dir/$m.onnx" --test-data \
    "$dir/${m}_data" >/dev/null
done
for m in resnet18 inception_v3 word_language_model transformer_encoder_small mobilenet_v3_small \
  convnext_tiny swin_t; do
  for o in 18 20 23; do
    echo "== $m at opset $o"
    "$build/tonnx" convert "$dir/$m.onnx" -o "$dir/${m}_$o.onnx" --opset "$o" | head -1
    "$build/tonnx" check "$dir/${m}_$o.onnx" | grep "tonnx's validation against ONNX's schemas of opset $o"
    both "$dir/${m}_$o.onnx" "$dir/${m}_data"
  done
  for o in 17 13; do
    echo "== $m from opset 23 down to $o"
    "$build/tonnx" convert "$dir/${m}_23.onnx" -o "$dir/${m}_down_$o.onnx" --opset "$o" | head -1
    "$build/tonnx" check "$dir/${m}_down_$o.onnx" | grep "ONNX checker and strict shape inference passed"
    both "$dir/${m}_down_$o.onnx" "$dir/${m}_data"
  done
  rm -f "$dir/$m"_*.onnx
done
echo "opset conversion: every model ran on both runtimes at every opset"
