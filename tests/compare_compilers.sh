#!/usr/bin/env bash
# Determinism "on any machine" includes another compiler: two inboxsim binaries built from the
# same source (GCC and clang in CI) must give the same trace_hash for every scenario of the
# library, and the same swarm campaign JSON once wall_ms (the only timing in it) is removed.
# A scenario's own verdict (exit code 0 or 1) does not matter here, only that both agree.
# On a difference it prints what differs: the first differing trace line, or a diff of the JSON.
#
# Usage: bash tests/compare_compilers.sh GCC_BINARY CLANG_BINARY   (any two builds will do)
# Prints "N passed, M failed" on its last line; exits non-zero if anything differs.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: bash tests/compare_compilers.sh GCC_BINARY CLANG_BINARY" >&2
  exit 2
fi
first=$(realpath "$1")
second=$(realpath "$2")
for binary in "$first" "$second"; do
  if [[ ! -x "$binary" ]]; then
    echo "compare_compilers.sh: $binary is not an executable" >&2
    exit 2
  fi
done
cd "$(dirname "${BASH_SOURCE[0]}")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

passed=0
failed=0

# run_json BINARY OUT ARGS...: runs BINARY ARGS... into OUT; exit 0 or 1 is a result, anything
# else (bad input, internal error, a sanitizer or a crash) is reported and counted as a failure.
run_json() {
  local binary=$1 out=$2
  shift 2
  local code=0
  "$binary" "$@" >"$out" 2>"$out.err" </dev/null || code=$?
  if [[ $code -gt 1 ]]; then
    echo "FAILED: $binary $* exited $code"
    head -n 5 "$out.err" | sed 's/^/    stderr: /'
    return 1
  fi
}

# The trace_hash of one `run --json` output.
trace_hash() {
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["trace_hash"])' "$1"
}

for scenario in scenarios/*.json; do
  name=$(basename "$scenario" .json)
  if ! run_json "$first" "$work/$name.1.json" run "$scenario" --json --quiet ||
    ! run_json "$second" "$work/$name.2.json" run "$scenario" --json --quiet; then
    failed=$((failed + 1))
    continue
  fi
  hash1=$(trace_hash "$work/$name.1.json")
  hash2=$(trace_hash "$work/$name.2.json")
  if [[ "$hash1" == "$hash2" ]]; then
    passed=$((passed + 1))
    continue
  fi
  failed=$((failed + 1))
  echo "FAILED: $scenario: trace_hash $hash1 from $first, $hash2 from $second"
  # Where the two stories part: the first trace line that differs.
  "$first" run "$scenario" --quiet --trace "$work/$name.1.jsonl" >/dev/null 2>&1 || true
  "$second" run "$scenario" --quiet --trace "$work/$name.2.jsonl" >/dev/null 2>&1 || true
  python3 - "$work/$name.1.jsonl" "$work/$name.2.jsonl" <<'PY'
import sys
a = open(sys.argv[1]).read().splitlines()
b = open(sys.argv[2]).read().splitlines()
for i, (x, y) in enumerate(zip(a, b)):
    if x != y:
        print(f"    first difference at trace line {i + 1}:\n      1: {x}\n      2: {y}")
        break
else:
    print(f"    one trace is a prefix of the other: {len(a)} and {len(b)} lines")
PY
done

# A swarm campaign: every seed draws its own options, so this covers far more of the code than
# the library does. Seeds run in parallel, but the JSON is the same for any --jobs.
campaign=(fuzz --seeds 1..1000 --swarm --json --out '' --jobs 2)
if run_json "$first" "$work/campaign.1.json" "${campaign[@]}" &&
  run_json "$second" "$work/campaign.2.json" "${campaign[@]}"; then
  if python3 - "$work/campaign.1.json" "$work/campaign.2.json" <<'PY'; then
import difflib, json, sys

def without_wall_ms(value):
    if isinstance(value, dict):
        return {k: without_wall_ms(v) for k, v in value.items() if k != "wall_ms"}
    if isinstance(value, list):
        return [without_wall_ms(v) for v in value]
    return value

texts = [json.dumps(without_wall_ms(json.load(open(path))), indent=1).splitlines()
         for path in sys.argv[1:3]]
if texts[0] == texts[1]:
    sys.exit(0)
diff = list(difflib.unified_diff(texts[0], texts[1], "first", "second", lineterm="", n=2))
print("\n".join("    " + line for line in diff[:60]))
if len(diff) > 60:
    print(f"    ... and {len(diff) - 60} more diff lines")
sys.exit(1)
PY
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAILED: inboxsim ${campaign[*]}: the JSON differs (without wall_ms), as above"
  fi
else
  failed=$((failed + 1))
fi

echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
