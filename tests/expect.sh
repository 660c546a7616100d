# The shell tests' one checker (sourced by cli_test.sh, output_paths_test.sh, hostile_pt_test.sh):
#   expect NAME EXIT_CODE PATTERN -- command...   the exit code, and PATTERN (an extended
#                                                 regular expression) in stdout+stderr
#   ok NAME / bad WHY                             a check made otherwise
# Each command may take EXPECT_TIMEOUT seconds (default 600); the caller ends with
# `expect_summary`, which prints "N passed, N failed" and returns non-zero on a failure.
fails=0 passes=0
ok() { echo "ok   $1"; passes=$((passes + 1)); }
bad() { echo "FAIL $1"; fails=$((fails + 1)); }
expect() {
  local name=$1 code=$2 pattern=$3
  shift 4
  local out rc
  out=$(timeout "${EXPECT_TIMEOUT:-600}" "$@" 2>&1)
  rc=$?
  if [ "$rc" != "$code" ] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL $name: exit $rc (want $code); output:"; echo "$out" | head -20
    fails=$((fails + 1))
  else
    ok "$name"
  fi
}
expect_summary() {
  echo "$passes passed, $fails failed"
  [ "$fails" = 0 ]
}
