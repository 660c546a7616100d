#!/usr/bin/env bash
# Complex tensors and the FFT (docs/complex.md): models written in Python (GFNet's spectral
# filter, FNet's Fourier mixing, a Fourier neural operator layer, a power spectrum, and the ops
# one by one), traced and scripted, exported by tonnx's CLI at opset 17 and run on ONNX Runtime
# and tonnx's backend against LibTorch's outputs. Complex graph inputs and outputs, and ops on
# complex tensors that have no complex rule, must fail the export with the reason.
# Usage: fft_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
dir="$build/test_tmp/fft"
rm -rf "$dir"
mkdir -p "$dir"
/usr/bin/python3 "$src/tests/fixtures/fft_models.py" "$dir" 2>/dev/null
for d in "$dir"/*.*/; do
  m=$(basename "$d")
  echo "== $m"
  "$build/tonnx" export "$d/model.pt" -o "$d/model.onnx" --opset 17 \
    --inputs "$(cat "$d/inputs")" --test-data "$d/data" > "$d/export.txt"
  grep -q "DFT\|Gather" "$d/export.txt" ||
    { echo "no DFT or Gather in the export of $m"; cat "$d/export.txt"; exit 1; }
  node "$src/tools/ort_run.js" "$d/model.onnx" --test-data "$d/data" --rtol 1e-4 --atol 1e-4
  "$build/tonnx" run "$d/model.onnx" --test-data "$d/data" --rtol 1e-4 --atol 1e-4 | tail -1
done
# A batch that varies (dynamic axes): fftfreq of a size known at run time.
d="$dir/power_spectrum.trace"
"$build/tonnx" export "$d/model.pt" -o "$dir/dynamic.onnx" --opset 17 --inputs "$(cat "$d/inputs")" \
  --dynamic-axes 'input:0' > "$dir/dynamic.txt"
node "$src/tools/ort_run.js" "$dir/dynamic.onnx" --test-data "$d/data" --rtol 1e-4 --atol 1e-4
"$build/tonnx" run "$dir/dynamic.onnx" --test-data "$d/data" --rtol 1e-4 --atol 1e-4 | tail -1
# Below opset 17 (no DFT), the FFT fails and names the opset.
d="$dir/spectral_filter.trace"
if "$build/tonnx" export "$d/model.pt" -o "$dir/old.onnx" --opset 16 --inputs "$(cat "$d/inputs")" \
  > "$dir/old.txt" 2>&1; then
  echo "the FFT exported at opset 16"; exit 1
fi
grep -q "opset 17" "$dir/old.txt" || { echo "opset 16 error does not name opset 17:"; cat "$dir/old.txt"; exit 1; }
for d in "$dir"/refused/*/; do
  m=$(basename "$d")
  if "$build/tonnx" export "$d/model.pt" -o "$d/model.onnx" --inputs "$(cat "$d/inputs")" \
    > "$d/out.txt" 2>&1; then
    echo "$m exported, but must fail"; exit 1
  fi
  grep -qF "$(cat "$d/expect")" "$d/out.txt" ||
    { echo "$m: the error does not say '$(cat "$d/expect")':"; cat "$d/out.txt"; exit 1; }
  [ ! -e "$d/model.onnx" ] || { echo "$m: a failed export left $d/model.onnx"; exit 1; }
  echo "== refused $m: $(grep -m1 -i error "$d/out.txt" | cut -c1-160)"
done
echo "fft: all passed"
