// The behaviours read against the real systems' source (docs/model.md, "Fidelity").
// MassTransit's send transport retries an outbox publish (a closed channel in every version, a
// broker nack since 8.5.3) until MessageDeliveryTimeout, then nacks with requeue; a MassTransit
// consumer whose channel closes is cancelled; the consumer outbox sends one message per pass and
// sets delivered in a pass of its own; since 8.3 the outbox's foreign key to the inbox stalls the
// cleanup; the cleanup's period and the Marten/Wolverine inbox's window.
#include <SQLiteCpp/SQLiteCpp.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "domain/config.h"
#include "scenario/runner.h"
#include "support/scenarios.h"

using namespace inboxsim;
using inboxsim::testing::hits_of;
using inboxsim::testing::library_scenario;
using inboxsim::testing::parse_ok;
using inboxsim::testing::TemporaryDirectory;

namespace {

RunResult run(const std::string& text) {
  RunOptions options;
  return run_scenario(parse_ok(text), options);
}

int64_t count_of(const std::map<std::string, int64_t>& counts, const std::string& key) {
  const auto found = counts.find(key);
  return found == counts.end() ? 0 : found->second;
}

template <typename Map, typename Key>
int64_t at_or_zero(const Map& map, const Key& key) {
  const auto found = map.find(key);
  return found == map.end() ? 0 : found->second;
}

// One transfer whose Account.Debited meets `faults` (JSON fault steps, comma-separated).
std::string outbox_story(const std::string& version, const std::string& faults,
                         const std::string& extra_config = "") {
  return R"({"name": "t", "seed": 1,
    "config": {"account.masstransit": ")" +
         version + "\"" + extra_config + R"(},
    "accounts": {"alice": 10000, "bob": 0},
    "steps": [)" +
         faults + R"(,
      {"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}},
      {"run": {"until": "quiescent"}}]})";
}

const std::string kLoseConfirm =
    R"({"fault": {"kind": "lose_confirm", "match": {"type": "Account.Debited", "transfer": "t1"}}})";
const std::string kPublishNack =
    R"({"fault": {"kind": "publish_nack", "match": {"type": "Account.Debited", "transfer": "t1"}}})";

std::vector<int64_t> times_of(const RunResult& result, EventKind kind, std::string_view type) {
  std::vector<int64_t> out;
  for (const TraceEvent& event : result.events) {
    if (event.kind == kind && event.type == type) out.push_back(event.time_ms);
  }
  return out;
}

}  // namespace

TEST_CASE("account.masstransit takes 8.5, 8.3 and 8.2, 8.5 by default", "[fidelity][config]") {
  Config config;
  CHECK(config.account_masstransit == MassTransitVersion::v8_5);
  CHECK(config_set_text(config, "account.masstransit", "8.2").empty());
  CHECK(config.account_masstransit == MassTransitVersion::v8_2);
  CHECK(config_set_text(config, "account.masstransit", "8.4") == "a string, one of 8.5, 8.3, 8.2");
  CHECK(config_to_json(Config{})["account.masstransit"] == "8.5");
}

TEST_CASE("a confirm lost with its channel is published again, same id, in every version",
          "[fidelity][masstransit]") {
  for (const std::string version : {"8.5", "8.3", "8.2"}) {
    CAPTURE(version);
    const RunResult result = run(outbox_story(version, kLoseConfirm));
    CHECK(result.transfers.at("t1") == SagaState::completed);
    CHECK(result.sends.at(MessageType::account_debited) == 2);
    CHECK(result.published_ids.at(MessageType::account_debited) == 1);
    CHECK(count_of(result.dead_letter_queues, "account-service_error") == 0);
    CHECK(at_or_zero(result.dedupe_hits, ServiceId::transfer) == 1);
    CHECK(result.violations.empty());
    // The second publish comes after the 1 s breather and the first 6 s interval.
    const std::vector<int64_t> publishes = times_of(result, EventKind::publish, "Account.Debited");
    REQUIRE(publishes.size() == 2);
    CHECK(publishes[1] - publishes[0] == 7000);
  }
}

TEST_CASE("a broker nack is retried from 8.5.3 and faults the pass before it",
          "[fidelity][masstransit]") {
  const RunResult current = run(outbox_story("8.5", kPublishNack));
  CHECK(current.transfers.at("t1") == SagaState::completed);
  CHECK(current.sends.at(MessageType::account_debited) == 2);
  CHECK(count_of(current.dead_letter_queues, "account-service_error") == 0);
  for (const std::string version : {"8.3", "8.2"}) {
    CAPTURE(version);
    const RunResult older = run(outbox_story(version, kPublishNack));
    CHECK(older.transfers.at("t1") == SagaState::requested);
    CHECK(older.sends.at(MessageType::account_debited) == 1);
    CHECK(count_of(older.dead_letter_queues, "account-service_error") == 1);
  }
}

TEST_CASE("past MessageDeliveryTimeout the send is cancelled and the delivery nacked with requeue",
          "[fidelity][masstransit]") {
  const std::string three = kPublishNack + "," + kPublishNack + "," + kPublishNack;
  SECTION("no retry: nacked at 30 s, redelivered, and the redelivery sends") {
    const RunResult result = run(outbox_story("8.5", three));
    CHECK(result.transfers.at("t1") == SagaState::completed);
    CHECK(result.sends.at(MessageType::account_debited) == 4);
    CHECK(count_of(result.dead_letter_queues, "account-service_error") == 0);
    CHECK(result.stats.redeliveries == 1);
    const std::vector<int64_t> nacks = times_of(result, EventKind::nack, "Transfer.Requested");
    const std::vector<int64_t> refused =
        times_of(result, EventKind::publish_nacked, "Account.Debited");
    REQUIRE(nacks.size() == 1);
    REQUIRE(refused.size() == 3);
    CHECK(refused[1] - refused[0] == 7000);
    CHECK(refused[2] - refused[1] == 10000);
    CHECK(nacks[0] - refused[0] == 30000);
    CHECK(result.violations.empty());
  }
  SECTION("with a retry policy the cancellation is retried first, with a fresh timeout") {
    const std::string six = three + "," + three;
    const RunResult result = run(outbox_story("8.5", six, R"(, "account.retry": "immediate:1")"));
    CHECK(result.transfers.at("t1") == SagaState::completed);
    // Two attempts of three publishes each, then the redelivery's one.
    CHECK(result.sends.at(MessageType::account_debited) == 7);
    CHECK(count_of(result.dead_letter_queues, "account-service_error") == 0);
    CHECK(result.stats.redeliveries == 1);
  }
}

TEST_CASE("a MassTransit consumer whose channel closes is cancelled: no retry, no _error",
          "[fidelity][masstransit][zombie]") {
  const std::string story = R"({"name": "t", "seed": 1,
    "config": {"account.instances": 2, "account.retry": "intervals:1000,1000"},
    "accounts": {"alice": 10000, "bob": 0},
    "steps": [
      {"fault": {"kind": "nack", "service": "account-service", "instance": 1, "times": 3,
                 "match": {"type": "Transfer.Requested", "transfer": "t1"}}},
      {"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}},
      {"run": {"ms": 100}},
      {"fault": {"kind": "drop_connection", "service": "account-service", "instance": 1}},
      {"run": {"until": "quiescent"}}]})";
  const RunResult result = run(story);
  CHECK(result.transfers.at("t1") == SagaState::completed);
  CHECK(count_of(result.dead_letter_queues, "account-service_error") == 0);
  CHECK(result.parked.empty());
  // #1 made one attempt only: its retries were cancelled with the channel.
  const auto retries =
      std::count_if(result.events.begin(), result.events.end(),
                    [](const TraceEvent& e) { return e.kind == EventKind::retry; });
  CHECK(retries == 1);
  CHECK(result.violations.empty());
}

namespace {

// Scenario 32's story: #2's locking select waits while #1 sends Account.Debited, then #1 commits.
std::string lock_wait_story(const std::string& config) {
  return R"({"name": "t", "seed": 1,
    "config": {"account.instances": 2)" +
         config + R"(},
    "accounts": {"alice": 10000, "bob": 0},
    "steps": [
      {"fault": {"kind": "duplicate", "match": {"type": "Transfer.Requested", "transfer": "t1"}}},
      {"fault": {"kind": "delay", "ms": 20,
                 "match": {"type": "Transfer.Requested", "transfer": "t1", "occurrence": 2}}},
      {"fault": {"kind": "pause", "service": "account-service", "instance": 1,
                 "at": "after_outbox_send", "ms": 100,
                 "match": {"type": "Transfer.Requested", "transfer": "t1"}}},
      {"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}},
      {"run": {"until": "quiescent"}}]})";
}

bool has_serialization_failure(const RunResult& result) {
  return std::any_of(result.events.begin(), result.events.end(), [](const TraceEvent& e) {
    return e.kind == EventKind::consumer_fault && e.cause == FaultCause::serialization;
  });
}

}  // namespace

TEST_CASE("account.database and account.isolation default to postgres and repeatable_read",
          "[fidelity][config]") {
  Config config;
  CHECK(config.account_database == AccountDatabase::postgres);
  CHECK(config.account_isolation == Isolation::repeatable_read);
  CHECK(config_set_text(config, "account.database", "sqlserver").empty());
  CHECK(config_set_text(config, "account.isolation", "read_committed").empty());
  CHECK(config_set_text(config, "account.database", "mysql") ==
        "a string, one of postgres, sqlserver");
  CHECK(config_set_text(config, "account.isolation", "serializable") ==
        "a string, one of repeatable_read, read_committed");
}

TEST_CASE("on Postgres at Repeatable Read a lock waiter whose row was updated fails with 40001",
          "[fidelity][postgres]") {
  const RunResult result = run(lock_wait_story(""));
  CHECK(has_serialization_failure(result));
  CHECK(count_of(result.dead_letter_queues, "account-service_error") == 1);
  CHECK(at_or_zero(result.dedupe_hits, ServiceId::account) == 0);
  CHECK(result.sends.at(MessageType::account_debited) == 1);
  CHECK(result.transfers.at("t1") == SagaState::completed);
  CHECK(result.violations.empty());
}

TEST_CASE("with a retry the 40001 copy is acked by the retry's lookup", "[fidelity][postgres]") {
  const RunResult result = run(lock_wait_story(R"(, "account.retry": "immediate:1")"));
  CHECK(has_serialization_failure(result));
  CHECK(count_of(result.dead_letter_queues, "account-service_error") == 0);
  CHECK(at_or_zero(result.dedupe_hits, ServiceId::account) == 1);
  CHECK(result.violations.empty());
}

TEST_CASE("SQL Server, or Read Committed, lets the waiter read the new row",
          "[fidelity][postgres]") {
  for (const std::string config :
       {R"(, "account.database": "sqlserver")", R"(, "account.isolation": "read_committed")"}) {
    CAPTURE(config);
    const RunResult result = run(lock_wait_story(config));
    CHECK_FALSE(has_serialization_failure(result));
    CHECK(count_of(result.dead_letter_queues, "account-service_error") == 0);
    CHECK(at_or_zero(result.dedupe_hits, ServiceId::account) == 1);
    CHECK(result.sends.at(MessageType::account_debited) == 1);
    CHECK(result.violations.empty());
  }
}

// ---- The consumer outbox's passes, its foreign key, the cleanup's constants ------------------

namespace {

int64_t count_rows(const std::filesystem::path& file, const std::string& sql) {
  SQLite::Database db(file.string(), SQLite::OPEN_READONLY);
  return db.execAndGet(sql).getInt64();
}

// Runs `text` with its databases kept in `dir` (the scenario is named "t").
RunResult run_kept(const std::string& text, const TemporaryDirectory& dir) {
  RunOptions options;
  options.db_dir = dir.path.string();
  return run_scenario(parse_ok(text), options);
}

// Whether a retention pass deleted account-service's dedupe records.
bool dedupe_records_cleaned(const RunResult& result) {
  return std::any_of(result.events.begin(), result.events.end(), [&](const TraceEvent& e) {
    return e.kind == EventKind::cleanup && e.service == "account-service" &&
           e.cleaned == CleanupOf::dedupe_records && e.rows_deleted > 0;
  });
}

// The messages whose inbox rows stalled MassTransit's cleanup (their outbox rows hold the
// batch): cleanup events that deleted nothing and name the message.
std::vector<std::string> cleanup_stalled_on(const RunResult& result) {
  std::vector<std::string> ids;
  for (const TraceEvent& e : result.events) {
    if (e.kind == EventKind::cleanup && e.cleaned == CleanupOf::dedupe_records &&
        e.rows_deleted == 0 && !e.message_id.empty()) {
      ids.push_back(e.message_id);
    }
  }
  return ids;
}

// The id of the first message of `type` about `transfer` the run published.
std::string first_id(const RunResult& result, std::string_view type, const std::string& transfer) {
  for (const TraceEvent& e : result.events) {
    if (e.kind == EventKind::publish && e.type == type && e.transfer == transfer) {
      return e.message_id;
    }
  }
  return "";
}

}  // namespace

TEST_CASE("one outbox message per pass: a first delivery ends with receive_count 4",
          "[fidelity][masstransit]") {
  const TemporaryDirectory dir("inboxsim-fidelity-passes");
  const RunResult result = run_kept(R"({"name": "t", "seed": 1,
    "accounts": {"alice": 10000, "bob": 0},
    "steps": [{"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}},
              {"run": {"until": "quiescent"}}]})",
                                    dir);
  REQUIRE(result.transfers.at("t1") == SagaState::completed);
  const auto file = dir.path / "t.account-service.sqlite";
  // Transfer.Requested and Transfer.CreditRequested: insert (0), consume (1), send (2),
  // delivered (3), remove (4).
  CHECK(count_rows(file, "SELECT COUNT(*) FROM inbox_state") == 2);
  CHECK(count_rows(file, "SELECT COUNT(*) FROM inbox_state WHERE receive_count = 4") == 2);
  CHECK(count_rows(file, "SELECT COUNT(*) FROM inbox_state WHERE last_sequence_number IS NULL") ==
        0);
  CHECK(count_rows(file, "SELECT COUNT(*) FROM outbox") == 0);
  CHECK(result.violations.empty());
}

TEST_CASE("a copy that gets the row between the send pass and the delivered pass sends nothing",
          "[fidelity][masstransit]") {
  // Scenario 32: #2 waits on the row while #1's send pass holds it; SQL Server hands #2 the row
  // as #1's send pass committed it: sent, not yet delivered.
  const RunResult result = run_scenario(library_scenario("32-masstransit-row-lock.json"), {});
  CHECK(result.sends.at(MessageType::account_debited) == 1);
  // The copy's hit is the resend step (consumed, not delivered), and it sent nothing: one send.
  CHECK(hits_of(result, DedupeStep::inbox_resend, "m-1") == 1);
  CHECK(at_or_zero(result.dedupe_hits, ServiceId::account) == 1);
  CHECK(result.violations.empty());
}

namespace {

// Scenario 61 or 62 up to the moment past the window, before the replay: t1's inbox row is
// delivered and its outbox row was never removed; t2's rows were delivered after it.
Scenario before_replay(const std::string& file) {
  Scenario scenario = library_scenario(file);
  const auto replay = std::find_if(scenario.steps.begin(), scenario.steps.end(),
                                   [](const Step& step) { return step.kind == StepKind::redrive; });
  REQUIRE(replay != scenario.steps.end());
  scenario.steps.erase(replay, scenario.steps.end());
  return scenario;
}

// Runs `scenario` with its databases kept in `dir`.
RunResult run_in(const Scenario& scenario, const TemporaryDirectory& dir) {
  RunOptions options;
  options.db_dir = dir.path.string();
  return run_scenario(scenario, options);
}

int64_t rows_in(const TemporaryDirectory& dir, const Scenario& scenario, const std::string& table) {
  return count_rows(dir.path / (scenario.name + ".account-service.sqlite"),
                    "SELECT COUNT(*) FROM " + table);
}

}  // namespace

TEST_CASE("since 8.3 the outbox's foreign key stalls the inbox cleanup behind an orphan",
          "[fidelity][masstransit][retention]") {
  const std::string file = "61-outbox-key-stalls-cleanup.json";
  const TemporaryDirectory dir("inboxsim-fidelity-outbox-key");
  const Scenario scenario = before_replay(file);
  const RunResult stalled = run_in(scenario, dir);
  // Every attempt stalls on t1's request, whose outbox row pass 5 never removed.
  const std::vector<std::string> stalls = cleanup_stalled_on(stalled);
  REQUIRE_FALSE(stalls.empty());
  for (const std::string& id : stalls) {
    CHECK(id == first_id(stalled, "Transfer.Requested", "t1"));
  }
  CHECK_FALSE(dedupe_records_cleaned(stalled));
  // Nothing of the batch went: t1's row and the three delivered after it.
  CHECK(rows_in(dir, scenario, "inbox_state") == 4);
  CHECK(rows_in(dir, scenario, "outbox") == 1);
  CHECK(stalled.violations.empty());
  // The replay finds the row delivered: a dedupe hit, and the next cleanup deletes them all.
  const RunResult replayed = run_scenario(library_scenario(file), {});
  CHECK(at_or_zero(replayed.dedupe_hits, ServiceId::account) == 1);
  CHECK(dedupe_records_cleaned(replayed));
  CHECK(replayed.violations.empty());
}

TEST_CASE("8.2 has no outbox key: the cleanup deletes the row and the replay is consumed again",
          "[fidelity][masstransit][retention]") {
  const std::string file = "62-no-outbox-key-before-8-3.json";
  const TemporaryDirectory dir("inboxsim-fidelity-no-outbox-key");
  const Scenario scenario = before_replay(file);
  const RunResult deleted = run_in(scenario, dir);
  CHECK(cleanup_stalled_on(deleted).empty());
  CHECK(dedupe_records_cleaned(deleted));
  CHECK(rows_in(dir, scenario, "inbox_state") == 0);
  CHECK(rows_in(dir, scenario, "outbox") == 1);
  const RunResult replayed = run_scenario(library_scenario(file), {});
  CHECK(at_or_zero(replayed.dedupe_hits, ServiceId::account) == 0);
  CHECK(count_of(replayed.dead_letter_queues, "account-service_error") == 2);
  CHECK(replayed.violations.empty());
}

TEST_CASE("MassTransit's inbox cleanup runs every 10 s (QueryDelay)", "[fidelity][retention]") {
  // Delivered at about 50 ms, a 60 s window: the 70 s tick deletes it; a 60 s period would
  // keep it until 120 s.
  const TemporaryDirectory dir("inboxsim-fidelity-query-delay");
  const RunResult result = run_kept(R"({"name": "t", "seed": 1,
    "config": {"account.inbox_window_ms": 60000},
    "accounts": {"alice": 10000, "bob": 0},
    "steps": [{"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}},
              {"run": {"until": "quiescent"}},
              {"advance": {"ms": 75000}}]})",
                                    dir);
  CHECK(count_rows(dir.path / "t.account-service.sqlite", "SELECT COUNT(*) FROM inbox_state") == 0);
  CHECK(dedupe_records_cleaned(result));
}

TEST_CASE("the Marten/Wolverine inbox keeps a handled message 5 minutes", "[fidelity][marten]") {
  CHECK(Config{}.account_keep_after_handling_ms == 300'000);
  CHECK(config_to_json(Config{})["account.keep_after_handling_ms"] == 300'000);
  Config config;
  CHECK(config_set_text(config, "account.keep_after_handling_ms", "-1") ==
        "an integer from 0 to 3153600000000");
  // Six minutes later the copy is new to the inbox; the ledger key stops it (scenario 63).
  const RunResult late = run_scenario(library_scenario("63-marten-keeps-five-minutes.json"), {});
  CHECK(at_or_zero(late.dedupe_hits, ServiceId::account) == 0);
  CHECK(count_of(late.dead_letter_queues, "account-service_error") == 1);
  CHECK(dedupe_records_cleaned(late));
  // Four minutes later the document is still there.
  Scenario early = library_scenario("63-marten-keeps-five-minutes.json");
  for (Step& step : early.steps) {
    if (step.kind == StepKind::advance) step.ms = 240'000;
  }
  const RunResult kept = run_scenario(early, {});
  CHECK(at_or_zero(kept.dedupe_hits, ServiceId::account) == 1);
  CHECK(count_of(kept.dead_letter_queues, "account-service_error") == 0);
}

// ---- Marten's event append -------------------------------------------------

namespace {

// Two instances debit alice for t1 and t2 at once: #1 reads alice's stream and pauses 50 ms
// before its write; #2 commits t2's DEBIT meanwhile (scenario 64).
std::string marten_race_story(const std::string& extra_config) {
  return R"({"name": "t", "seed": 1,
    "config": {"account.inbox": "marten", "account.instances": 2)" +
         extra_config + R"(},
    "accounts": {"alice": 10000, "bob": 0, "carol": 0},
    "steps": [
      {"fault": {"kind": "delay", "ms": 10, "match": {"type": "Transfer.Requested", "transfer": "t2"}}},
      {"fault": {"kind": "pause", "service": "account-service", "instance": 1,
                 "at": "after_precheck", "ms": 50,
                 "match": {"type": "Transfer.Requested", "transfer": "t1"}}},
      {"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}},
      {"transfer": {"id": "t2", "from": "alice", "to": "carol", "amount": 1000}},
      {"run": {"until": "quiescent"}}]})";
}

int64_t stream_conflicts(const RunResult& result) {
  return std::count_if(result.events.begin(), result.events.end(), [](const TraceEvent& e) {
    return e.kind == EventKind::consumer_fault && e.cause == FaultCause::stream_conflict;
  });
}

bool violated(const RunResult& result, Invariant invariant) {
  return std::any_of(result.violations.begin(), result.violations.end(),
                     [&](const Violation& v) { return v.invariant == invariant; });
}

}  // namespace

TEST_CASE("account.marten_append takes quick and rich, quick (Marten 9's) by default",
          "[fidelity][config]") {
  Config config;
  CHECK(config.account_marten_append == MartenAppend::quick);
  CHECK(config_to_json(config).at("account.marten_append") == "quick");
  CHECK(config_set_text(config, "account.marten_append", "rich").empty());
  CHECK(config.account_marten_append == MartenAppend::rich);
  CHECK(config_set_text(config, "account.marten_append", "fast") == "a string, one of rich, quick");
}

TEST_CASE("Marten's rich append fails the second of two concurrent appends to one stream",
          "[fidelity][marten]") {
  SECTION("Wolverine's default attempts run it again, and it appends at the next version") {
    const RunResult result = run(marten_race_story(R"(, "account.marten_append": "rich")"));
    CHECK(stream_conflicts(result) == 1);
    CHECK(std::any_of(result.events.begin(), result.events.end(), [](const TraceEvent& e) {
      return e.kind == EventKind::retry && e.detail.find("Wolverine") != std::string::npos;
    }));
    CHECK(count_of(result.dead_letter_queues, "account-service_error") == 0);
    CHECK(result.transfers.at("t1") == SagaState::completed);
    CHECK(result.transfers.at("t2") == SagaState::completed);
    CHECK(result.balances.at("alice") == 6500);
    CHECK(result.violations.empty());
  }
  SECTION("quick append (the default) gives the event its version inside the write: no conflict") {
    const RunResult result = run(marten_race_story(""));
    CHECK(stream_conflicts(result) == 0);
    CHECK(result.transfers.at("t1") == SagaState::completed);
    CHECK(result.balances.at("alice") == 6500);
    CHECK(result.violations.empty());
  }
}

TEST_CASE("a consumer that acks every unique violation acks the rich append's conflict",
          "[fidelity][marten]") {
  const RunResult result = run(marten_race_story(
      R"(, "account.marten_append": "rich", "account.ledger_conflict": "ack")"));
  CHECK(stream_conflicts(result) == 0);
  CHECK(at_or_zero(result.dedupe_hits, ServiceId::account) == 1);
  // Acked, yet never applied: no DEBIT for t1, no reply, and the saga waits for good.
  CHECK(std::none_of(result.ledger.begin(), result.ledger.end(),
                     [](const LedgerEntry& e) { return e.transfer == "t1"; }));
  CHECK(result.transfers.at("t1") == SagaState::requested);
  CHECK(result.balances.at("alice") == 9000);
  CHECK(violated(result, Invariant::termination));
}

// ---- an effect outside the transaction ------------------------------------

namespace {

// Notifications on, keyed per consumer; Account.Credited for t1 delivered twice; `faults`
// (JSON fault steps with a trailing comma, or nothing) armed first.
std::string email_story(const std::string& email, const std::string& faults = "") {
  return R"({"name": "t", "seed": 1,
    "config": {"transfer.notifications": true, "transfer.dedupe_key": "message_id+consumer",
               "transfer.email": ")" +
         email + R"("},
    "accounts": {"alice": 10000, "bob": 0},
    "steps": [)" +
         faults + R"(
      {"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}},
      {"run": {"until": "quiescent"}},
      {"fault": {"kind": "duplicate", "match": {"type": "Account.Credited", "transfer": "t1"}}},
      {"run": {"until": "quiescent"}}]})";
}

int64_t emails_sent(const RunResult& result) {
  return std::count_if(result.events.begin(), result.events.end(), [](const TraceEvent& e) {
    return e.kind == EventKind::notification && e.detail.starts_with("email sent");
  });
}

}  // namespace

TEST_CASE("transfer.email takes none, before_commit and after_commit, none by default",
          "[fidelity][config]") {
  Config config;
  CHECK(config.transfer_email == EmailSend::none);
  CHECK(config_set_text(config, "transfer.email", "before_commit").empty());
  CHECK(config_set_text(config, "transfer.email", "always") ==
        "a string, one of none, before_commit, after_commit");
}

TEST_CASE("an email sent before the commit goes out again with every copy the inbox catches",
          "[fidelity][email]") {
  const RunResult result = run(email_story("before_commit"));
  CHECK(emails_sent(result) == 2);
  CHECK(at_or_zero(result.dedupe_hits, ServiceId::transfer) == 2);
  CHECK(result.invariant_applies[static_cast<size_t>(Invariant::emailed)]);
  CHECK(violated(result, Invariant::emailed));
  // The rows the transaction holds are right: one notification, one debit, one credit.
  CHECK_FALSE(violated(result, Invariant::notified));
  CHECK(result.violations.size() == 1);
}

TEST_CASE("an email after the commit is skipped by a caught copy and lost by a crash",
          "[fidelity][email]") {
  SECTION("a copy") {
    const RunResult result = run(email_story("after_commit"));
    CHECK(emails_sent(result) == 1);
    CHECK(result.violations.empty());
  }
  SECTION("a crash between the commit and the call") {
    const RunResult result = run(email_story(
        "after_commit",
        R"({"fault": {"kind": "crash", "service": "transfer-service", "at": "after_commit",
                      "match": {"type": "Account.Credited", "transfer": "t1", "occurrence": 2}}},)"));
    CHECK(emails_sent(result) == 0);
    CHECK(violated(result, Invariant::emailed));
    CHECK_FALSE(violated(result, Invariant::notified));
  }
}

TEST_CASE("without transfer.email the emailed invariant does not apply", "[fidelity][email]") {
  const RunResult result = run(email_story("none"));
  CHECK(emails_sent(result) == 0);
  CHECK_FALSE(result.invariant_applies[static_cast<size_t>(Invariant::emailed)]);
  CHECK(result.violations.empty());
}
