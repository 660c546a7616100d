#!/usr/bin/env bash
# Regenerates the coverage tables in docs/ from the code: the zoo (tonnx models), and the
# symbolic functions with the ONNX ops each emits, recorded while the symbolic tests run.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
TONNX_RECORD_EMITTED=docs/emitted_ops.tsv "$build/tests/tonnx_tests" --gtest_brief=1 \
  --gtest_filter='Opsets/*:Export.*:Registry.*:DynamicAxes.*:MaxPool.*:AdaptivePool.*:SeedExample.*:*TorchScript*' >/dev/null
"$build/tonnx" symbolics --markdown --emitted docs/emitted_ops.tsv > docs/operators.md
"$build/tonnx" models --markdown > docs/models.md
echo "docs regenerated; not exercised by a test:"
grep -c "not exercised" docs/operators.md || true
