#!/usr/bin/env bash
# docs/ci.md's campaign, run locally: a failing campaign split into shards, each shard's JSON
# and JUnit kept, the shards merged by scripts/merge_fuzz_shards.py, and the merged summary held
# against the same campaign run in one piece. Every failing JUnit testcase must carry the
# command that replays its seed, and that command must fail the same way.
# Usage: bash tests/shard_merge_check.sh PATH_TO_INBOXSIM   (run from the repository root)
set -u
bin=$(realpath "$1")
cd "$(dirname "$0")/.." || exit 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=check.sh
source tests/check.sh  # check, finish

# A configuration that breaks (no inbox, no ledger index), with a value containing a space-free
# comma list so that quoting is exercised only where needed.
campaign=(fuzz --seeds 1..45 --workload small --set account.inbox=none
          --set account.ledger_unique=false --set account.retry=intervals:5,10 --shrink 1)
"$bin" "${campaign[@]}" --json --out "$work/cx-all" >"$work/all.json"
check "the whole campaign fails (exit 1)" test $? -eq 1
for k in 1 2 3; do
  "$bin" "${campaign[@]}" --shard "$k/3" --json --junit "$work/fuzz-$k.xml" \
    --out "$work/cx-$k" >"$work/fuzz-$k.json"
  check "shard $k/3 runs (exit 0 or 1)" test $? -le 1
done
python3 scripts/merge_fuzz_shards.py "$work"/fuzz-{1,2,3}.json >"$work/merged.json"
check "the merge exits 1: a seed failed" test $? -eq 1

check "the merged summary is the whole campaign's" python3 - "$work/all.json" "$work/merged.json" <<'PY'
import json, sys
whole = json.load(open(sys.argv[1]))
merged = json.load(open(sys.argv[2]))
assert merged["shards"] == 3
for key in ["seeds", "failures", "failed_seeds", "stats", "coverage", "coverage_seeds",
            "violated", "workload", "swarm", "config"]:
    assert merged[key] == whole[key], (key, merged[key], whole[key])
assert [f["seed"] for f in merged["failed"]] == whole["failed_seeds"]
assert [f["replay"] for f in merged["failed"]] == [f["replay"] for f in whole["failed"]]
assert len(merged["counterexamples"]) == 3  # one shrunk per shard (--shrink 1)
assert merged["failures"] > 0
PY

# JUnit: the configuration as properties, and a replay command on every failure.
check "every failing testcase carries its replay command" python3 - "$work" <<'PY'
import sys, xml.etree.ElementTree as ET
work = sys.argv[1]
failures = 0
for k in (1, 2, 3):
    suite = ET.parse(f"{work}/fuzz-{k}.xml").getroot().find("testsuite")
    props = {}
    for prop in suite.find("properties"):
        props.setdefault(prop.get("name"), []).append(prop.get("value"))
    assert props["seeds"] == ["1..45"] and props["shard"] == [f"{k}/3"], props
    assert props["workload"] == ["small"] and props["swarm"] == ["false"], props
    assert props["set"] == ["account.inbox=none", "account.ledger_unique=false",
                            "account.retry=intervals:5,10"], props
    for case in suite.findall("testcase"):
        failure = case.find("failure")
        if failure is None:
            continue
        failures += 1
        seed = case.get("name").split()[1]
        expected = (f"replay: inboxsim fuzz --seeds {seed}..{seed} --workload small "
                    "--set account.inbox=none --set account.ledger_unique=false "
                    "--set account.retry=intervals:5,10")
        assert expected in failure.text, failure.text
        open(f"{work}/replay.txt", "w").write(expected[len("replay: inboxsim "):] + "\n")
assert failures > 0
PY

# The last failing seed's command, as the JUnit report wrote it, fails that seed again.
read -r -a replay <"$work/replay.txt"
"$bin" "${replay[@]}" --json --shrink 0 --out "" >"$work/replay.json"
check "the replay command fails (exit 1)" test $? -eq 1
check "and fails that seed" python3 - "$work/replay.json" "${replay[2]}" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
seed = int(sys.argv[2].split("..")[0])
assert result["failed_seeds"] == [seed], result["failed_seeds"]
PY

# Shards of different campaigns are refused, naming the file.
"$bin" fuzz --seeds 1..5 --workload small --json --out "" >"$work/other.json"
python3 scripts/merge_fuzz_shards.py "$work/fuzz-1.json" "$work/other.json" \
  >/dev/null 2>"$work/merge-error.txt"
check "merging different campaigns exits 2" test $? -eq 2
check "naming the file and the field" grep -q "other.json: /config" "$work/merge-error.txt"
echo "not json" >"$work/broken.json"
python3 scripts/merge_fuzz_shards.py "$work/broken.json" >/dev/null 2>"$work/merge-error.txt"
check "a file that is not JSON exits 2" test $? -eq 2
check "naming the file" grep -q "broken.json" "$work/merge-error.txt"

# --rate is validated like every option: exit 2, naming it.
"$bin" fuzz --seeds 1..1 --rate 0 >/dev/null 2>"$work/rate-error.txt"
check "fuzz --rate 0 exits 2" test $? -eq 2
check "naming --rate" grep -q -- "--rate" "$work/rate-error.txt"

finish
