#include "report/json_output.h"

namespace inboxsim {

nlohmann::ordered_json stats_json(const Stats& stats) {
  nlohmann::ordered_json out;
  out["published"] = stats.published;
  out["deliveries"] = stats.deliveries;
  out["redeliveries"] = stats.redeliveries;
  out["acks"] = stats.acks;
  out["dedupe_hits"] = stats.dedupe_hits;
  out["effects"] = stats.effects;
  out["crashes"] = stats.crashes;
  out["transactions"] = stats.transactions;
  out["dead_lettered"] = stats.dead_lettered;
  out["error_queued"] = stats.error_queued;
  return out;
}

nlohmann::ordered_json run_result_json(const RunResult& result) {
  nlohmann::ordered_json out;
  out["scenario"] = result.name;
  out["file"] = result.file;
  out["passed"] = result.passed;
  out["seed"] = result.seed;
  out["trace_hash"] = result.trace_hash;
  out["virtual_ms"] = result.virtual_ms;
  out["stats"] = stats_json(result.stats);
  out["balances"] = nlohmann::ordered_json::object();
  for (const auto& [account, balance] : result.balances) out["balances"][account] = balance;
  out["transfers"] = nlohmann::ordered_json::object();
  for (const auto& [id, state] : result.transfers) out["transfers"][id] = saga_state_name(state);
  out["violations"] = nlohmann::ordered_json::array();
  for (const Violation& violation : result.violations) {
    out["violations"].push_back({{"invariant", invariant_name(violation.invariant)},
                                 {"detail", violation.detail},
                                 {"virtual_ms", violation.time_ms}});
  }
  out["expectations"] = nlohmann::ordered_json::array();
  for (const ExpectationResult& expectation : result.expectations) {
    out["expectations"].push_back(
        {{"what", expectation.what}, {"ok", expectation.ok}, {"detail", expectation.detail}});
  }
  out["dedupe_hits"] = nlohmann::ordered_json::object();
  for (const auto& [service, count] : result.dedupe_hits) {
    out["dedupe_hits"][std::string(service_name(service))] = count;
  }
  out["published"] = nlohmann::ordered_json::object();
  for (const auto& [type, count] : result.published_ids) {
    out["published"][std::string(message_type_name(type))] = count;
  }
  out["sends"] = nlohmann::ordered_json::object();
  for (const auto& [type, count] : result.sends) {
    out["sends"][std::string(message_type_name(type))] = count;
  }
  out["dead_letter_queues"] = result.dead_letter_queues;
  out["parked"] = result.parked;
  out["unfired_faults"] = result.unfired_faults;
  out["config"] = result.config;
  return out;
}

std::string trace_jsonl(const RunResult& result) {
  std::string out;
  for (const TraceEvent& event : result.events) {
    out += trace_event_json(event);
    out.push_back('\n');
  }
  return out;
}

}  // namespace inboxsim
