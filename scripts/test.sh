#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: ctest on the main build, then the
# sanitizer build (fuzz/: clang-14, ASan+UBSan) replaying every saved fuzzer input and running
# the backend, hostile-model and training tests. CI calls this.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
(cd build && ctest --output-on-failure -j2 --timeout 1500 "$@")
if [ -z "${TONNX_SKIP_SANITIZERS:-}" ]; then
  scripts/fuzz.sh build
  scripts/fuzz.sh replay
fi
