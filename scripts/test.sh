#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (ctest). CI calls this.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
cd build
ctest --output-on-failure -j2 --timeout 1500 "$@"
