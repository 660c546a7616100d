#!/usr/bin/env bash
# torchvision classifiers traced by Python torch (TorchScript), exported by tonnx's CLI, and
# checked on ONNX Runtime and tonnx's backend against torch's own outputs.
# A model's fixture may leave extra export options in DIR/NAME/export_args.
# Usage: torchvision_test.sh BUILD_DIR SOURCE_DIR MODEL...
set -euo pipefail
build=$1 src=$2
shift 2
dir="$build/test_tmp/torchvision"
mkdir -p "$dir"
/usr/bin/python3 "$src/tests/fixtures/torchvision_classifiers.py" "$dir" "$@"
for m in "$@"; do
  echo "== $m"
  inputs=$(ls "$dir/$m/data/test_data_set_0"/input_*.pb | sort | paste -sd, -)
  args=$(cat "$dir/$m/export_args" 2>/dev/null || true)
  # shellcheck disable=SC2086  # export_args holds several words
  "$build/tonnx" export "$dir/$m/model.pt" -o "$dir/$m/model.onnx" --inputs "$inputs" $args >/dev/null
  node "$src/tools/ort_run.js" "$dir/$m/model.onnx" --test-data "$dir/$m/data" ${ORT_TOL:-}
  # shellcheck disable=SC2086  # TONNX_TOL holds several words
  "$build/tonnx" run "$dir/$m/model.onnx" --test-data "$dir/$m/data" ${TONNX_TOL:-} | tail -2
  rm -rf "${dir:?}/$m"
done
