#!/usr/bin/env bash
# The dependency rules of docs/architecture.md, checked on every #include "..." under src/:
#   ir <- passes <- {export (+ symbolic), backend} <- cli
# ir and passes include nothing of the layers above; the backend nothing of the exporter;
# the exporter only the backend's public header; the CLI only public headers (and its own);
# tonnx-check (check_helper) only check/check_work.h.
set -euo pipefail
src=${1:-$(dirname "$0")/..}
cd "$src/src"
fail=0
# folder | include prefixes it must not use (a regular expression over the quoted path)
rules=(
  "ir|^(export|backend|passes|symbolic|check|cli|models)/|^tonnx/(backend|export|symbolic|torchscript|check|compare|conformance|coverage|models|seed_models)\\.h$"
  "passes|^(export|backend|symbolic|check|cli|models)/|^tonnx/(backend|export|symbolic|torchscript|check|compare|conformance|coverage|models|seed_models)\\.h$"
  "check|^(export|backend|passes|symbolic|cli|models)/|^tonnx/(backend|export|symbolic|torchscript|compare|conformance|coverage|models|seed_models)\\.h$"
  "backend|^(export|symbolic|cli|models)/|^tonnx/(export|symbolic|torchscript|coverage|models|seed_models)\\.h$"
  "export|^(backend|cli|models)/"
  "symbolic|^(backend|export|cli|models|passes)/"
  "models|^(backend|export|passes|symbolic|cli)/"
  "cli|^(ir|passes|export|backend|symbolic|check|models)/"
  # tonnx-check links libonnx alone: only the work it shares with check.cpp
  "check_helper|^(ir|passes|export|backend|symbolic|cli|models)/|^tonnx/|^check/(check|checker_process|format)\\.h$"
)
for rule in "${rules[@]}"; do
  folder=${rule%%|*}
  pattern=${rule#*|}
  while IFS= read -r line; do
    file=${line%%:*}
    inc=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"${line#*:}")
    if [[ $inc =~ $pattern ]]; then
      echo "layering: $file includes \"$inc\", which $folder/ must not depend on"
      fail=1
    fi
  done < <(grep -rH '^#include "' "$folder" || true)
done
if [ $fail = 0 ]; then echo "layering: every include under src/ follows the dependency rules"; fi
exit $fail
