// The `--json` object of `inboxsim run` (docs/contract.md §5, contract) and the `--trace` JSONL file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "domain/result.h"

namespace inboxsim {

// Returns the contract object: scenario, passed, seed, trace_hash, virtual_ms, stats,
// balances, transfers, violations, expectations (plus a few extra fields).
nlohmann::ordered_json run_result_json(const RunResult& result);

nlohmann::ordered_json stats_json(const Stats& stats);

// Returns `coverage` (docs/contract.md §8.3): every probe's name with its count, zeros included, in the
// probes' fixed order.
nlohmann::ordered_json coverage_json(const Coverage& coverage);

// Returns the canonical trace: one JSON object per line, each line ending in '\n'.
std::string trace_jsonl(const RunResult& result);

}  // namespace inboxsim
