#!/usr/bin/env bash
# Installs tonnx to a temporary prefix and builds an out-of-tree project against it with
# find_package(tonnx) and tonnx::tonnx.
set -euo pipefail
build=$1 src=$2
dir="$build/test_tmp/package"
rm -rf "$dir" && mkdir -p "$dir"
cmake --install "$build" --prefix "$dir/prefix" >/dev/null
cmake -S "$src/tests/package_consumer" -B "$dir/build" -G Ninja -DCMAKE_PREFIX_PATH="$dir/prefix" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$dir/build" -j2 >/dev/null
LD_LIBRARY_PATH="$dir/prefix/lib:${LD_LIBRARY_PATH:-}" "$dir/build/consumer" "$dir/model.onnx"
rm -rf "$dir"
