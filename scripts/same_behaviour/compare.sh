#!/usr/bin/env bash
# Shows that a refactor changed no behaviour: runs two inboxsim binaries on the same inputs and
# diffs what they print, wall-clock fields left out (strip.py). Exit 0 when every diff is empty.
#
# Usage: scripts/same_behaviour/compare.sh BASE NEW [SCENARIO_DIR]
#   BASE, NEW      two builds of inboxsim (copy the first aside before rebuilding)
#   SCENARIO_DIR   default: the repository's scenarios/
#
# Covers, for every scenario: `run --json`, `run --trace` (the trace file and the quiet
# verdict), `run` narrated; `explore --faults 0 --json` (its first 10,000 states); 01* with one
# crash anywhere, 02* with one fault of any kind; `fuzz --seeds 1..200` plain and `--swarm` with
# --json (and the counterexamples they write); and the playground's API driven by play_walk.py
# (seeded walks with faults, run-on, explores from a moment). Fingerprints are never printed:
# a change to them shows only through the explorer's counts. Takes about 15 minutes on 2 cores.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
if [ $# -lt 2 ]; then
  sed -n 5,7p "$0" >&2
  exit 2
fi
BASE=$(realpath "$1")
NEW=$(realpath "$2")
SCENARIOS=$(realpath "${3:-$HERE/../../scenarios}")
WORK=$(mktemp -d)
export NO_COLOR=1
mkdir -p "$WORK/base" "$WORK/new"

# Runs one command, keeping its stdout (stripped), stderr and exit status under OUT.NAME.
keep() {
  local out=$1 name=$2
  shift 2
  "$@" >"$out/$name.raw" 2>"$out/$name.err"
  echo $? >"$out/$name.rc"
  if python3 "$HERE/strip.py" "$out/$name.raw" >"$out/$name.out" 2>/dev/null; then
    rm "$out/$name.raw"
  else
    mv "$out/$name.raw" "$out/$name.out"  # not JSON: compared as it is
  fi
}

produce() {
  local binary=$1 out=$2
  cd "$out" || exit 3
  for file in "$SCENARIOS"/*.json; do
    local name
    name=$(basename "$file" .json)
    keep "$out" "run-json-$name" "$binary" run "$file" --json
    keep "$out" "run-text-$name" "$binary" run "$file" --verbose
    keep "$out" "run-trace-$name" "$binary" run "$file" --quiet --trace "$out/trace-$name.jsonl"
    # 75 is slow per state and never finishes with no fault: its first 2,000 states.
    local states=10000
    [[ $name == 75-* ]] && states=2000
    keep "$out" "explore0-$name" "$binary" explore "$file" --faults 0 --json \
      --max-states $states --out "$out/cx-explore"
  done
  for file in "$SCENARIOS"/01*.json; do
    keep "$out" "explore-crash-$(basename "$file" .json)" "$binary" explore "$file" --faults 1 \
      --fault-kinds crash --json --out "$out/cx-explore"
  done
  for file in "$SCENARIOS"/02*.json; do
    keep "$out" "explore1-$(basename "$file" .json)" "$binary" explore "$file" --faults 1 --json \
      --out "$out/cx-explore"
  done
  keep "$out" fuzz-plain "$binary" fuzz --seeds 1..200 --json --jobs 1 --out "$out/cx-fuzz"
  keep "$out" fuzz-swarm "$binary" fuzz --seeds 1..200 --swarm --json --jobs 1 \
    --out "$out/cx-fuzz-swarm"
  python3 "$HERE/play_walk.py" "$binary" "$SCENARIOS" "$out/play.raw"
  python3 "$HERE/strip.py" "$out/play.raw" >"$out/play.out" && rm "$out/play.raw"
}

produce "$BASE" "$WORK/base" &
produce "$NEW" "$WORK/new" &
wait
# Paths in the outputs name the directory each binary wrote to: make them the same.
grep -rl "$WORK/new" "$WORK/new" | xargs -r sed -i "s#$WORK/new#$WORK/OUT#g"
grep -rl "$WORK/base" "$WORK/base" | xargs -r sed -i "s#$WORK/base#$WORK/OUT#g"
echo "files: $(find "$WORK/base" -type f | wc -l) base, $(find "$WORK/new" -type f | wc -l) new"
echo "non-zero exits (base): $(grep -L '^0$' "$WORK"/base/*.rc | wc -l)"
if diff -r "$WORK/base" "$WORK/new" >"$WORK/diff.txt"; then
  echo "EMPTY DIFF: the outputs are identical"
  rm -rf "$WORK"
else
  echo "DIFFERENCES: $(wc -l <"$WORK/diff.txt") lines in $WORK/diff.txt"
  exit 1
fi
