#!/usr/bin/env bash
# The coverage tables in docs/ are generated from the code; fail when they are stale.
set -euo pipefail
build=$1 src=$2
ok=1
if ! diff <("$build/tonnx" symbolics --markdown) "$src/docs/operators.md" >/dev/null; then
  echo "docs/operators.md is stale: run build/tonnx symbolics --markdown > docs/operators.md"; ok=0
fi
if ! diff <("$build/tonnx" models --markdown) "$src/docs/models.md" >/dev/null; then
  echo "docs/models.md is stale: run build/tonnx models --markdown > docs/models.md"; ok=0
fi
[ $ok = 1 ] && echo "docs are up to date"
[ $ok = 1 ]
