#!/bin/bash
# ctest's entry to torch.onnx 1.13.1's own ONNX Runtime suite with tonnx as the exporter:
#   run.sh BUILD_DIR MODE OPSET [runner options]     MODE: trace or script
# Fetches the suite once (fetch.sh, under BUILD_DIR/torch-onnx-suite), runs the class
# TestONNXRuntime_opset_version_OPSET_is_script_(MODE==script)_keep_initializers_as_inputs_False
# and compares tonnx's failures with expected_MODEOPSET.tsv: an unlisted failure or a listed
# case that passes fails the test. The per-case CSV goes to BUILD_DIR/torch-onnx-suite/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(realpath "$1")
mode=$2
opset=$3
shift 3
mkdir -p "$build/torch-onnx-suite"
suite=$(flock "$build/torch-onnx-suite/.lock" "$here/fetch.sh" "$build/torch-onnx-suite")
exec /usr/bin/python3 "$here/runner.py" --suite "$suite" --tonnx "$build/tonnx" \
  --opset "$opset" --mode "$mode" --expected "$here/expected_$mode$opset.tsv" \
  --csv "$build/torch-onnx-suite/$mode$opset.csv" "$@"
