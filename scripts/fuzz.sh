#!/usr/bin/env bash
# tonnx's sanitizer build and fuzzers (fuzz/, docs/fuzzing.md). Usage:
#   scripts/fuzz.sh build                      configure and build build-fuzz/ (clang-14, ASan+UBSan)
#   scripts/fuzz.sh run HARNESS SECONDS [JOBS] fuzz load|run|tensor; a crash, leak or hang is
#                                              saved under fuzz/regressions/HARNESS/ and fails
#   scripts/fuzz.sh merge HARNESS               fold the run's new coverage into fuzz/corpus/HARNESS
#   scripts/fuzz.sh replay                     every saved regression and corpus input once per
#                                              harness, the core tests and the CLI's tests under
#                                              the sanitizers (CI)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${TONNX_FUZZ_BUILD:-$ROOT/build-fuzz}
HARNESSES=(load run tensor)
# Allocations past 1 GiB fail (LibTorch then throws, which the harnesses treat as an error of
# the model) instead of exhausting the machine; libFuzzer's own limits sit above that.
export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1:max_allocation_size_mb=1024:detect_leaks=1}
# Graphviz and the font libraries keep memory for the process's life (fuzz/lsan.supp).
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$ROOT/fuzz/lsan.supp}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
FUZZ_FLAGS=(-timeout=10 -rss_limit_mb=4096 -malloc_limit_mb=2048 -max_len=65536)

build() {
  local missing=()
  for p in clang-14 libclang-rt-14-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  export CCACHE_DIR="${CCACHE_DIR:-$HOME/.ccache}"
  if [ ! -f "$BUILD/build.ninja" ]; then
    CXX=clang++-14 cmake -S fuzz -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
  fi
  cmake --build "$BUILD" -j2
}

# Seeds: the checked-in corpus plus ONNX's backend test data (models, or TensorProto files).
seed_dirs() {
  local h=$1 seeds="$BUILD/seeds/$h"
  if [ ! -d "$seeds" ]; then
    mkdir -p "$seeds"
    if [ "$h" = tensor ]; then
      find /usr/share/libonnx-testdata/data -name '*.pb' -size -64k | head -3000 |
        while read -r f; do cp "$f" "$seeds/$(echo "$f" | md5sum | cut -c1-16)"; done
    else
      find /usr/share/libonnx-testdata/data -name model.onnx -size -64k |
        while read -r f; do cp "$f" "$seeds/$(echo "$f" | md5sum | cut -c1-16)"; done
    fi
  fi
  mkdir -p "fuzz/corpus/$h"
  echo "$BUILD/work/$h" "$ROOT/fuzz/corpus/$h" "$seeds"
}

run() {
  local h=$1 seconds=$2 jobs=${3:-1}
  mkdir -p "$BUILD/work/$h" "fuzz/regressions/$h" "$BUILD/logs"
  touch "$BUILD/logs/$h.start"
  # shellcheck disable=SC2046
  local parallel=()
  # Several jobs write their logs to fuzz-N.log in the current folder: run them in the log folder.
  ((jobs > 1)) && parallel=(-jobs="$jobs" -workers="$jobs")
  local corpus
  read -r -a corpus <<<"$(seed_dirs "$h")"
  (cd "$BUILD/logs" && "$BUILD/fuzz_$h" "${FUZZ_FLAGS[@]}" -max_total_time="$seconds" "${parallel[@]}" \
    -print_final_stats=1 -artifact_prefix="$ROOT/fuzz/regressions/$h/" \
    "${corpus[@]}") 2>&1 | tee "$BUILD/logs/$h.log" | tail -20
  # libFuzzer's exit status is lost in the pipe: a saved artifact newer than the run is a finding.
  if find "fuzz/regressions/$h" -newer "$BUILD/logs/$h.start" -type f | grep -q .; then
    echo "fuzz: $h found a crash, leak or hang: see fuzz/regressions/$h/ and $BUILD/logs/$h.log"
    exit 1
  fi
}

merge() {
  local h=$1
  local tmp="$BUILD/merged/$h"
  rm -rf "$tmp" && mkdir -p "$tmp"
  "$BUILD/fuzz_$h" "${FUZZ_FLAGS[@]}" -merge=1 "$tmp" fuzz/corpus/"$h" "$BUILD/work/$h"
  rm -rf "fuzz/corpus/$h" && mv "$tmp" "fuzz/corpus/$h"
  echo "fuzz/corpus/$h: $(ls "fuzz/corpus/$h" | wc -l) inputs, $(du -sh "fuzz/corpus/$h" | cut -f1)"
}

replay() {
  # Two lanes for two cores: the CLI's contract (tests/cli_test.sh: one process at a time, 4-5
  # minutes under the sanitizers) in the background, the rest meanwhile; either failing fails.
  echo "replay: the command-line tool under ASan+UBSan: its contract (tests/cli_test.sh), output"
  echo "        paths and hostile TorchScript archives, in the background"
  (tests/cli_test.sh "$BUILD" && tests/output_paths_test.sh "$BUILD" &&
    tests/hostile_pt_test.sh "$BUILD") >"$BUILD/replay_cli.log" 2>&1 &
  local cli_pid=$!
  # shellcheck disable=SC2064
  trap "kill $cli_pid 2>/dev/null || true" EXIT
  for h in "${HARNESSES[@]}"; do
    local files=()
    for d in "fuzz/regressions/$h" "fuzz/corpus/$h"; do
      [ -d "$d" ] && while IFS= read -r f; do files+=("$f"); done < <(find "$d" -type f ! -name '*.md')
    done
    echo "replay: fuzz_$h on ${#files[@]} saved inputs"
    ((${#files[@]})) || continue
    # libFuzzer runs each file given on the command line once; any finding fails.
    printf '%s\0' "${files[@]}" | xargs -0 -n 500 "$BUILD/fuzz_$h" "${FUZZ_FLAGS[@]}" >"$BUILD/replay_$h.log" 2>&1 ||
      { tail -60 "$BUILD/replay_$h.log"; echo "replay: fuzz_$h failed"; exit 1; }
  done
  echo "replay: the core tests (backend, hostile models, training ops) under ASan+UBSan"
  (cd "$BUILD" && ./tonnx_core_tests --gtest_brief=1)
  echo "replay: check, print and run on every saved regression model (exit 0 or 1, never a crash)"
  for f in fuzz/regressions/load/* fuzz/regressions/run/*; do
    for cmd in check print run; do
      rc=0
      timeout 60 "$BUILD/tonnx" "$cmd" "$f" >"$BUILD/replay_cmd.log" 2>&1 || rc=$?
      if [ "$rc" != 0 ] && [ "$rc" != 1 ]; then
        tail -30 "$BUILD/replay_cmd.log"
        echo "replay: tonnx $cmd $f exited $rc"
        exit 1
      fi
    done
  done
  echo "replay: every regression model is a clean result or error in check, print and run"
  wait "$cli_pid" ||
    { tail -40 "$BUILD/replay_cli.log"; echo "replay: the command-line lane failed"; exit 1; }
  trap - EXIT
  echo "replay: the command-line lane (cli, output paths, hostile .pt), checks in all:"
  grep -E '^[0-9]+ passed, [0-9]+ failed$' "$BUILD/replay_cli.log" |
    awk '{p += $1; f += $3} END {printf "replay: %d passed, %d failed\n", p, f}'
}

case "${1:-}" in
  build) build ;;
  run) run "$2" "$3" "${4:-1}" ;;
  merge) merge "$2" ;;
  replay) replay ;;
  *) sed -n '2,9p' "$0"; exit 2 ;;
esac
