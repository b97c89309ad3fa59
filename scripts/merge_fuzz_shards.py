#!/usr/bin/env python3
"""Merges the `inboxsim fuzz --json` outputs of a sharded campaign into one summary.

    python3 scripts/merge_fuzz_shards.py fuzz-1.json fuzz-2.json ... > fuzz.json

Each shard (`--shard K/N`) runs its own seeds of one range; together they run each seed once.
The merged object has the fields of one campaign's output (docs/contract.md §5): seeds, failures and
failed_seeds (in seed order), counterexamples, stats and coverage summed, the invariants broken,
the required probes no shard reached, and each failing seed's replay command. `wall_ms` is the
slowest shard's (the campaign's time on machines running side by side), `wall_ms_total` the sum.

Exit codes, as inboxsim's: 0 no seed failed and every required probe was reached, 1 otherwise,
2 bad input (a file that cannot be read or is not a fuzz summary, or shards of different
campaigns), naming the file and what was wrong. Python standard library only.
"""
import json
import sys

# Fields that must agree between shards: they say which campaign a shard belongs to.
CAMPAIGN_FIELDS = ("workload", "swarm", "config", "coverage_required")
SUMMED_OBJECTS = ("stats", "coverage", "coverage_seeds")
REQUIRED_FIELDS = ("seeds", "failures", "failed_seeds", "counterexamples", "stats", "coverage",
                   "wall_ms") + CAMPAIGN_FIELDS


# The invariants in contract order (docs/contract.md §4), the order inboxsim lists them in; a name this
# script does not know (a newer inboxsim's) goes after them, alphabetically.
INVARIANT_ORDER = ["conservation", "ledger_balance", "single_effect", "saga_ledger",
                   "legal_transitions", "no_overdraft", "notified", "termination"]


def invariant_key(name):
    if name in INVARIANT_ORDER:
        return (INVARIANT_ORDER.index(name), "")
    return (len(INVARIANT_ORDER), name)


class BadInput(Exception):
    pass


def load(path):
    try:
        with open(path, encoding="utf-8") as file:
            shard = json.load(file)
    except (OSError, ValueError) as error:
        raise BadInput(f"{path}: cannot read a JSON object: {error}")
    if not isinstance(shard, dict):
        raise BadInput(f"{path}: expected the JSON object of `inboxsim fuzz --json`")
    for field in REQUIRED_FIELDS:
        if field not in shard:
            raise BadInput(f"{path}: /{field}: missing; expected `inboxsim fuzz --json` output")
    return shard


def add_counts(total, counts, path, field):
    if not isinstance(counts, dict):
        raise BadInput(f"{path}: /{field}: expected an object of counts")
    for name, value in counts.items():
        if not isinstance(value, int):
            raise BadInput(f"{path}: /{field}/{name}: expected an integer")
        total[name] = total.get(name, 0) + value


def merge(paths):
    shards = [(path, load(path)) for path in paths]
    first_path, first = shards[0]
    merged = {"shards": len(shards), "seeds": 0, "failures": 0, "failed_seeds": [],
              "counterexamples": [], "stats": {}, "coverage": {}, "wall_ms": 0,
              "wall_ms_total": 0, "violated": [], "coverage_seeds": {},
              "coverage_required": first["coverage_required"], "coverage_missing": [],
              "workload": first["workload"], "swarm": first["swarm"], "config": first["config"],
              "failed": []}
    for path, shard in shards:
        for field in CAMPAIGN_FIELDS:
            if shard[field] != first[field]:
                raise BadInput(f"{path}: /{field}: {json.dumps(shard[field])} differs from "
                               f"{first_path}'s {json.dumps(first[field])}; expected shards of "
                               "one campaign")
        merged["seeds"] += shard["seeds"]
        merged["failures"] += shard["failures"]
        merged["failed_seeds"] += shard["failed_seeds"]
        merged["counterexamples"] += shard["counterexamples"]
        merged["wall_ms"] = max(merged["wall_ms"], shard["wall_ms"])
        merged["wall_ms_total"] += shard["wall_ms"]
        merged["violated"] = sorted(set(merged["violated"]) | set(shard.get("violated", [])),
                                    key=invariant_key)
        merged["failed"] += shard.get("failed", [])
        for field in SUMMED_OBJECTS:
            add_counts(merged[field], shard.get(field, {}), path, field)
    if len(set(merged["failed_seeds"])) != len(merged["failed_seeds"]):
        raise BadInput(f"{paths}: a seed failed in two shards; expected disjoint shards")
    merged["failed_seeds"].sort()
    merged["failed"].sort(key=lambda entry: entry["seed"])
    merged["coverage_missing"] = [probe for probe in merged["coverage_required"]
                                  if merged["coverage"].get(probe, 0) == 0]
    return merged


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        merged = merge(argv[1:])
    except BadInput as error:
        print(f"merge_fuzz_shards: {error}", file=sys.stderr)
        return 2
    print(json.dumps(merged, indent=2))
    return 1 if merged["failures"] or merged["coverage_missing"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
