#!/usr/bin/env bash
# Where rabbitmq-server is not installed, the broker's start and the live conformance tests are
# skipped (exit 77, which ctest shows as "Skipped"), and say why.
# Usage: no_broker.sh PATH_TO_inboxsim_conformance SCRIPT
set -uo pipefail
binary=$1
script=$2
state=$(mktemp)
trap 'rm -f "$state"' EXIT
INBOXSIM_RABBITMQ_SERVER=/nonexistent bash "$(dirname "$0")/broker.sh" start "$state"
status=$?
[ "$status" -eq 77 ] || { echo "FAILED: broker.sh start exited $status, not 77"; exit 1; }
grep -q '^unavailable: rabbitmq-server is not installed' "$state" ||
  { echo "FAILED: the state file does not say why: $(cat "$state")"; exit 1; }
"$binary" rabbitmq --broker-file "$state" "$script"
status=$?
[ "$status" -eq 77 ] || { echo "FAILED: the live test exited $status, not 77"; exit 1; }
bash "$(dirname "$0")/broker.sh" stop "$state" || { echo "FAILED: stop without a broker"; exit 1; }
echo "ok: skipped, and said why"
