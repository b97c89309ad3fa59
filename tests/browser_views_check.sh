#!/usr/bin/env bash
# Drives HTML reports in headless Chromium, as a user steps through them.
#
#   bash tests/browser_views_check.sh INBOXSIM_BINARY SCENARIO_DIR stepping|failing
#
# Each report is opened at report.html#selftest: the page's own self-test presses → through
# every event and ← back, and checks that the selected row stays in view under the sticky lane
# header, that the tables highlight exactly the rows each event changed and replay the same
# both ways, that the balances end as the run reports, that no label runs past the diagram,
# that the first-violation control and a changed #event-N address land where they should, and
# that nothing threw. The DOM is read back with --dump-dom. A failing run must open at its first
# violation. `stepping` checks scenarios 09 and 17, `failing` a failing run with two instances
# (two ctest entries, so that ctest runs them side by side). Exit 0 when all hold, 1 when one does not, 77 (ctest's "skipped") without Chromium.
set -euo pipefail

if [ "$#" -ne 3 ] || { [ "$3" != stepping ] && [ "$3" != failing ]; }; then
  echo "usage: bash $0 INBOXSIM_BINARY SCENARIO_DIR stepping|failing" >&2
  exit 2
fi
binary=$1
scenarios=$2
part=$3

chromium_bin=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium_bin" ]; then
  echo "browser_views_check: skipped: chromium is not installed (apt-get install -y chromium)"
  exit 77
fi

fail() {
  echo "browser_views_check: FAIL: $*" >&2
  exit 1
}

work=$(mktemp -d /tmp/inboxsim-views.XXXXXX)
trap 'rm -rf "$work"' EXIT

# 1400x900 is the window the issue measured scenario 09 in; the budget of virtual time lets
# the hashchange the self-test causes arrive before the DOM is dumped.
dump() {
  timeout 120 "$chromium_bin" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$work/profile" --window-size=1400,900 --virtual-time-budget=20000 \
    --dump-dom "$1" 2>"$work/chromium.log" || fail "chromium --dump-dom $1 failed: $(tail -5 "$work/chromium.log")"
}

# Runs a scenario into a report (extra arguments go to `run`) and the page's self-test on it;
# prints the self-test's verdict.
selftest() {
  local name=$1
  shift
  local html="$work/$name.html" status=0
  "$binary" run "$scenarios/$name.json" --quiet --html "$html" --trace "$work/$name.jsonl" "$@" \
    >/dev/null || status=$?
  [ "$status" -le 1 ] || fail "$binary run $name exited with $status"
  dump "file://$html#selftest" >"$work/$name.dom"
  local verdict
  verdict=$(sed -n '/<pre id="selftest">/,/<\/pre>/p' "$work/$name.dom" | sed 's/<[^>]*>//g')
  [ -n "$verdict" ] || fail "$name: the self-test wrote no verdict (did the script run?)"
  case "$verdict" in
    PASS*) echo "browser_views_check: ok: $name: $(echo "$verdict" | tr '\n' ' ')" ;;
    *) fail "$name: $verdict" ;;
  esac
  echo "$verdict" >"$work/$name.verdict"
}

if [ "$part" = stepping ]; then
  # The issue's scenario, and long REDELIVERED and nack labels towards the rightmost lane.
  selftest 09-crash-after-commit
  selftest 17-unstable-message-id
  grep -q "opened at event 0 of" "$work/09-crash-after-commit.verdict" ||
    fail "a passing run's report should open before the first event"
  exit 0
fi

# Two instances on one database, made to fail (both account-service defences off): a failing
# run opens at the event of its first violation, as the trace numbers it.
selftest 33-masstransit-concurrent-first-delivery --set account.inbox=none \
  --set account.ledger_unique=false
name=33-masstransit-concurrent-first-delivery
first=$(grep -n '"kind":"violation"' "$work/$name.jsonl" | head -1 | cut -d: -f1)
[ -n "$first" ] || fail "$name without its defences recorded no violation"
total=$(wc -l <"$work/$name.jsonl")
grep -q "opened at event $first of $total" "$work/$name.verdict" ||
  fail "the failing run's report did not open at its first violation, event $first: $(cat "$work/$name.verdict")"
grep -q '>account-service#2</text>' "$work/$name.dom" || fail "no lane for instance #2"
echo "browser_views_check: ok: a failing run opens at its first violation (event $first of $total)"
