#!/usr/bin/env bash
# tonnx export --timeout and --memory-limit (issue 56): a forward that loops for ever ends with
# an error naming the op that ran, within the limit, and writes nothing; an allocation past the
# memory limit is an error, not an exhausted machine. Not in the sanitizer replay (ASan's
# shadow memory counts against a data-segment limit).
# Usage: export_limits_test.sh BUILD_DIR
set -uo pipefail
build=$1
t="$build/tonnx"
dir="$build/test_tmp/export_limits"
rm -rf "$dir" && mkdir -p "$dir"
# shellcheck source=tests/expect.sh
source "$(dirname "$0")/expect.sh"
# (torch.jit.script reads the module's source: the script is a file, not standard input)
cat > "$dir/make.py" <<'PY'
import sys
import torch
d = sys.argv[1]

class Forever(torch.nn.Module):
    def forward(self, x):
        while bool(x.sum() > -1e30):
            x = x + 1
        return x

class Greedy(torch.nn.Module):
    def forward(self, x):
        big = torch.ones(1 << 29)  # 2 GiB
        return x + big.sum()

torch.jit.script(Forever()).save(f"{d}/forever.pt")
torch.jit.script(Greedy()).save(f"{d}/greedy.pt")
PY
/usr/bin/python3 "$dir/make.py" "$dir"
start=$(date +%s)
expect forever 1 "ran past --timeout 3 s \(running aten::" -- \
  "$t" export "$dir/forever.pt" -o "$dir/forever.onnx" --input-shape 2 --timeout 3
elapsed=$(($(date +%s) - start))
[ "$elapsed" -lt 60 ] && ok "forever_stopped_in_${elapsed}s" || bad "forever took ${elapsed}s"
[ ! -e "$dir/forever.onnx" ] && ok forever_no_output || bad "forever_no_output: written"
[ -z "$(ls -A "$dir" | grep '^\.')" ] && ok forever_no_temporaries || bad "forever: temporaries left"
expect greedy 1 "allocate|memory" -- \
  "$t" export "$dir/greedy.pt" -o "$dir/greedy.onnx" --input-shape 2 --memory-limit 1024
[ ! -e "$dir/greedy.onnx" ] && ok greedy_no_output || bad "greedy_no_output: written"
expect timeout_usage 2 "--timeout 0 is out of range: give seconds > 0" -- \
  "$t" export "$dir/forever.pt" -o "$dir/x.onnx" --input-shape 2 --timeout 0
expect memory_usage 2 "--memory-limit 8 is out of range: give MiB from 64" -- \
  "$t" export "$dir/forever.pt" -o "$dir/x.onnx" --input-shape 2 --memory-limit 8
expect fast_enough 0 '' -- "$t" export dcgan_discriminator -o "$dir/d.onnx" --timeout 300 \
  --memory-limit 8192
rm -rf "$dir"
expect_summary
