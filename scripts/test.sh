#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: ctest on the main build, the backend's
# tests again under an AVX2 cap (TONNX_MAX_ISA=avx2), then the sanitizer build (fuzz/:
# clang-14, ASan+UBSan) replaying every saved fuzzer input and running the backend,
# hostile-model and training tests. CI calls this.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
(cd build && ctest --output-on-failure -j2 --timeout 1500 "$@")
# The backend, its conformance and the zoo again as an AVX2-only CPU would run them: tonnx's own
# kernels, ATen and oneDNN capped together (TONNX_MAX_ISA, docs/backend.md "On every CPU").
if [ -z "${TONNX_SKIP_ISA_CAP:-}" ]; then
  echo "== the backend tests under TONNX_MAX_ISA=avx2"
  (cd build && TONNX_MAX_ISA=avx2 ctest --output-on-failure -j2 --timeout 1500 \
    -R '^(Backend|conformance\.|zoo\.)' "$@")
fi
if [ -z "${TONNX_SKIP_SANITIZERS:-}" ]; then
  scripts/fuzz.sh build
  scripts/fuzz.sh replay
fi
