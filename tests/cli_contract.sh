#!/usr/bin/env bash
# The CLI contract of docs/contract.md §5, checked from the outside as a script or CI would use it:
# exit codes, the --json object, --trace (and that trace_hash is the hash of it), --db-dir,
# --set, --quiet and colours.
# Usage: bash tests/cli_contract.sh PATH_TO_INBOXSIM   (run from the repository root)
set -u
bin=$(realpath "$1")
cd "$(dirname "$0")/.." || exit 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck source=check.sh
source tests/check.sh  # check, finish

happy=scenarios/01-happy-path.json

# Exit code 0 and the JSON object with every contract field.
"$bin" run "$happy" --json >"$work/happy.json"
check "run --json exits 0 when every expectation holds" test $? -eq 0
check "the --json object has every contract field" python3 - "$work/happy.json" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
for key in ["scenario", "passed", "seed", "trace_hash", "virtual_ms", "stats", "balances",
            "transfers", "violations", "expectations"]:
    assert key in result, key
for key in ["published", "deliveries", "redeliveries", "acks", "dedupe_hits", "effects",
            "crashes", "transactions", "dead_lettered"]:
    assert isinstance(result["stats"][key], int), key
assert result["passed"] is True
assert result["balances"] == {"alice": 7500, "bob": 2500}
assert result["transfers"] == {"t1": "COMPLETED"}
assert result["violations"] == []
assert all(e["ok"] for e in result["expectations"])
assert len(result["trace_hash"]) == 16
PY

# --seed overrides the scenario's seed; the outcome stays, the interleaving may not.
"$bin" run "$happy" --json --seed 99 >"$work/seed99.json"
check "--seed is reported" python3 -c "import json,sys; assert json.load(open('$work/seed99.json'))['seed'] == 99"

# Several files give an array, in the order given.
"$bin" run "$happy" "$happy" --json >"$work/two.json"
check "several files give a JSON array" python3 -c "import json; r=json.load(open('$work/two.json')); assert isinstance(r, list) and len(r) == 2"

# An expectation that fails: exit code 1, and the failing expectation named.
python3 - "$happy" "$work/wrong.json" <<'PY'
import json, sys
scenario = json.load(open(sys.argv[1]))
scenario["expect"]["balances"]["bob"] = 9999
json.dump(scenario, open(sys.argv[2], "w"))
PY
"$bin" run "$work/wrong.json" --json >"$work/wrong-out.json"
check "a failed expectation exits 1" test $? -eq 1
check "the failed expectation is reported" python3 -c "
import json; r = json.load(open('$work/wrong-out.json'))
bad = [e for e in r['expectations'] if not e['ok']]
assert [e['what'] for e in bad] == ['balances.bob'], bad
assert 'expected 9999, got 2500' in bad[0]['detail']"

# --trace writes one JSON object per line, and trace_hash is FNV-1a 64 of exactly those bytes.
"$bin" run "$happy" --quiet --trace "$work/trace.jsonl" --json >"$work/traced.json"
check "trace_hash is the FNV-1a hash of the --trace file" python3 - "$work/trace.jsonl" "$work/traced.json" <<'PY'
import json, sys
data = open(sys.argv[1], "rb").read()
h = 0xcbf29ce484222325
for byte in data:
    h ^= byte
    h = (h * 0x100000001b3) % (1 << 64)
lines = data.decode().splitlines()
assert len(lines) > 10
for line in lines:
    event = json.loads(line)
    assert "t" in event and "kind" in event
delivers = [json.loads(l) for l in lines if json.loads(l)["kind"] == "deliver"]
assert all("tag" in d and "redelivered" in d and "message_id" in d for d in delivers)
assert json.load(open(sys.argv[2]))["trace_hash"] == "%016x" % h
PY

# Without a view (--trace, --html, --mermaid) a run keeps no events, and hashes the same trace.
check "run --json without --trace reports the trace_hash of the --trace file" python3 -c "
import json
assert json.load(open('$work/happy.json'))['trace_hash'] == json.load(open('$work/traced.json'))['trace_hash']"

# Same seed, same bytes.
"$bin" run "$happy" --quiet --trace "$work/trace2.jsonl" >/dev/null
check "the same run writes a byte-identical trace" cmp -s "$work/trace.jsonl" "$work/trace2.jsonl"

# --db-dir keeps each service's database as a file sqlite3 can open.
"$bin" run "$happy" --quiet --db-dir "$work/db" >/dev/null
check "--db-dir keeps the account-service database" \
  test "$(sqlite3 "$work/db/01-happy-path.account-service.sqlite" 'SELECT COUNT(*) FROM ledger')" = 2
check "--db-dir keeps the transfer-service database" \
  test "$(sqlite3 "$work/db/01-happy-path.transfer-service.sqlite" 'SELECT state FROM sagas')" = COMPLETED

# --set overrides config; a bad key or value is bad input.
"$bin" run "$happy" --quiet --set account.inbox=marten >/dev/null
check "--set with a good value runs" test $? -eq 0
"$bin" run "$happy" --set account.inbox=redis >/dev/null 2>"$work/err"
check "--set with a bad value exits 2" test $? -eq 2
check "--set error names the option and what was expected" grep -q -- "--set account.inbox=redis: expected a string, one of masstransit" "$work/err"
"$bin" run "$happy" --set nope=1 >/dev/null 2>&1
check "--set with an unknown key exits 2" test $? -eq 2
"$bin" run "$happy" --no-such-flag >/dev/null 2>&1
check "an unknown flag exits 2" test $? -eq 2
"$bin" run "$happy" --color purple >/dev/null 2>&1
check "a bad --color exits 2" test $? -eq 2

# --quiet prints only the verdict; colours only when asked for.
check "--quiet prints one line" test "$("$bin" run "$happy" --quiet | grep -c .)" -eq 1
check "--color never prints no escape codes" bash -c "! '$bin' run '$happy' --color never | grep -q $'\e'"
check "NO_COLOR is honoured" bash -c "! NO_COLOR=1 '$bin' run '$happy' | grep -q $'\e'"
check "--color always prints escape codes" bash -c "'$bin' run '$happy' --color always | grep -q $'\e'"

# The views are written.
"$bin" run "$happy" --quiet --mermaid "$work/run.mmd" --html "$work/run.html" >/dev/null
check "--mermaid writes a sequence diagram" grep -q '^sequenceDiagram' "$work/run.mmd"
check "--html writes one self-contained page" bash -c "grep -q '<svg' '$work/run.html' && ! grep -q '<script src' '$work/run.html'"

# Error and dead-letter queues are real queues in --json: how many went in, what still waits.
"$bin" run scenarios/37-error-queue-hazard.json --json >"$work/parked.json"
check "--json counts the messages moved into each error or dead-letter queue" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["dead_letter_queues"] == {"account-service_error": 1}, d["dead_letter_queues"]
assert d["parked"] == ["account-service_error: Transfer.Requested t1 (m-1)"], d["parked"]
assert d["stats"]["error_queued"] == 1 and d["stats"]["dead_lettered"] == 0
assert "stuck behind account-service_error" in d["violations"][0]["detail"]
' "$work/parked.json"

# demo runs the library, or the part of it a class needs, and links a page per scenario.
"$bin" demo 04 09 --quiet --out "$work/demo" >/dev/null
check "demo with names runs only those scenarios" \
  test "$(ls "$work/demo" | tr '\n' ' ')" = "04-two-identical-deliveries.html 09-crash-after-commit.html index.html "
check "the demo index links each page" grep -q 'href="09-crash-after-commit.html"' "$work/demo/index.html"
"$bin" demo 12 04 09 --out "$work/demo-order" --color never </dev/null >"$work/demo-order.txt"
check "demo keeps the order the teacher gives" \
  test "$(grep -o '^== [0-9]*' "$work/demo-order.txt" | tr '\n' ' ')" = "== 12 == 04 == 09 "
"$bin" demo 31 --quiet --out "$work/demo31" >/dev/null
check "the demo index says what a break-it story breaks" \
  grep -q "breaks: conservation, single_effect, saga_ledger" "$work/demo31/index.html"
"$bin" demo 99 --quiet --out "$work/demo99" >/dev/null 2>"$work/err"
check "demo with an unknown name exits 2" test $? -eq 2
check "demo says which name matched nothing" grep -q "demo 99: expected the start of a scenario name" "$work/err"
# demo --plan: the plans a class picks from, and the glossary of the narration's words.
"$bin" demo --plan list >"$work/plans.txt"
check "demo --plan list exits 0" test $? -eq 0
check "demo --plan list lists the 50-minute plan with its minutes" \
  grep -qE '^50min  (4[0-9]|50) min  ' "$work/plans.txt"
check "and its blocks with their scenarios" grep -q '^  5\. .*50 (6 min, with explore)' "$work/plans.txt"
"$bin" demo --plan 45min --out "$work/demo-plan" >/dev/null 2>"$work/err"
check "an unknown plan exits 2" test $? -eq 2
check "and lists the plans" grep -q "demo --plan 45min: expected a plan: 50min, full, or list" "$work/err"
"$bin" demo --plan 50min 04 --out "$work/demo-plan" >/dev/null 2>"$work/err"
check "a plan and scenario names together exit 2" test $? -eq 2
"$bin" list >"$work/list.txt"
check "list heads each lesson block with its minutes" \
  grep -qE '^# Lesson block 1 of [0-9]+: The mechanics.* \([0-9]+ min\)$' "$work/list.txt"
check "list gives each scenario its minutes" grep -qE '^01-happy-path +4 min +A transfer' "$work/list.txt"
"$bin" glossary >"$work/glossary.txt"
check "glossary exits 0" test $? -eq 0
# An entry's first line is its term, then " (also: ...)" when it has other spellings.
sed -n -E 's/^([^ ].*)$/\1/p' "$work/glossary.txt" | sed 's/ (also:.*//' >"$work/glossary-terms.txt"
for term in tag m-N pass "crash point" prefetch "quorum queue" "classic queue" "_error queue" \
  .dlq relay inbox outbox redelivered x-delivery-count; do
  check "glossary lists $term" grep -qxF "$term" "$work/glossary-terms.txt"
done
"$bin" glossary tag >"$work/tag.txt"
check "glossary tag explains the delivery tag" grep -q "the number RabbitMQ gives each delivery on one channel" "$work/tag.txt"
check "glossary tag prints that term alone" test "$(grep -c '^[^ ]' "$work/tag.txt")" -eq 1
"$bin" glossary crash point | grep -q "after_commit: committed, not yet acked"
check "a term of two words is found" test $? -eq 0
"$bin" glossary flux >/dev/null 2>"$work/err"
check "an unknown term exits 2" test $? -eq 2
check "and lists the terms" grep -q "glossary flux: not a term of the glossary; expected one of: tag, m-N," "$work/err"

# config: the keys a scenario's "config" and --set take, from the same table config_set reads.
"$bin" config >"$work/config.txt"
check "config exits 0" test $? -eq 0
check "config gives a key its default, meaning and values" \
  grep -qxF "account.inbox  (default masstransit)" "$work/config.txt"
check "config lists the inbox names" grep -q "values: masstransit, marten, none, external-before" "$work/config.txt"
"$bin" config --json >"$work/config.json"
check "config --json is an array of every key" python3 -c '
import json, sys
keys = json.load(open(sys.argv[1]))
names = [k["key"] for k in keys]
assert len(names) == len(set(names)) >= 29, names
assert all(set(k) == {"key", "default", "values", "choices", "summary"} for k in keys)
assert {"key": "broker.prefetch", "default": 16} == {x: keys[names.index("broker.prefetch")][x] for x in ("key", "default")}
' "$work/config.json"
# Every fixed value config offers is one --set accepts, and the run's JSON config reads it back.
# A key of JetStream's alone (its summary says "jetstream:") is set on the bank on JetStream.
while read -r key; do
  on=()
  "$bin" config "$key" | grep -q "jetstream:" && on=(--set broker.kind=jetstream)
  for value in $("$bin" config "$key" --values); do
    "$bin" run scenarios/01-happy-path.json --quiet --json "${on[@]}" --set "$key=$value" >"$work/set.json" 2>"$work/err"
    check "--set $key=$value is accepted" test $? -ne 2
    check "--set $key=$value reads back" python3 -c '
import json, sys
config = json.load(open(sys.argv[1]))["config"]
assert str(config[sys.argv[2]]).lower() == sys.argv[3], config[sys.argv[2]]
' "$work/set.json" "$key" "$value"
  done
done < <("$bin" config --names)
"$bin" config broker.flux >/dev/null 2>"$work/err"
check "config of an unknown key exits 2" test $? -eq 2
check "and lists the keys" grep -q "config broker.flux: expected a known config key: account.inbox," "$work/err"
"$bin" config --values >/dev/null 2>"$work/err"
check "config --values without a key exits 2" test $? -eq 2

# A fuzz counterexample is a scenario like any other: it replays (exit 1 until the bug is fixed)
# and every view renders it.
"$bin" fuzz --seeds 1..100 --set account.inbox=none --set account.ledger_unique=false \
  --shrink 1 --out "$work/cx" >"$work/fuzz.txt" 2>&1
check "fuzz on a broken configuration exits 1" test $? -eq 1
counterexample=$(ls "$work"/cx/*.json 2>/dev/null | head -n 1)
check "fuzz writes a counterexample" test -n "$counterexample"
check "fuzz prints the replay command" grep -q "replay: inboxsim run .*json" "$work/fuzz.txt"
"$bin" run "$counterexample" --quiet --html "$work/cx.html" --mermaid "$work/cx.mmd" \
  --trace "$work/cx.jsonl" >/dev/null
check "the counterexample replays the failure" test $? -eq 1
check "its HTML report shows the violation" grep -q "VIOLATED\|violated" "$work/cx.html"
check "its Mermaid diagram is written" grep -q '^sequenceDiagram' "$work/cx.mmd"
check "its trace records a violation" grep -q '"kind":"violation"' "$work/cx.jsonl"

# Coverage probes (docs/coverage.md): run and fuzz --json list every probe, in one order (the
# same for any --jobs: tests/world/test_coverage.cpp); --require-coverage turns a probe never reached into exit 1, and an unknown
# name into exit 2. (One Python check for all the JSON: each start of Python costs a second on a
# loaded machine.)
"$bin" run scenarios/30-marten-backstop.json --json >"$work/backstop.json"
"$bin" fuzz --seeds 1..10 --out "" --json >"$work/cov1.json"
"$bin" fuzz --seeds 1..10 --out "" --json --require-coverage dedupe.marten_backstop >"$work/req.json" 2>/dev/null
check "run and fuzz --json report coverage: every probe in one order, and what is missing" python3 -c '
import json, sys
run, one, required = (json.load(open(f)) for f in sys.argv[1:])
coverage = run["coverage"]
assert list(coverage) == list(one["coverage"]) == list(one["coverage_seeds"]), list(coverage)
assert len(coverage) >= 20 and all(isinstance(v, int) for v in coverage.values())
assert coverage["dedupe.marten_backstop"] == 1 and coverage["dedupe.marten_precheck"] == 0
assert one["coverage"]["dedupe.masstransit"] > 0 and one["coverage"]["dedupe.marten_backstop"] == 0
assert one["coverage_required"] == one["coverage_missing"] == []
assert required["failures"] == 0
assert required["coverage_required"] == required["coverage_missing"] == ["dedupe.marten_backstop"]
' "$work/backstop.json" "$work/cov1.json" "$work/req.json"
"$bin" fuzz --seeds 1..10 --out "" --require-coverage dedupe.masstransit,republish.same_id \
  >"$work/req-ok.txt" 2>&1
check "--require-coverage exits 0 when every named probe was reached" test $? -eq 0
check "and the summary says PASS" grep -q "^PASS  fuzz: 10 seeds" "$work/req-ok.txt"
"$bin" fuzz --seeds 1..10 --out "" --require-coverage dedupe.masstransit \
  --require-coverage dedupe.marten_backstop,dedupe.marten_precheck >"$work/req.txt" 2>"$work/err"
check "--require-coverage exits 1 when a named probe was never reached" test $? -eq 1
check "stderr names the probes never reached" \
  grep -q -- "--require-coverage: never reached in 10 seeds: dedupe.marten_precheck, dedupe.marten_backstop" "$work/err"
check "so does the summary" \
  grep -q "^FAIL  coverage: never reached dedupe.marten_precheck, dedupe.marten_backstop" "$work/req.txt"
check "the summary lists what was never reached" grep -q "^  never reached: .*dedupe.marten_backstop" "$work/req.txt"
"$bin" fuzz --seeds 1..3 --out "" --require-coverage dedupe.masstransit,dedupe.redis >/dev/null 2>"$work/err"
check "an unknown probe name exits 2" test $? -eq 2
check "and names the flag, the name and the valid names" \
  grep -q -- "--require-coverage dedupe.redis: expected probe names separated by commas, from: dedupe.masstransit, .*dedupe.marten_backstop" "$work/err"
"$bin" fuzz --help >"$work/help.txt"
check "fuzz --help documents --require-coverage" grep -q -- "--require-coverage" "$work/help.txt"

# Hostile input and places: what the tool does when the file, the flag or the disk is wrong.
touch "$work/a-file"
"$bin" run "$happy" --quiet --db-dir "$work/a-file/db" >/dev/null 2>"$work/err"
check "--db-dir under a file exits 2" test $? -eq 2
check "--db-dir under a file names the directory" grep -q "a-file/db" "$work/err"
python3 - "$happy" "$work/escape.json" <<'PY'
import json, sys
scenario = json.load(open(sys.argv[1]))
scenario["name"] = "../../escaped"
json.dump(scenario, open(sys.argv[2], "w"))
PY
mkdir -p "$work/dbs"
"$bin" run "$work/escape.json" --quiet --db-dir "$work/dbs" >/dev/null
check "a scenario named ../../x still runs" test $? -eq 0
check "its databases stay inside --db-dir" test -z "$(find "$work" -maxdepth 2 -name '*escaped*' -not -path "$work/dbs/*")"
check "and are written there" test -n "$(ls "$work/dbs")"
printf '{"name": "x", "accounts": {"a": 1}\0 garbage' >"$work/nul.json"
"$bin" run "$work/nul.json" --quiet >/dev/null 2>"$work/err"
check "a file with a NUL byte exits 2" test $? -eq 2
for seed in -1 "" 1e3 9007199254740993; do
  "$bin" run "$happy" --quiet --seed "$seed" >/dev/null 2>"$work/err"
  check "--seed '$seed' exits 2" test $? -eq 2
done
"$bin" fuzz --seeds 1..100000000000 --quiet >/dev/null 2>"$work/err"
check "a seed range too large to run exits 2 at once" test $? -eq 2
"$bin" fuzz --seeds 1..3 --quiet --out "$work/a-file" >/dev/null 2>"$work/err"
check "fuzz --out naming a file exits 2" test $? -eq 2
if test -w /dev/full; then
  "$bin" run "$happy" --json >/dev/full 2>"$work/err"
  check "a full standard output exits 2" test $? -eq 2
  check "and says so" grep -q "cannot write to standard output" "$work/err"
fi
mkdir -p "$work/loop"
cp "$happy" "$work/loop/"
ln -s . "$work/loop/self"
"$bin" list "$work/loop" >/dev/null 2>&1
check "list survives a symlink loop" test $? -eq 0
python3 - "$happy" "$work/title.json" <<'PY'
import json, sys
scenario = json.load(open(sys.argv[1]))
scenario["title"] = "red \u001b[31m alert"
json.dump(scenario, open(sys.argv[2], "w"))
PY
"$bin" run "$work/title.json" >"$work/title.txt" 2>&1
check "a title with an escape code runs" test $? -eq 0
check "the escape code is shown, not sent to the terminal" \
  python3 -c 'import sys; t=open(sys.argv[1],"rb").read(); assert b"\x1b[31m alert" not in t and b"\\x1B[31m alert" in t' "$work/title.txt"

# explore (docs/contract.md §8.3): 0 when proven, 1 with a counterexample that run replays, 2 on bad input.
rejected=scenarios/02-insufficient-funds.json
"$bin" explore "$rejected" --faults 0 --json --out "$work/explored" >"$work/explore.json"
check "explore exits 0 when no order breaks an invariant" test $? -eq 0
check "the explore --json object has the contract fields" python3 - "$work/explore.json" <<'PY'
import json, sys
result = json.load(open(sys.argv[1]))
for key in ["states", "transitions", "max_depth", "complete", "violations", "counterexamples",
            "coverage", "wall_ms", "reduction"]:
    assert key in result, key
assert result["complete"] is True and result["violations"] == []
# Several interleavings, one end; the reductions used are named: by default dynamic
# partial-order reduction with sleep sets and persistent sets, and what it reversed.
assert result["states"] > 1 and result["leaves"] == 1 and result["transitions"] >= result["states"]
reduction = result["reduction"]
assert reduction["dpor"] is True and reduction["sleep_sets"] is True, reduction
assert reduction["persistent_sets"] is True and reduction["persistent_sets_fallback"] is False
for key in ["races", "cache_hits", "sleep_blocked", "full_expansions", "races_most_reversed"]:
    assert key in reduction, key
PY
python3 - "$rejected" "$work/dup.json" <<'PY'
import json, sys
scenario = json.load(open(sys.argv[1]))
scenario["name"] = "rejected-twice"
scenario["accounts"] = {"alice": 10000, "bob": 0}
scenario["config"] = {"account.inbox": "none", "account.ledger_unique": False}
scenario["steps"].insert(1, {"fault": {"kind": "duplicate",
                                      "match": {"type": "Transfer.Requested", "transfer": "t1"}}})
scenario.pop("expect", None)
json.dump(scenario, open(sys.argv[2], "w"))
PY
"$bin" explore "$work/dup.json" --faults 0 --out "$work/explored" >"$work/explore.txt"
check "explore exits 1 when some order breaks an invariant" test $? -eq 1
check "and names the replay command" grep -q "replay: inboxsim run $work/explored/rejected-twice-explored-" "$work/explore.txt"
cx=$(ls "$work"/explored/rejected-twice-explored-*.json | head -n 1)
"$bin" run "$cx" --quiet >"$work/replayed.txt"
check "run replays the counterexample to its violation (exit 1)" test $? -eq 1
check "the counterexample carries its schedule" python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['schedule']['choices']" "$cx"
"$bin" explore "$rejected" --fault-kinds crash,pause >/dev/null 2>"$work/err"
check "explore refuses a fault kind that needs a clock (exit 2)" test $? -eq 2
check "and lists the kinds it takes" grep -q "crash,drop_ack,drop_connection,nack,duplicate" "$work/err"
"$bin" explore "$work/dup.json" --faults 0 --reduction none --json --out "$work/explored-full" \
  >"$work/explore-full.json"
check "explore --reduction none finds the same violation (exit 1)" test $? -eq 1
check "through at least as many states, and says it used no reduction" python3 - \
  "$work/explore-full.json" "$work/dup.json" "$bin" <<'PY'
import json, subprocess, sys
full = json.load(open(sys.argv[1]))
reduced = json.loads(subprocess.run([sys.argv[3], "explore", sys.argv[2], "--faults", "0", "--json",
                                     "--out", ""], capture_output=True, text=True).stdout)
assert full["reduction"] == {"sleep_sets": False, "persistent_sets": False,
                             "persistent_sets_fallback": False}, full["reduction"]
assert [v["invariant"] for v in full["violations"]] == [v["invariant"] for v in reduced["violations"]]
assert full["states"] >= reduced["states"] and full["transitions"] > reduced["transitions"]
PY
"$bin" explore "$rejected" --faults 0 --reduction sleep,persistent --json --out "" \
  >"$work/explore-bfs.json"
check "explore --reduction sleep,persistent is the breadth-first search, with the same end" \
  python3 - "$work/explore-bfs.json" "$work/explore.json" <<'PY'
import json, sys
breadth = json.load(open(sys.argv[1]))
default = json.load(open(sys.argv[2]))
assert breadth["reduction"] == {"sleep_sets": True, "persistent_sets": True,
                                "persistent_sets_fallback": False}, breadth["reduction"]
assert breadth["complete"] and breadth["leaves"] == default["leaves"] == 1
assert breadth["states"] > default["states"], (breadth["states"], default["states"])
PY
"$bin" explore "$rejected" --reduction sleep,fast >/dev/null 2>"$work/err"
check "explore refuses an unknown reduction (exit 2)" test $? -eq 2
check "and lists the ones it has" grep -q "expected a comma-separated list of sleep,persistent,dpor, or none" "$work/err"
"$bin" explore "$rejected" --faults 0 --preemptions 1 >"$work/bounded.txt"
check "explore --preemptions proves only up to its bound (exit 0)" test $? -eq 0
check "and says so, never plain PROVEN" grep -q "^PROVEN up to 1 preemption(s) and 0 fault(s)" "$work/bounded.txt"
"$bin" explore "$rejected" --faults 0 --preemptions 1 --json >"$work/bounded.json"
check "its JSON names the bound" python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['preemption_bound'] == 1" "$work/bounded.json"
check "a bounded search is DPOR by default" python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['reduction']['dpor'] is True" "$work/bounded.json"
"$bin" explore "$rejected" --faults 0 --preemptions 1 --reduction sleep,persistent --json \
  >"$work/bounded-bfs.json"
check "and reaches the final states the breadth-first search under the bound does" python3 - \
  "$work/bounded.json" "$work/bounded-bfs.json" <<'PY'
import json, sys
dpor = json.load(open(sys.argv[1]))
breadth = json.load(open(sys.argv[2]))
assert "dpor" not in breadth["reduction"] and breadth["preemption_bound"] == 1, breadth
assert dpor["complete"] and breadth["complete"]
assert dpor["leaves"] == breadth["leaves"], (dpor["leaves"], breadth["leaves"])
PY
"$bin" explore "$work/dup.json" --faults 0 --reduction dpor,persistent --json --out "" \
  >"$work/explore-dpor.json"
check "explore --reduction dpor,persistent finds the same violation (exit 1)" test $? -eq 1
check "and names the reduction with what it reversed" python3 - "$work/explore-dpor.json" \
  "$work/explore-full.json" <<'PY'
import json, sys
dpor = json.load(open(sys.argv[1]))
full = json.load(open(sys.argv[2]))
reduction = dpor["reduction"]
assert reduction["dpor"] is True and reduction["persistent_sets"] is True, reduction
assert reduction["races"] >= 0 and isinstance(reduction["races_most_reversed"], list), reduction
assert [v["invariant"] for v in dpor["violations"]] == [v["invariant"] for v in full["violations"]]
assert dpor["states"] <= full["states"]
PY
# Reachability goals (docs/contract.md §8.3): explore decides them; an expected break does not
# fail it, a goal decided against the file does.
python3 - "$work/dup.json" "$work/goals-met.json" "$work/goals-wrong.json" <<'PY'
import json, sys
story = json.load(open(sys.argv[1]))
story["name"] = "goals-met"
story["expect"] = {"reachable": [{"broken": "single_effect"}, {"broken": "conservation"},
                                 {"broken": "saga_ledger"}],
                   "unreachable": [{"probe": "ledger.key_rejected"},
                                   {"transfer": "t1", "state": "REJECTED"}]}
json.dump(story, open(sys.argv[2], "w"))
story["name"] = "goals-wrong"
story["expect"]["reachable"].append({"probe": "redelivery.after_commit"})  # no crash here
json.dump(story, open(sys.argv[3], "w"))
PY
"$bin" explore "$work/goals-met.json" --faults 0 --json --out "$work/goals" >"$work/goals-met.out"
check "explore exits 0 when every goal is met and every break is expected" test $? -eq 0
check "its JSON reports each goal decided, with the witness of the break" python3 - "$work/goals-met.out" <<'PY'
import json, os, sys
goals = json.load(open(sys.argv[1]))["goals"]
assert [g["status"] for g in goals] == ["reached"] * 3 + ["unreachable"] * 2, goals
assert all(g["met"] is True for g in goals), goals
assert goals[0]["goal"] == {"broken": "single_effect"} and goals[0]["expected"] == "reachable"
assert os.path.exists(goals[0]["witness"]), goals[0]
PY
"$bin" explore "$work/goals-wrong.json" --faults 0 --out "" >"$work/goals-wrong.out"
check "explore exits 1 when a goal is decided against the file" test $? -eq 1
check "and says which" grep -q "goal probe redelivery.after_commit (reachable): UNREACHABLE.*\[goal not met\]" "$work/goals-wrong.out"
printf '%s' '{"accounts": {"alice": 1}, "steps": [], "expect": {"reachable": [{"saga": "t1"}]}}' >"$work/bad-goal.json"
"$bin" explore "$work/bad-goal.json" 2>"$work/err" >/dev/null
check "a bad goal is refused (exit 2) naming where it is" test $? -eq 2
check "with the pointer" grep -q "/expect/reachable/0/saga" "$work/err"

# A nack parks the message in the error queue; the explorer's operator replays it (the default)
# and the story settles, or nobody does and the transfer is stuck.
"$bin" explore scenarios/01-happy-path.json --faults 1 --fault-kinds nack --json --out "" \
  >"$work/operated.json"
check "explore with one nack anywhere and the operator proves the happy path (exit 0)" test $? -eq 0
check "and says how many redrive rounds it appended" python3 -c \
  "import json,sys; r=json.load(open(sys.argv[1])); assert r['redrive_rounds'] == 2 and r['complete'], r" \
  "$work/operated.json"
"$bin" explore scenarios/01-happy-path.json --faults 1 --fault-kinds nack --operator none \
  --out "" >"$work/stuck.txt"
check "explore --operator none: the parked transfer breaks termination (exit 1)" test $? -eq 1
check "and names it" grep -q "BROKEN termination" "$work/stuck.txt"
"$bin" explore "$rejected" --operator sometimes >/dev/null 2>"$work/err"
check "explore refuses an unknown --operator (exit 2)" test $? -eq 2
check "and lists the two it takes" grep -q "redrive,none" "$work/err"
"$bin" explore scenarios/14-window-too-short.json >/dev/null 2>"$work/err"
check "explore refuses a timed story (exit 2)" test $? -eq 2
check "and names the step" grep -q "pointer: /steps/" "$work/err"

# matrix --exhaustive: its own options need it, and it takes no seeds; its story is checked as
# explore checks one. (The 32 explorations themselves run in the long tests.)
"$bin" matrix --exhaustive --seeds 1..3 >/dev/null 2>"$work/err"
check "matrix --exhaustive refuses --seeds (exit 2)" test $? -eq 2
check "and says why" grep -q -- "--seeds: expected no seeds, workload or swarm with --exhaustive" "$work/err"
"$bin" matrix --faults 1 >/dev/null 2>"$work/err"
check "matrix refuses --faults without --exhaustive (exit 2)" test $? -eq 2
check "and names the option" grep -q -- "--faults: expected --exhaustive" "$work/err"
"$bin" matrix --exhaustive --story scenarios/14-window-too-short.json >/dev/null 2>"$work/err"
check "matrix --exhaustive refuses a timed story (exit 2)" test $? -eq 2
check "and names the file and the step" grep -q "14-window-too-short.json: pointer: /steps/" "$work/err"
"$bin" matrix --exhaustive --fault-kinds crash,bogus >/dev/null 2>"$work/err"
check "matrix --exhaustive refuses an unknown fault kind (exit 2)" test $? -eq 2
"$bin" matrix --operator none >/dev/null 2>"$work/err"
check "matrix refuses --operator without --exhaustive (exit 2)" test $? -eq 2
check "and names the option" grep -q -- "--operator: expected --exhaustive" "$work/err"
# The rejected transfer with one nack anywhere: each row's operator replays what the nack parked,
# and with nobody to replay it even the all-on row is stuck (exit 1).
"$bin" matrix --exhaustive --story "$rejected" --faults 1 --fault-kinds nack --out "" --json \
  >"$work/matrix-operated.json" 2>"$work/matrix-operated.err"
check "matrix --exhaustive with an operator: the all-on row is proven (exit 0)" test $? -eq 0
check "each row is reported on stderr as it ends, 32 of them" test "$(grep -c '^matrix row [0-9]*/32 (' "$work/matrix-operated.err")" -eq 32
check "the first one is the all-on row, proven, with its states" grep -q '^matrix row 1/32 (all-on): proven, [0-9]* states, [0-9]* s$' "$work/matrix-operated.err"
check "and each row says the rounds it appended" python3 -c \
  "import json,sys; d=json.load(open(sys.argv[1])); assert all(r['exploration']['redrive_rounds'] == 2 for r in d['rows']), d['rows'][0]" \
  "$work/matrix-operated.json"
"$bin" matrix --exhaustive --story "$rejected" --faults 1 --fault-kinds nack --operator none \
  --out "" >"$work/matrix-stuck.txt" 2>"$work/matrix-stuck.err"
check "matrix --exhaustive --operator none: the nack leaves the all-on row stuck (exit 1)" test $? -eq 1
check "as termination" grep -q "termination" "$work/matrix-stuck.txt"

# --step-on: a pause at each event of the kinds named, after its line; "event" pauses at every one.
crashed=scenarios/09-crash-after-commit.json
yes '' | "$bin" run "$crashed" --step-on crash,dedupe_hit --color never >"$work/stops.txt"
check "run --step-on crash,dedupe_hit pauses once per crash and per dedupe hit" \
  test "$(grep -c '\[Enter\] next stop' "$work/stops.txt")" -eq 2
check "and the pause comes right after the crash's line" \
  bash -c "grep -m1 -A1 CRASH '$work/stops.txt' | sed -n 2p | grep -q '^  .Enter. next stop'"
yes '' | "$bin" run "$crashed" --step-on event --color never --trace "$work/stops.jsonl" >"$work/every.txt"
# One pause per event; at the scenario's checkpoint the pause waits for its answer instead.
check "run --step-on event pauses at every event of the trace" \
  test "$(grep -c '\[Enter\] \(next event\|the answer\)' "$work/every.txt")" -eq "$(wc -l <"$work/stops.jsonl")"
check "and 09's checkpoint asks its question once, and waits for the answer" \
  test "$(grep -c '\[Enter\] the answer' "$work/every.txt")" -eq 1
yes '' | "$bin" run "$crashed" --step --color never >"$work/stepped.txt"
check "run --step waits at the checkpoint too, after its question" \
  bash -c "grep -A1 '❓' '$work/stepped.txt' | sed -n 2p | grep -q '^  .Enter. the answer'"
"$bin" run "$crashed" --step-on crash,bogus >/dev/null 2>"$work/err" </dev/null
check "run --step-on with an unknown kind exits 2" test $? -eq 2
check "and names it and the kinds there are" grep -q 'unknown event kind "bogus": expected event (every event) or event kinds, comma-separated: step, request' "$work/err"
"$bin" run "$crashed" --step-on crash --json >/dev/null 2>"$work/err" </dev/null
check "run --step-on with --json exits 2" test $? -eq 2

# The focus narration collapses identical repeats; --verbose prints every event of the trace.
poison=scenarios/41-poison-classic-queue.json
"$bin" run "$poison" --color never >"$work/focus.txt"
check "run collapses scenario 41's loop into one counted line" \
  grep -q '… 996 more identical redeliveries of m-2 (4 lines each): #27 to #4010' "$work/focus.txt"
"$bin" run "$poison" --color never --verbose --trace "$work/poison.jsonl" >"$work/verbose.txt"
check "run --verbose prints one numbered line per event of the trace" \
  test "$(grep -cE '^ *[0-9].* s  #[0-9]+ |^── step [0-9]+ · .*\(#[0-9]+, t = ' "$work/verbose.txt")" -eq "$(wc -l <"$work/poison.jsonl")"
check "and collapses nothing" bash -c "! grep -q 'more identical' '$work/verbose.txt'"
yes '' | "$bin" run "$poison" --step-on requeue --color never >"$work/poison-stops.txt"
check "a --step-on pause inside a loop shows each stop: nothing collapsed over a pause" \
  bash -c "test \"\$(grep -c '\[Enter\] next stop' '$work/poison-stops.txt')\" -eq 999 && ! grep -q 'more identical' '$work/poison-stops.txt'"
"$bin" run "$poison" --verbose --quiet >/dev/null 2>"$work/err"
check "run --verbose with --quiet exits 2" test $? -eq 2
check "and says why" grep -q -- "--verbose prints every line of the narration: not with --json or --quiet" "$work/err"
"$bin" demo 41 --verbose --color never --out "$work/demo-verbose" >"$work/demo-verbose.txt"
check "demo --verbose prints every line too" \
  bash -c "grep -q 'tag 999 on transfer-service' '$work/demo-verbose.txt' && ! grep -q 'more identical' '$work/demo-verbose.txt'"

finish
