#!/usr/bin/env bash
# The HTML report of a long story stays openable.
#
#   bash tests/report_size_check.sh INBOXSIM_BINARY
#
# Writes a story of 2,000 transfers (with a crash and a copy among them, so that the window has
# notable events to draw), runs it with --html twice, and checks that the page is at most
# 4 MB (it was 65 MB), that it says it draws a window of the run, that the crash is drawn,
# and that the two pages are byte-identical. Exit 0 when all hold, 1 when one does not.
set -euo pipefail

if [ "$#" -ne 1 ]; then
  echo "usage: bash $0 INBOXSIM_BINARY" >&2
  exit 2
fi
binary=$1
limit_bytes=$((4 * 1024 * 1024))

fail() {
  echo "report_size_check: FAIL: $*" >&2
  exit 1
}

work=$(mktemp -d /tmp/inboxsim-report-size.XXXXXX)
trap 'rm -rf "$work"' EXIT

python3 - "$work/story.json" <<'PY'
import json, sys
transfers = 2000
steps = [
    {"fault": {"kind": "crash", "service": "transfer-service", "at": "after_commit",
               "match": {"type": "Account.Debited", "transfer": "t700"}}},
    {"fault": {"kind": "duplicate", "match": {"type": "Transfer.Requested", "transfer": "t1400"}}},
]
for i in range(transfers):
    steps.append({"transfer": {"id": "t%d" % (i + 1), "from": "a%d" % (i % 10),
                               "to": "a%d" % ((i + 3) % 10), "amount": 100 + i % 50}})
steps.append({"run": {"until": "quiescent"}})
story = {"name": "long-story", "title": "2,000 transfers", "seed": 1,
         "accounts": {"a%d" % i: 1000000 for i in range(10)}, "steps": steps}
json.dump(story, open(sys.argv[1], "w"))
PY

for copy in 1 2; do
  status=0
  "$binary" run "$work/story.json" --quiet --html "$work/report-$copy.html" >/dev/null || status=$?
  [ "$status" -le 1 ] || fail "inboxsim run exited with $status"
done
bytes=$(stat -c %s "$work/report-1.html")
[ "$bytes" -le "$limit_bytes" ] || fail "the report of 2,000 transfers is $bytes bytes, over $limit_bytes"
cmp -s "$work/report-1.html" "$work/report-2.html" || fail "two runs of the same story wrote different HTML"
grep -q 'id="window-notice"><b>A window of the run.</b>' "$work/report-1.html" ||
  fail "the page does not say that it draws a window of the run"
grep -q '<g class="ev k-crash"' "$work/report-1.html" || fail "the crash is not drawn in the window"
grep -q '<g class="gap">' "$work/report-1.html" || fail "no band says what the window leaves out"
echo "report_size_check: ok: 2,000 transfers, a $bytes-byte report (limit $limit_bytes), byte-identical twice"
