#!/usr/bin/env bash
# Where nats-server is not installed, the server's start and the live JetStream conformance
# tests are skipped (exit 77, which ctest shows as "Skipped"), and say why.
# Usage: no_nats.sh PATH_TO_inboxsim_conformance SCRIPT
set -uo pipefail
binary=$1
script=$2
state=$(mktemp)
trap 'rm -f "$state"' EXIT
INBOXSIM_NATS_SERVER=/nonexistent bash "$(dirname "$0")/nats.sh" start "$state"
status=$?
[ "$status" -eq 77 ] || { echo "FAILED: nats.sh start exited $status, not 77"; exit 1; }
grep -q '^unavailable: nats-server is not installed' "$state" ||
  { echo "FAILED: the state file does not say why: $(cat "$state")"; exit 1; }
"$binary" nats --broker-file "$state" "$script"
status=$?
[ "$status" -eq 77 ] || { echo "FAILED: the live test exited $status, not 77"; exit 1; }
bash "$(dirname "$0")/nats.sh" stop "$state" || { echo "FAILED: stop without a server"; exit 1; }
echo "ok: skipped, and said why"
