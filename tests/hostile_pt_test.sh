#!/usr/bin/env bash
# Hostile TorchScript archives (issue 56): a tensor record shorter than the storage its pickle
# declares used to export with exit 0 and the heap beyond the record in the initializer.
# Every tensor of a loaded archive is now checked against the bytes its record really holds.
# Usage: hostile_pt_test.sh BUILD_DIR
set -uo pipefail
build=$1
t="$build/tonnx"
dir="$build/test_tmp/hostile_pt"
rm -rf "$dir" && mkdir -p "$dir"
# shellcheck source=tests/expect.sh
source "$(dirname "$0")/expect.sh"
/usr/bin/python3 - "$dir" <<'PY'
import sys, zipfile
import torch
d = sys.argv[1]
torch.manual_seed(0)
m = torch.jit.trace(torch.nn.Linear(8, 8).eval(), torch.randn(1, 8))
m.save(f"{d}/good.pt")
# The same archive with every tensor record cut to 12 bytes (the pickle still declares the
# weight's 64 floats and the bias's 8).
with zipfile.ZipFile(f"{d}/good.pt") as src, zipfile.ZipFile(f"{d}/short.pt", "w") as dst:
    for info in src.infolist():
        data = src.read(info.filename)
        if "/data/" in info.filename and not info.filename.endswith(".pkl"):
            data = data[:12]
        dst.writestr(info.filename, data)
PY
expect good 0 '' -- "$t" export "$dir/good.pt" -o "$dir/good.onnx" --input-shape 1x8
expect short_record 1 "tensor '.*' declares a storage of (256|32) bytes, but its record in the archive holds 12" -- \
  "$t" export "$dir/short.pt" -o "$dir/short.onnx" --input-shape 1x8
[ ! -e "$dir/short.onnx" ] && { echo "ok   no_output"; passes=$((passes + 1)); } ||
  { echo "FAIL no_output: short.onnx was written"; fails=$((fails + 1)); }
expect short_record_verify 1 "declares a storage of (256|32) bytes" -- \
  "$t" verify "$dir/short.pt" --input-shape 1x8
rm -rf "$dir"
expect_summary
