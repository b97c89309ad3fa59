# The test scripts' one assertion, sourced by each of them:
#   check NAME COMMAND...   counts COMMAND's success, or prints "FAILED: NAME"
#   finish                  prints "N passed, M failed" and exits 0 only if nothing failed
passed=0
failed=0
check() {
  local name=$1
  shift
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAILED: $name"
  fi
}
finish() {
  echo "$passed passed, $failed failed"
  [[ $failed -eq 0 ]]
  exit
}
