#!/usr/bin/env bash
# Runs `inboxsim run` on every malformed scenario of tests/bad and checks that each one is
# reported as bad input: exit code 2, a message on stderr naming the file and the JSON pointer
# that EXPECTED.tsv lists ("-" for whole-file problems), and no sign of a crash.
#
# Usage: bash tests/bad_corpus.sh PATH_TO_INBOXSIM_BINARY
# Prints "N passed, M failed" on its last line; exits non-zero if anything failed.
set -uo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: bash tests/bad_corpus.sh PATH_TO_INBOXSIM_BINARY" >&2
  exit 2
fi

# Resolve the binary before moving to the repo root, so that a relative path still works.
binary="$1"
if [[ "$binary" != /* ]]; then binary="$PWD/$binary"; fi
if [[ ! -x "$binary" ]]; then
  echo "bad_corpus.sh: $1 is not an executable" >&2
  exit 2
fi
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2

# A parser that loops forever is a failure too, not a hung CI job.
timeout_seconds=20
run_prefix=()
if command -v timeout >/dev/null 2>&1; then run_prefix=(timeout "$timeout_seconds"); fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

passed=0
failed=0

fail_case() {
  echo "FAIL $1: $2" >&2
  if [[ -s "$scratch/stderr" ]]; then sed 's/^/    stderr: /' "$scratch/stderr" | head -n 5 >&2; fi
  failed=$((failed + 1))
}

# check_case FILE NEEDLE...: runs `inboxsim run FILE`; every NEEDLE must appear in stderr.
check_case() {
  local file="$1"
  shift
  "${run_prefix[@]}" "$binary" run "$file" >"$scratch/stdout" 2>"$scratch/stderr" </dev/null
  local code=$?
  if [[ $code -eq 124 && ${#run_prefix[@]} -gt 0 ]]; then
    fail_case "$file" "timed out after ${timeout_seconds}s"
    return
  fi
  if [[ $code -ne 2 ]]; then
    fail_case "$file" "exit code $code, expected 2"
    return
  fi
  if grep -Eiq 'terminate called|aborted|core dumped|segmentation fault|stack trace|backtrace|sanitizer|internal error' \
    "$scratch/stderr"; then
    fail_case "$file" "stderr shows a crash"
    return
  fi
  local needle
  for needle in "$@"; do
    if ! grep -Fq -- "$needle" "$scratch/stderr"; then
      fail_case "$file" "stderr does not contain \"$needle\""
      return
    fi
  done
  passed=$((passed + 1))
}

listing="tests/bad/EXPECTED.tsv"
if [[ ! -s "$listing" ]]; then
  echo "bad_corpus.sh: $listing is missing or empty" >&2
  echo "0 passed, 1 failed"
  exit 1
fi

while IFS=$'\t' read -r name pointer || [[ -n "$name" ]]; do
  [[ -z "$name" ]] && continue
  if [[ ! -f "tests/bad/$name" ]]; then
    echo "FAIL tests/bad/$name: listed in $listing but missing" >&2
    failed=$((failed + 1))
    continue
  fi
  if [[ "$pointer" == "-" ]]; then
    check_case "tests/bad/$name" "$name"
  else
    check_case "tests/bad/$name" "$name" "$pointer"
  fi
done <"$listing"

# Files that cannot be read at all are bad input as well.
check_case "tests/bad/does-not-exist.json" "tests/bad/does-not-exist.json"
check_case "tests/bad" "tests/bad"

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
