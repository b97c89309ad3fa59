#!/usr/bin/env bash
# The live comparison has teeth: a script that says nats-server leaves a redelivered copy
# pending after the first holder's late ack (as SQS may) fails against the real server too, and
# the report shows what the server did instead. Skipped (77) where no server runs.
# Usage: nats_teeth.sh PATH_TO_inboxsim_conformance STATE_FILE
set -uo pipefail
binary=$1
state=$2
script="$(dirname "$0")/jetstream_bad/late-ack-as-sqs.json"
output=$("$binary" nats --broker-file "$state" "$script" 2>&1)
status=$?
[ "$status" -ne 77 ] || { echo "$output"; exit 77; }
if [ "$status" -ne 1 ] || ! grep -qF "nats-server (now):      account#2: no messages" <<<"$output"; then
  echo "FAILED: expected exit 1 and the server's own observation, got exit $status:"
  echo "$output" | head -n 20
  exit 1
fi
echo "ok: the wrong script failed against nats-server (exit $status)"
