#!/usr/bin/env bash
# Regenerates the coverage tables in docs/ from the code: the zoo (tonnx models), and the
# symbolic functions with the ONNX ops each emits, recorded while the symbolic tests run.
set -euo pipefail
# A failed step says which (its output goes to /dev/null); the tables may be half-made then.
trap 'echo "gen_docs.sh: failed at line $LINENO: $BASH_COMMAND (docs/ may be half-regenerated: rerun after fixing)" >&2' ERR
cd "$(dirname "$0")/.."
build=${1:-build}
TONNX_RECORD_EMITTED=docs/emitted_ops.tsv "$build/tests/tonnx_export_tests" --gtest_brief=1 \
  --gtest_filter='Opsets/*:Export.*:Registry.*:DynamicAxes.*:MaxPool.*:AdaptivePool.*:SeedExample.*:*TorchScript*:*Scripted.*:Quantized.*:Complex.*' >/dev/null
# Ops that only Python-traced TorchScript files contain (prim::NumToTensor from x.size()).
dir=$(mktemp -d)
/usr/bin/python3 tests/fixtures/torchvision_classifiers.py "$dir" flatten_view 2>/dev/null
TONNX_RECORD_EMITTED="$dir/emitted.tsv" "$build/tonnx" export "$dir/flatten_view/model.pt" -o "$dir/m.onnx" \
  --inputs "$dir/flatten_view/data/test_data_set_0/input_0.pb" >/dev/null
# Quantized layers exist only in Python-made TorchScript files (tests/quantized_test.sh).
for opset in 10 13 17; do
  TONNX_RECORD_EMITTED="$dir/emitted.tsv" tests/quantized_test.sh "$build" . "$opset" >/dev/null
done
# FFT models written in Python (tests/fft_test.sh: stft, fftshift, traced and scripted).
TONNX_RECORD_EMITTED="$dir/emitted.tsv" tests/fft_test.sh "$build" . >/dev/null
sort -u docs/emitted_ops.tsv "$dir/emitted.tsv" -o docs/emitted_ops.tsv
rm -rf "$dir"
"$build/tonnx" symbolics --markdown --emitted docs/emitted_ops.tsv |
  /usr/bin/python3 scripts/torch_onnx_column.py tests/torch_onnx_parity.tsv > docs/operators.md
"$build/tonnx" models --markdown > docs/models.md
# The README's picture: the seed's AlexNet example, drawn by tonnx print.
dir=$(mktemp -d)
"$build/example_alexnet" "$dir/alexnet.onnx" >/dev/null
"$build/tonnx" print "$dir/alexnet.onnx" --format svg -o docs/alexnet.svg
rm -rf "$dir"
echo "docs regenerated; not exercised by a test:"
grep -c "not exercised" docs/operators.md || true
