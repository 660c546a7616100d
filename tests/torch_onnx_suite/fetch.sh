#!/bin/bash
# Fetches torch.onnx 1.13.1's test suite (test/onnx of Debian's pytorch source package)
# into DIR (default build/torch-onnx-suite) and prints the test/onnx folder. Uses a private
# apt configuration (deb-src list, lists and cache under DIR), so the system's apt setup is
# untouched; nothing of the suite is copied into this repository. Idempotent.
set -euo pipefail
dir=$(realpath -m "${1:-build/torch-onnx-suite}")
suite="$dir/pytorch-1.13.1/test/onnx"
if [ -f "$suite/test_pytorch_onnx_onnxruntime.py" ]; then
  echo "$suite"
  exit 0
fi
mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial"
echo "deb-src http://deb.debian.org/debian bookworm main" >"$dir/apt/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$dir/apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
  -o "Dir::State::Lists=$dir/apt/lists" -o "Dir::Cache=$dir/apt/cache"
  -o "Debug::NoLocking=1" -o "APT::Sandbox::User=$(id -un)")
apt-get "${apt_opts[@]}" -qq update >&2
# Only the upstream tarball is needed; the Debian packaging tarball may be gone from the
# mirror, so a failed download of it is not an error as long as the tarball arrived.
(cd "$dir" && apt-get "${apt_opts[@]}" -qq source --download-only pytorch=1.13.1+dfsg-4 >&2) || true
tarball="$dir/pytorch_1.13.1+dfsg.orig.tar.xz"
if [ ! -f "$tarball" ]; then
  echo "fetch.sh: could not download pytorch 1.13.1's source package (see above)" >&2
  exit 1
fi
tar -C "$dir" -xJf "$tarball" pytorch-1.13.1/test/onnx
echo "$suite"
