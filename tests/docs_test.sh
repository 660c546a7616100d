#!/usr/bin/env bash
# The coverage tables in docs/ are generated from the code; fail when they are stale.
set -euo pipefail
build=$1 src=$2
ok=1
if ! diff <("$build/tonnx" symbolics --markdown --emitted "$src/docs/emitted_ops.tsv" |
  /usr/bin/python3 "$src/scripts/torch_onnx_column.py" "$src/tests/torch_onnx_parity.tsv") \
  "$src/docs/operators.md" >/dev/null; then
  echo "docs/operators.md is stale: run scripts/gen_docs.sh"; ok=0
fi
# Every built-in symbolic function must be exercised by a test.
if grep -q "not exercised by a test" "$src/docs/operators.md"; then
  echo "symbolic functions without a test:"; grep "not exercised" "$src/docs/operators.md" | cut -d'|' -f2; ok=0
fi
if ! diff <("$build/tonnx" models --markdown) "$src/docs/models.md" >/dev/null; then
  echo "docs/models.md is stale: run scripts/gen_docs.sh"; ok=0
fi
[ $ok = 1 ] && echo "docs are up to date"
[ $ok = 1 ]
