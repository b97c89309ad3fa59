#!/usr/bin/env bash
# The conformance harness has teeth: a script whose observations are wrong fails (exit 1) and
# says at which step; a malformed script is refused (exit 2) with the file and the JSON pointer.
# Usage: bad_scripts.sh PATH_TO_inboxsim_conformance
set -uo pipefail
binary=$1
dir="$(dirname "$0")/bad"
failures=0

expect() {  # expect CODE PATTERN SCRIPT
  local code=$1 pattern=$2 script=$3 output status
  output=$("$binary" fake "$dir/$script" 2>&1)
  status=$?
  if [ "$status" -ne "$code" ] || ! grep -qF -- "$pattern" <<<"$output"; then
    echo "FAILED: $script: expected exit $code and \"$pattern\", got exit $status:"
    echo "$output" | head -n 20
    failures=$((failures + 1))
  else
    echo "ok: $script (exit $status)"
  fi
}

expect 1 "/steps/3 nack saga tag=1" wrong-then.json
expect 1 "/steps/4 ack saga tag=1" extra-delivery.json
expect 2 "at /steps/3/requeu: expected no such key for nack" unknown-key.json
expect 2 "at /steps/2/fake_then: expected observations that differ" stale-difference.json
expect 1 "/steps/1/key: \"accounts.unknown\" is no routing key" unknown-routing-key.json
exit $((failures > 0))
