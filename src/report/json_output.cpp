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
  out["dropped"] = stats.dropped;
  return out;
}

nlohmann::ordered_json coverage_json(const Coverage& coverage) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (size_t index = 0; index < kProbeCount; ++index) {
    const auto probe = static_cast<Probe>(index);
    out[std::string(probe_name(probe))] = coverage[probe];
  }
  return out;
}

namespace {

// An object built from a map whose keys are already unique and in order: appended straight to
// ordered_json's storage. Its operator[] looks every key up linearly, which made a run with
// 80,000 accounts take seconds.
template <typename Map, typename Name, typename Value>
nlohmann::ordered_json object_from(const Map& map, Name name, Value value) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  auto& members = out.get_ref<nlohmann::ordered_json::object_t&>();
  members.reserve(map.size());
  for (const auto& [key, entry] : map) members.emplace_back(name(key), value(entry));
  return out;
}

auto as_is = [](const auto& value) { return value; };
auto type_name = [](MessageType type) { return std::string(message_type_name(type)); };

}  // namespace

nlohmann::ordered_json run_result_json(const RunResult& result) {
  nlohmann::ordered_json out;
  out["scenario"] = result.name;
  out["file"] = result.file;
  out["passed"] = result.passed;
  out["seed"] = result.seed;
  out["trace_hash"] = result.trace_hash;
  out["virtual_ms"] = result.virtual_ms;
  out["stats"] = stats_json(result.stats);
  out["coverage"] = coverage_json(result.coverage);
  out["balances"] = object_from(result.balances, as_is, as_is);
  out["transfers"] =
      object_from(result.transfers, as_is, [](SagaState state) { return saga_state_name(state); });
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
  out["dedupe_hits"] = object_from(
      result.dedupe_hits, [](ServiceId service) { return std::string(service_name(service)); },
      as_is);
  out["published"] = object_from(result.published_ids, type_name, as_is);
  out["sends"] = object_from(result.sends, type_name, as_is);
  out["dead_letter_queues"] = object_from(result.dead_letter_queues, as_is, as_is);
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
