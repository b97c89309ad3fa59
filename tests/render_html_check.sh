#!/usr/bin/env bash
# Renders one scenario's HTML report in headless Chromium and checks that it really draws.
#
#   bash tests/render_html_check.sh INBOXSIM_BINARY SCENARIO_FILE
#
# Exit 0 when the page renders to a non-trivial PNG and its live DOM holds the swimlane SVG and
# the text that the inline script writes (so the script ran without an error); 1 when it does
# not; 77 (ctest's "skipped") when Chromium is not installed.
set -euo pipefail

if [ "$#" -ne 2 ]; then
  echo "usage: bash $0 INBOXSIM_BINARY SCENARIO_FILE" >&2
  exit 2
fi
binary=$1
scenario=$2

chromium_bin=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium_bin" ]; then
  echo "render_html_check: skipped: chromium is not installed (apt-get install -y chromium)"
  exit 77
fi

fail() {
  echo "render_html_check: FAIL: $*" >&2
  exit 1
}

work=$(mktemp -d /tmp/inboxsim-render.XXXXXX)
trap 'rm -rf "$work"' EXIT
html="$work/report.html"
png="$work/report.png"

# Exit 1 only says the scenario's expectations failed; the report must render all the same.
status=0
"$binary" run "$scenario" --html "$html" --quiet || status=$?
if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then
  fail "'$binary run $scenario --html $html --quiet' exited with $status"
fi
[ -s "$html" ] || fail "no HTML report was written to $html"

# A fresh profile and no background traffic: the page must render from the file alone.
chromium_flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
  --disable-background-networking --disable-component-update --disable-sync
  --user-data-dir="$work/profile")

timeout 120 "$chromium_bin" "${chromium_flags[@]}" --screenshot="$png" --window-size=1400,1000 \
  "file://$html" >"$work/screenshot.log" 2>&1 || fail "chromium --screenshot failed: $(tail -5 "$work/screenshot.log")"
[ -f "$png" ] || fail "chromium wrote no screenshot"
png_bytes=$(stat -c %s "$png")
# A blank 1400x1000 page compresses to a few KB; a drawn diagram is far larger.
[ "$png_bytes" -gt 8000 ] || fail "the screenshot is only $png_bytes bytes: the page looks empty"

timeout 120 "$chromium_bin" "${chromium_flags[@]}" --dump-dom "file://$html" >"$work/dom.html" \
  2>"$work/dom.log" || fail "chromium --dump-dom failed: $(tail -5 "$work/dom.log")"
grep -q '<svg id="swimlanes"' "$work/dom.html" || fail "the rendered page has no swimlane svg"
grep -Eq 'id="counter"[^>]*>[0-9]+ events<' "$work/dom.html" ||
  fail "the inline script did not run (the event counter is empty)"

echo "render_html_check: ok: $scenario renders ($png_bytes-byte screenshot)"
