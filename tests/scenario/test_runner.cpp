// Whole runs: recovery from a crash at every crash point, the broken defences doing what the
// seed says they do, and determinism (same seed, same trace; any scenario, twice).
#include <catch2/catch.hpp>
#include <filesystem>

#include "report/html.h"
#include "scenario/parse.h"
#include "scenario/runner.h"

using namespace inboxsim;

namespace {

Scenario one_transfer(const std::string& to = "bob") {
  Scenario scenario;
  scenario.name = "test";
  scenario.accounts = {{"alice", {10000, false}}, {"bob", {0, false}}, {"carol", {0, true}}};
  Step transfer;
  transfer.kind = StepKind::transfer;
  transfer.transfer = TransferSpec{"t1", "alice", to, 2500};
  scenario.steps.push_back(transfer);
  return scenario;
}

void add_fault(Scenario& scenario, FaultSpec fault) {
  Step step;
  step.kind = StepKind::fault;
  step.fault = std::move(fault);
  scenario.steps.insert(scenario.steps.begin(), step);
}

FaultSpec crash(ServiceId service, CrashPoint point, std::optional<MessageType> type) {
  FaultSpec fault;
  fault.kind = FaultKind::crash;
  fault.service = service;
  fault.at = point;
  fault.has_match = type.has_value();
  fault.match.type = type;
  return fault;
}

FaultSpec on_message(FaultKind kind, MessageType type) {
  FaultSpec fault;
  fault.kind = kind;
  fault.has_match = true;
  fault.match.type = type;
  return fault;
}

std::vector<Invariant> violated(const RunResult& result) {
  std::vector<Invariant> out;
  for (const Violation& violation : result.violations) out.push_back(violation.invariant);
  return out;
}

int64_t count_events(const RunResult& result, EventKind kind) {
  return std::count_if(result.events.begin(), result.events.end(),
                       [&](const TraceEvent& e) { return e.kind == kind; });
}

RunResult run(const Scenario& scenario, uint64_t seed = 1) {
  RunOptions options;
  options.seed = seed;
  return run_scenario(scenario, options);
}

}  // namespace

TEST_CASE("a happy transfer completes and breaks nothing", "[runner]") {
  const RunResult result = run(one_transfer());
  REQUIRE(result.transfers.at("t1") == SagaState::completed);
  REQUIRE(result.balances.at("alice") == 7500);
  REQUIRE(result.balances.at("bob") == 2500);
  REQUIRE(result.violations.empty());
  REQUIRE(result.passed);
  REQUIRE(result.stats.published == 4);
  REQUIRE(result.stats.acks == 4);
  REQUIRE(result.stats.transactions > 0);
}

TEST_CASE("a closed destination is refunded and insufficient funds are rejected", "[runner]") {
  const RunResult refunded = run(one_transfer("carol"));
  REQUIRE(refunded.transfers.at("t1") == SagaState::failed);
  REQUIRE(refunded.balances.at("alice") == 10000);
  REQUIRE(refunded.violations.empty());
  Scenario poor = one_transfer();
  poor.steps[0].transfer.amount = 20000;
  const RunResult rejected = run(poor);
  REQUIRE(rejected.transfers.at("t1") == SagaState::rejected);
  REQUIRE(rejected.ledger.empty());
  REQUIRE(rejected.violations.empty());
}

TEST_CASE("a crash at every crash point recovers: one effect each, nothing lost",
          "[runner][crash]") {
  struct Case {
    ServiceId service;
    CrashPoint point;
    MessageType type;
  };
  const Case cases[] = {
      {ServiceId::account, CrashPoint::before_tx, MessageType::transfer_requested},
      {ServiceId::account, CrashPoint::after_dedupe, MessageType::transfer_requested},
      {ServiceId::account, CrashPoint::after_effect, MessageType::transfer_requested},
      {ServiceId::account, CrashPoint::after_commit, MessageType::transfer_requested},
      {ServiceId::account, CrashPoint::after_outbox_send, MessageType::credit_requested},
      {ServiceId::transfer, CrashPoint::before_tx, MessageType::account_debited},
      {ServiceId::transfer, CrashPoint::after_dedupe, MessageType::account_debited},
      {ServiceId::transfer, CrashPoint::after_effect, MessageType::account_debited},
      {ServiceId::transfer, CrashPoint::after_commit, MessageType::account_credited},
      {ServiceId::transfer, CrashPoint::after_publish, MessageType::credit_requested},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(service_name(c.service) << " at " << crash_point_name(c.point)) {
      Scenario scenario = one_transfer();
      add_fault(scenario, crash(c.service, c.point, c.type));
      const RunResult result = run(scenario);
      REQUIRE(result.stats.crashes == 1);
      REQUIRE(count_events(result, EventKind::restart) == 1);
      REQUIRE(result.transfers.at("t1") == SagaState::completed);
      REQUIRE(result.balances.at("alice") == 7500);
      REQUIRE(result.balances.at("bob") == 2500);
      REQUIRE(result.ledger.size() == 2);
      REQUIRE(result.violations.empty());
      REQUIRE(result.unfired_faults.empty());
    }
  }
}

TEST_CASE("a crash after commit, before the ack: the redelivery is deduped and acked",
          "[runner][crash]") {
  Scenario scenario = one_transfer();
  add_fault(scenario,
            crash(ServiceId::account, CrashPoint::after_commit, MessageType::transfer_requested));
  const RunResult result = run(scenario);
  REQUIRE(result.dedupe_hits.at(ServiceId::account) == 1);
  REQUIRE(result.stats.redeliveries >= 1);
  REQUIRE(result.violations.empty());
}

TEST_CASE("a Redis SET of seen ids: marked before the commit loses the work", "[runner]") {
  Scenario scenario = one_transfer();
  scenario.config.account_inbox = AccountInbox::external_before;
  add_fault(scenario,
            crash(ServiceId::account, CrashPoint::after_mark, MessageType::transfer_requested));
  const RunResult result = run(scenario);
  REQUIRE(result.transfers.at("t1") == SagaState::requested);
  REQUIRE(result.ledger.empty());
  REQUIRE(violated(result) == std::vector<Invariant>{Invariant::termination});
}

TEST_CASE("a Redis SET of seen ids: marked after the commit does the work twice", "[runner]") {
  Scenario scenario = one_transfer();
  scenario.config.account_inbox = AccountInbox::external_after;
  scenario.config.account_ledger_unique = false;
  add_fault(scenario,
            crash(ServiceId::account, CrashPoint::after_commit, MessageType::transfer_requested));
  const RunResult result = run(scenario);
  REQUIRE(result.balances.at("alice") == 5000);
  const auto broken = violated(result);
  REQUIRE(std::find(broken.begin(), broken.end(), Invariant::conservation) != broken.end());
  REQUIRE(std::find(broken.begin(), broken.end(), Invariant::single_effect) != broken.end());
}

TEST_CASE("a duplicate published by hand moves the balance once", "[runner]") {
  Scenario scenario = one_transfer();
  add_fault(scenario, on_message(FaultKind::duplicate, MessageType::transfer_requested));
  const RunResult result = run(scenario);
  REQUIRE(result.stats.published == 5);
  REQUIRE(result.published_ids.at(MessageType::transfer_requested) == 1);
  REQUIRE(result.dedupe_hits.at(ServiceId::account) == 1);
  REQUIRE(result.balances.at("alice") == 7500);
  REQUIRE(result.violations.empty());
}

TEST_CASE("transfer-service nacks a failing message until the quorum queue dead-letters it",
          "[runner]") {
  Scenario scenario = one_transfer();
  FaultSpec nack = on_message(FaultKind::nack, MessageType::account_debited);
  nack.times = 1000;
  add_fault(scenario, nack);
  // With the default, no dead-letter exchange: the same 21 deliveries, and then it is gone.
  const RunResult dropped = run(scenario);
  REQUIRE(dropped.stats.dropped == 1);
  REQUIRE(dropped.stats.dead_lettered == 0);
  REQUIRE(dropped.dead_letter_queues.count("transfer-service.dlq") == 0);
  REQUIRE(dropped.transfers.at("t1") == SagaState::requested);
  REQUIRE(violated(dropped) == std::vector<Invariant>{Invariant::termination});
  // A queue given a dead-letter exchange keeps it for an operator.
  scenario.config.broker_dead_letter = DeadLetter::dlx;
  const RunResult result = run(scenario);
  REQUIRE(result.stats.dead_lettered == 1);
  // Returned more times than broker.delivery_limit (20): 21 deliveries of Account.Debited.
  int64_t debited_deliveries = 0;
  for (const TraceEvent& event : result.events) {
    if (event.kind == EventKind::deliver && event.type == "Account.Debited") ++debited_deliveries;
  }
  REQUIRE(debited_deliveries == 21);
  REQUIRE(result.dead_letter_queues.at("transfer-service.dlq") == 1);
  REQUIRE(result.transfers.at("t1") == SagaState::requested);
  REQUIRE(violated(result) == std::vector<Invariant>{Invariant::termination});
  REQUIRE(result.violations[0].detail.find("stuck behind transfer-service.dlq") !=
          std::string::npos);
}

// Cleanup deletes inbox rows *delivered* longer ago than the window. A row consumed but never
// delivered (its outbox send failed, the message went to the error queue) must outlive the
// window, or its replay would run the consumer again.
TEST_CASE("inbox cleanup keeps a row consumed but not delivered, whatever its age", "[runner]") {
  Scenario scenario = one_transfer();
  // Before 8.5.3 a nacked outbox send faults the pass at once (later releases retry it).
  scenario.config.account_masstransit = MassTransitVersion::v8_3;
  add_fault(scenario, on_message(FaultKind::publish_nack, MessageType::account_debited));
  Step settle;
  settle.kind = StepKind::run;
  scenario.steps.push_back(settle);
  Step advance;
  advance.kind = StepKind::advance;
  advance.ms = 3 * scenario.config.account_inbox_window_ms;
  scenario.steps.push_back(advance);
  Step redrive;
  redrive.kind = StepKind::redrive;
  redrive.queue = "account-service_error";
  scenario.steps.push_back(redrive);
  const RunResult result = run(scenario);
  REQUIRE(result.violations.empty());
  REQUIRE(result.transfers.at("t1") == SagaState::completed);
  REQUIRE(result.balances.at("alice") == 10000 - 2500);
  // The replay found the row "consumed, not delivered": one debit, the stored event re-sent.
  REQUIRE(result.dedupe_hits.at(ServiceId::account) == 1);
  int64_t debits = 0;
  for (const LedgerEntry& entry : result.ledger) debits += entry.type == EntryType::debit ? 1 : 0;
  REQUIRE(debits == 1);
}

TEST_CASE("account-service retries in process, then moves the message to its error queue",
          "[runner]") {
  Scenario scenario = one_transfer();
  scenario.config.account_retry.kind = RetryPolicy::Kind::intervals;
  scenario.config.account_retry.intervals_ms = {100, 300};
  FaultSpec nack = on_message(FaultKind::nack, MessageType::transfer_requested);
  nack.times = 1000;
  add_fault(scenario, nack);
  const RunResult result = run(scenario);
  // Three attempts on one delivery (the broker never redelivers it), then _error and an ack.
  REQUIRE(result.stats.deliveries == 1);
  REQUIRE(result.stats.redeliveries == 0);
  std::vector<int64_t> fault_times;
  for (const TraceEvent& event : result.events) {
    if (event.kind == EventKind::consumer_fault) fault_times.push_back(event.time_ms);
  }
  REQUIRE(fault_times.size() == 3);
  REQUIRE(fault_times[1] - fault_times[0] == 100);
  REQUIRE(fault_times[2] - fault_times[1] == 300);
  REQUIRE(result.stats.error_queued == 1);
  REQUIRE(result.stats.dead_lettered == 0);
  REQUIRE(result.dead_letter_queues.at("account-service_error") == 1);
  REQUIRE(result.parked ==
          std::vector<std::string>{"account-service_error: Transfer.Requested t1 (m-1)"});
  REQUIRE(result.transfers.at("t1") == SagaState::requested);
  REQUIRE(violated(result) == std::vector<Invariant>{Invariant::termination});
}

TEST_CASE("a lost ack resets the connection and the message comes back", "[runner]") {
  Scenario scenario = one_transfer();
  add_fault(scenario, on_message(FaultKind::drop_ack, MessageType::transfer_requested));
  const RunResult result = run(scenario);
  REQUIRE(count_events(result, EventKind::ack_lost) == 1);
  REQUIRE(result.stats.redeliveries == 1);
  REQUIRE(result.dedupe_hits.at(ServiceId::account) == 1);
  REQUIRE(result.violations.empty());
}

TEST_CASE("a lost publisher confirm republishes with the same id", "[runner]") {
  Scenario scenario = one_transfer();
  add_fault(scenario, on_message(FaultKind::lose_confirm, MessageType::transfer_requested));
  const RunResult result = run(scenario);
  REQUIRE(result.published_ids.at(MessageType::transfer_requested) == 1);
  REQUIRE(result.stats.published == 5);
  REQUIRE(result.dedupe_hits.at(ServiceId::account) == 1);
  REQUIRE(result.violations.empty());
}

TEST_CASE("the same seed gives a byte-identical trace, another seed another interleaving",
          "[runner][determinism]") {
  Scenario scenario = one_transfer();
  add_fault(scenario,
            crash(ServiceId::account, CrashPoint::after_commit, MessageType::transfer_requested));
  const RunResult a = run(scenario, 7);
  const RunResult b = run(scenario, 7);
  REQUIRE(a.trace_hash == b.trace_hash);
  REQUIRE(a.events.size() == b.events.size());
  const RunResult c = run(scenario, 8);
  REQUIRE(c.trace_hash != a.trace_hash);
  // The outcome does not depend on the interleaving.
  REQUIRE(c.balances == a.balances);
  REQUIRE(c.transfers == a.transfers);
}

TEST_CASE("every scenario in the library runs twice to the same trace_hash",
          "[runner][determinism]") {
  const std::filesystem::path folder = std::filesystem::path(INBOXSIM_SOURCE_DIR) / "scenarios";
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  REQUIRE_FALSE(files.empty());
  for (const auto& file : files) {
    DYNAMIC_SECTION(file.filename().string()) {
      const ParseResult parsed = parse_scenario_file(file.string());
      REQUIRE(parsed.scenario.has_value());
      RunOptions options;
      const RunResult first = run_scenario(*parsed.scenario, options);
      const RunResult second = run_scenario(*parsed.scenario, options);
      REQUIRE(first.trace_hash == second.trace_hash);
      REQUIRE(first.passed == second.passed);
      REQUIRE(first.passed);
    }
  }
}

TEST_CASE("the HTML report shows each message's envelope on hover", "[runner][report]") {
  const RunResult result = run(one_transfer());
  REQUIRE(result.envelopes.size() == 4);
  const std::string& requested = result.envelopes.begin()->second;
  REQUIRE(requested.find("\"type\":\"Transfer.Requested\"") != std::string::npos);
  REQUIRE(requested.find("\"payload\":{\"from\":\"alice\",\"to\":\"bob\",\"amount\":2500}") !=
          std::string::npos);
  const std::string page = render_html(result);
  REQUIRE(page.find("envelope (message body):\n{\n  &quot;messageId&quot;: &quot;m-1&quot;") !=
          std::string::npos);
}

TEST_CASE("the trace shows each dedupe record, committed with the effect it guards", "[runner]") {
  const RunResult result = run(one_transfer());
  std::vector<DedupeRecord> account_records;
  int64_t processed_records = 0;
  for (size_t i = 0; i < result.events.size(); ++i) {
    const TraceEvent& event = result.events[i];
    if (event.kind != EventKind::dedupe_record) continue;
    if (event.service == "account-service") account_records.push_back(event.record);
    if (event.record == DedupeRecord::processed_with_saga ||
        event.record == DedupeRecord::processed_with_notification ||
        event.record == DedupeRecord::processed_alone) {
      ++processed_records;
    }
    if (event.record == DedupeRecord::inbox_consumed) {
      // The same commit: the effect is the event just before, at the same instant.
      REQUIRE(i > 0);
      REQUIRE(result.events[i - 1].kind == EventKind::effect);
      REQUIRE(result.events[i - 1].time_ms == event.time_ms);
      REQUIRE(result.events[i - 1].message_id.empty() == false);
    }
  }
  // MassTransit's four inbox transactions that write a record, for each of the two commands:
  // insert, consumed, the send pass (one outbox message per pass), delivered in a pass of its own.
  const std::vector<DedupeRecord> one_command = {
      DedupeRecord::inbox_row_inserted, DedupeRecord::inbox_consumed,
      DedupeRecord::inbox_outbox_sent, DedupeRecord::inbox_delivered};
  std::vector<DedupeRecord> both_commands = one_command;
  both_commands.insert(both_commands.end(), one_command.begin(), one_command.end());
  REQUIRE(account_records == both_commands);
  REQUIRE(processed_records == 2);  // Account.Debited and Account.Credited
}

TEST_CASE("the external seen-set is marked outside any transaction, before or after", "[runner]") {
  for (const AccountInbox mode : {AccountInbox::external_before, AccountInbox::external_after}) {
    Scenario scenario = one_transfer();
    scenario.config.account_inbox = mode;
    const RunResult result = run(scenario);
    REQUIRE(result.violations.empty());
    // The seen-set is asked first (a record of its own, since check and mark are two calls:
    // scenario 36), then marked.
    const auto check = std::find_if(result.events.begin(), result.events.end(), [](auto& e) {
      return e.kind == EventKind::dedupe_record && e.type == "Transfer.Requested";
    });
    REQUIRE(check != result.events.end());
    REQUIRE(check->record == DedupeRecord::seen_checked);
    REQUIRE(check->message_id == "m-1");
    const auto mark = std::find_if(check + 1, result.events.end(), [](auto& e) {
      return e.kind == EventKind::dedupe_record && e.type == "Transfer.Requested";
    });
    const auto debit = std::find_if(result.events.begin(), result.events.end(),
                                    [](auto& e) { return e.kind == EventKind::effect; });
    REQUIRE(mark != result.events.end());
    REQUIRE(debit != result.events.end());
    REQUIRE(check < debit);
    REQUIRE((mark < debit) == (mode == AccountInbox::external_before));
    REQUIRE(mark->record == DedupeRecord::seen_marked);
  }
}
