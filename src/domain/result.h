// What one run of a scenario produced: verdicts, final state, counters and (when kept) the
// trace. Everything the CLI prints, the JSON object, the narration summary and the HTML report
// are rendered from a RunResult; nothing in it refers back into the simulation.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "domain/coverage.h"
#include "domain/row_changes.h"
#include "domain/scenario.h"
#include "kernel/trace.h"

namespace inboxsim {

// Counters of docs/contract.md §5 (`stats`).
struct Stats {
  int64_t published = 0;     // publish operations (a re-publication counts again)
  int64_t deliveries = 0;    // deliveries handed to a consumer
  int64_t redeliveries = 0;  // deliveries with redelivered = true
  int64_t acks = 0;          // acks that reached the broker
  int64_t dedupe_hits = 0;   // deliveries acked by a dedupe mechanism without effect
  int64_t effects = 0;       // balance changes
  int64_t crashes = 0;
  int64_t transactions = 0;   // committed service transactions
  int64_t dead_lettered = 0;  // dead-lettered by the broker (a quorum queue's delivery limit)
  int64_t error_queued = 0;   // moved to an _error queue by MassTransit after its retries
  int64_t dropped = 0;  // dropped by the broker past the delivery limit (no dead-letter exchange)

  Stats& operator+=(const Stats& other);
};

struct Violation {
  Invariant invariant = Invariant::conservation;
  std::string detail;
  int64_t time_ms = 0;
};

struct ExpectationResult {
  std::string what;  // e.g. "balances.alice", "violations"
  bool ok = false;
  std::string detail;  // "expected 7500, got 5000"
};

// A ledger entry as the account-service committed it.
struct LedgerEntry {
  std::string transfer;
  EntryType type = EntryType::debit;
  std::string account;
  int64_t amount = 0;  // signed balance change
};

struct RunResult {
  std::string file;
  std::string name;
  std::string title;
  std::string description;
  DescriptionParts description_parts;  // shown_parts of the scenario: empty when description is set
  std::string lesson;
  nlohmann::ordered_json config;  // every config key with the value the run used
  uint64_t seed = 0;
  std::string trace_hash;  // empty when the run was not hashed (fuzz_run)
  int64_t virtual_ms = 0;
  Stats stats;
  std::map<ServiceId, int64_t> dedupe_hits;      // per service
  Coverage coverage;                             // how often each probe was reached (§8.3)
  std::map<MessageType, int64_t> published_ids;  // distinct message ids per type
  std::map<MessageType, int64_t> sends;          // publish operations per type
  // Messages moved into each dead-letter and error queue over the run, by queue name.
  std::map<std::string, int64_t> dead_letter_queues;
  // What still waits in those queues at the end: "queue: Type transfer (message id)".
  std::vector<std::string> parked;
  std::map<std::string, int64_t> opening_balances;
  std::map<std::string, int64_t> balances;
  std::map<std::string, SagaState> transfers;
  std::map<std::string, int64_t> transfer_amounts;
  std::vector<LedgerEntry> ledger;  // in commit order
  // Each invariant that was found broken, with its first detail, in invariant order.
  std::vector<Violation> violations;
  // Whether each invariant applied to this run (notified only with notifications on).
  std::array<bool, kInvariantCount> invariant_applies{};
  std::vector<ExpectationResult> expectations;
  // Faults a step armed that never fired: the scenario did not do what its author meant.
  std::vector<std::string> unfired_faults;
  bool passed = false;
  std::vector<TraceEvent> events;  // empty unless the trace was kept
  // Each message id's envelope (the JSON body a publisher sends), kept with the trace.
  std::map<std::string, std::string> envelopes;
  // The tables and queues event by event, when the run was asked to record them (a report).
  RowHistory rows;
};

}  // namespace inboxsim
