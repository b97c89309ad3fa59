#!/usr/bin/env bash
# The JetStream harness has teeth: a script whose observations are wrong fails (exit 1) and says
# at which step; a malformed script is refused (exit 2) with the file and the JSON pointer.
# Usage: jetstream_bad_scripts.sh PATH_TO_inboxsim_conformance
set -uo pipefail
binary=$1
dir="$(dirname "$0")/jetstream_bad"
failures=0

expect() {  # expect CODE PATTERN SCRIPT
  local code=$1 pattern=$2 script=$3 output status
  output=$("$binary" jetstream "$dir/$script" 2>&1)
  status=$?
  if [ "$status" -ne "$code" ] || ! grep -qF -- "$pattern" <<<"$output"; then
    echo "FAILED: $script: expected exit $code and \"$pattern\", got exit $status:"
    echo "$output" | head -n 20
    failures=$((failures + 1))
  else
    echo "ok: $script (exit $status)"
  fi
}

expect 1 "/steps/10 fetch account#2" late-ack-as-sqs.json
expect 1 "/steps/4: account got no delivery of m9" no-such-delivery.json
expect 2 "at /steps/4/delay: expected no such key for nak" unknown-key.json
expect 2 "at /jetstream/ack_wait_ms: expected an integer from 100 to 10000" short-ack-wait.json
expect 2 "at /steps/2/fake_then: expected observations that differ" stale-difference.json
exit $((failures > 0))
