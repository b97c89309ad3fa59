// The crash model at the unit-of-work level: a service crashed at any crash point keeps
// exactly what it committed, and its redelivery finishes the work once.
#include <SQLiteCpp/SQLiteCpp.h>

#include <catch2/catch.hpp>

#include "domain/participants.h"
#include "services/account_service.h"
#include "services/transfer_service.h"
#include "support/fake_host.h"

using namespace inboxsim;
using inboxsim::testing::FakeHost;
using inboxsim::testing::make_service;
using inboxsim::testing::run;

namespace {

int64_t entries(AccountService& service, EntryType type) {
  int64_t count = 0;
  for (const LedgerEntry& entry : service.ledger()) count += entry.type == type ? 1 : 0;
  return count;
}

std::vector<std::string> published_ids(const FakeHost& host, MessageType type) {
  std::vector<std::string> ids;
  for (const MessagePtr& message : host.published) {
    if (message->type == type) ids.push_back(message->message_id);
  }
  return ids;
}

const MessagePtr kRequested =
    make_message("m-1", MessageType::transfer_requested, "t1", "alice", "bob", 2500, "", 0);

}  // namespace

TEST_CASE("account-service: a crash at each point keeps only what was committed",
          "[services][crash]") {
  struct Case {
    CrashPoint point;
    bool debit_committed;
    int64_t sends_before_crash;
  };
  const Case cases[] = {
      {CrashPoint::before_tx, false, 0},    {CrashPoint::after_precheck, false, 0},
      {CrashPoint::after_dedupe, false, 0}, {CrashPoint::after_effect, false, 0},
      {CrashPoint::after_commit, true, 0},  {CrashPoint::after_outbox_send, true, 1},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION("crash at " << crash_point_name(c.point)) {
      FakeHost host;
      Config config;
      AccountService service = make_service<AccountService>(host, config);
      service.open_accounts({{"alice", {10000, false}}, {"bob", {0, false}}});
      host.crash_at = c.point;
      REQUIRE_THROWS_AS(run(service.handle(kRequested)), ServiceCrash);
      // What survives the crash is exactly what was committed.
      REQUIRE(entries(service, EntryType::debit) == (c.debit_committed ? 1 : 0));
      REQUIRE(service.balances()["alice"] == (c.debit_committed ? 7500 : 10000));
      REQUIRE(static_cast<int64_t>(host.published.size()) == c.sends_before_crash);
      // The redelivery finishes the work, once.
      REQUIRE(run(service.handle(kRequested)) == Outcome::ack);
      REQUIRE(entries(service, EntryType::debit) == 1);
      REQUIRE(service.balances()["alice"] == 7500);
      const auto debited = published_ids(host, MessageType::account_debited);
      REQUIRE_FALSE(debited.empty());
      // A re-send reuses the stored message id, so the next inbox can recognise it.
      for (const std::string& id : debited) REQUIRE(id == debited.front());
      REQUIRE(host.dedupe_hits() == (c.debit_committed ? 1 : 0));
      REQUIRE(service.undelivered_outbox_rows() == 0);
      // A third copy is acked without effect and without a send.
      const size_t sends = host.published.size();
      REQUIRE(run(service.handle(kRequested)) == Outcome::ack);
      REQUIRE(host.published.size() == sends);
      REQUIRE(entries(service, EntryType::debit) == 1);
    }
  }
}

// The playground labels a handler's next step by these names (World::describe_job).
TEST_CASE("account-service: each step of a MassTransit delivery is named by its pass",
          "[services]") {
  FakeHost host;
  Config config;
  AccountService service = make_service<AccountService>(host, config);
  service.open_accounts({{"alice", {10000, false}}, {"bob", {0, false}}});
  REQUIRE(run(service.handle(kRequested)) == Outcome::ack);
  REQUIRE(host.steps.size() >= 4);
  int64_t pass = 1;
  for (const std::string& step : host.steps) {
    INFO(step);
    const std::string prefix = "MassTransit pass ";
    REQUIRE(step.rfind(prefix, 0) == 0);
    const int64_t named = std::stoll(step.substr(prefix.size()));
    // Passes only go forward, one at a time, and each step says what it does.
    REQUIRE((named == pass || named == pass + 1));
    pass = named;
    REQUIRE(step.size() > step.find(": ") + 2);
  }
  const auto has = [&](std::string_view name) {
    return std::find(host.steps.begin(), host.steps.end(), name) != host.steps.end();
  };
  // The first delivery inserts the row, consumes in a pass of its own, then sends.
  REQUIRE(has("MassTransit pass 1: insert the inbox row (consumed null), commit"));
  REQUIRE(has("MassTransit pass 2: consume (the consumer runs), commit"));
  // The step before a pass names the pass's plan for the row as the handler left it: in an
  // exploration it is one event with the pass's work (World::between_steps).
  REQUIRE(has("MassTransit pass 2: find the inbox row (SELECT ... FOR UPDATE), then consume (the "
              "consumer runs), commit"));
  REQUIRE(std::any_of(host.steps.begin(), host.steps.end(), [](const std::string& step) {
    return step.find(": send the next outbox message") != std::string::npos;
  }));
  // A copy of a delivered message goes straight to the last pass.
  host.steps.clear();
  REQUIRE(run(service.handle(kRequested)) == Outcome::ack);
  REQUIRE(host.steps.back() == "MassTransit pass 1: remove the outbox rows, commit, ack");
}

TEST_CASE("account-service: without the inbox a redelivery hits the ledger index", "[services]") {
  FakeHost host;
  Config config;
  config.account_inbox = AccountInbox::none;
  AccountService service = make_service<AccountService>(host, config);
  service.open_accounts({{"alice", {10000, false}}, {"bob", {0, false}}});
  REQUIRE(run(service.handle(kRequested)) == Outcome::ack);
  REQUIRE(host.coverage[Probe::ledger_key_rejected] == 0);
  REQUIRE_THROWS_AS(run(service.handle(kRequested)), ConsumerFault);
  REQUIRE(entries(service, EntryType::debit) == 1);
  REQUIRE(service.balances()["alice"] == 7500);
  // The fault names its cause only in prose, so the service reports the probe itself.
  REQUIRE(host.coverage[Probe::ledger_key_rejected] == 1);
}

TEST_CASE("account-service: with neither inbox nor ledger index, a duplicate debits twice",
          "[services]") {
  FakeHost host;
  Config config;
  config.account_inbox = AccountInbox::none;
  config.account_ledger_unique = false;
  AccountService service = make_service<AccountService>(host, config);
  service.open_accounts({{"alice", {10000, false}}, {"bob", {0, false}}});
  REQUIRE(run(service.handle(kRequested)) == Outcome::ack);
  REQUIRE(run(service.handle(kRequested)) == Outcome::ack);
  REQUIRE(entries(service, EntryType::debit) == 2);
  REQUIRE(service.balances()["alice"] == 5000);
}

TEST_CASE("account-service: the Marten inbox document dedupes in the event-append transaction",
          "[services]") {
  FakeHost host;
  Config config;
  config.account_inbox = AccountInbox::marten;
  AccountService service = make_service<AccountService>(host, config);
  service.open_accounts({{"alice", {10000, false}}, {"bob", {0, false}}});
  host.crash_at = CrashPoint::after_effect;
  REQUIRE_THROWS_AS(run(service.handle(kRequested)), ServiceCrash);
  REQUIRE(service.ledger().empty());
  REQUIRE(run(service.handle(kRequested)) == Outcome::ack);
  REQUIRE(run(service.handle(kRequested)) == Outcome::ack);
  REQUIRE(entries(service, EntryType::debit) == 1);
  REQUIRE(host.dedupe_hits() == 1);
  // The pre-check caught it (sequential copies never reach the backstop).
  Coverage expected;
  expected[Probe::dedupe_marten_precheck] = 1;
  REQUIRE(host.coverage == expected);
}

TEST_CASE("account-service: insufficient funds and a closed destination are rejected",
          "[services]") {
  FakeHost host;
  Config config;
  AccountService service = make_service<AccountService>(host, config);
  service.open_accounts({{"alice", {100, false}}, {"carol", {0, true}}});
  run(service.handle(kRequested));  // alice -> bob 2500 with 100
  REQUIRE(published_ids(host, MessageType::debit_rejected).size() == 1);
  REQUIRE(host.published.back()->reason == "insufficient funds");
  const auto credit =
      make_message("m-2", MessageType::credit_requested, "t2", "alice", "carol", 50, "", 0);
  run(service.handle(credit));
  REQUIRE(published_ids(host, MessageType::credit_rejected).size() == 1);
  REQUIRE(service.ledger().empty());
}

TEST_CASE("account-service: inbox rows older than the window are cleaned up", "[services]") {
  FakeHost host;
  Config config;
  config.account_inbox_window_ms = 1000;
  AccountService service = make_service<AccountService>(host, config);
  service.open_accounts({{"alice", {10000, false}}, {"bob", {0, false}}});
  run(service.handle(kRequested));
  host.now = 500;
  REQUIRE(service.cleanup_inbox(host.now).dedupe_rows == 0);
  host.now = 5000;
  REQUIRE(service.cleanup_inbox(host.now).dedupe_rows == 1);
  // After the window the duplicate is consumed again; the ledger index is what stops it.
  REQUIRE_THROWS_AS(run(service.handle(kRequested)), ConsumerFault);
  REQUIRE(entries(service, EntryType::debit) == 1);
}

TEST_CASE("transfer-service: a crash at each consumer point keeps only what was committed",
          "[services][crash]") {
  const MessagePtr debited =
      make_message("m-2", MessageType::account_debited, "t1", "alice", "bob", 2500, "", 0);
  for (const CrashPoint point : {CrashPoint::before_tx, CrashPoint::after_dedupe,
                                 CrashPoint::after_effect, CrashPoint::after_commit}) {
    DYNAMIC_SECTION("crash at " << crash_point_name(point)) {
      FakeHost host;
      Config config;
      TransferService service = make_service<TransferService>(host, config);
      service.request(TransferSpec{"t1", "alice", "bob", 2500});
      host.crash_at = point;
      REQUIRE_THROWS_AS(run(service.handle(TransferConsumer::saga, debited)), ServiceCrash);
      service.crash();
      const bool committed = point == CrashPoint::after_commit;
      REQUIRE(service.sagas()["t1"] == (committed ? SagaState::debited : SagaState::requested));
      REQUIRE(service.unsent_outbox_rows() == (committed ? 2 : 1));
      REQUIRE(run(service.handle(TransferConsumer::saga, debited)) == Outcome::ack);
      REQUIRE(service.sagas()["t1"] == SagaState::debited);
      REQUIRE(service.unsent_outbox_rows() == 2);  // one CreditRequested, never two
      REQUIRE(host.dedupe_hits() == (committed ? 1 : 0));
    }
  }
}

TEST_CASE("transfer-service: the relay republishes with the stored id after a crash",
          "[services][crash]") {
  FakeHost host;
  Config config;
  TransferService service = make_service<TransferService>(host, config);
  service.request(TransferSpec{"t1", "alice", "bob", 2500});
  host.crash_at = CrashPoint::after_publish;
  REQUIRE_THROWS_AS(service.relay_poll(), ServiceCrash);
  service.crash();
  REQUIRE(service.unsent_outbox_rows() == 1);  // published, never marked
  service.relay_poll();
  REQUIRE(host.published.size() == 2);
  REQUIRE(host.published[0]->message_id == host.published[1]->message_id);
  service.relay_confirmed(host.relay_seqs.back());
  REQUIRE(service.unsent_outbox_rows() == 0);
}

TEST_CASE("transfer-service: a claiming relay holds its row until the confirm marks it sent",
          "[services][relay]") {
  // relay.claim = skip_locked: the poll claims the row (the row lock MassTransit's delivery
  // transaction holds while it sends), and the mark that the confirm commits lets it go, so a
  // sent row does not say which relay sent it.
  FakeHost host;
  Config config;
  config.relay_claim = RelayClaim::skip_locked;
  TransferService service = make_service<TransferService>(host, config);
  service.request(TransferSpec{"t1", "alice", "bob", 2500});
  SQLite::Database& db = host.connection->database();
  const auto claimed = [&] {
    return db.execAndGet("SELECT COUNT(*) FROM outbox WHERE claimed_by IS NOT NULL").getInt();
  };
  REQUIRE(claimed() == 0);
  service.relay_poll();
  REQUIRE(host.published.size() == 1);
  REQUIRE(claimed() == 1);
  service.relay_confirmed(host.relay_seqs.back());
  REQUIRE(service.unsent_outbox_rows() == 0);
  CHECK(claimed() == 0);
}

TEST_CASE("transfer-service: an unstable relay mints a new id on every attempt", "[services]") {
  FakeHost host;
  Config config;
  config.relay_stable_message_id = false;
  TransferService service = make_service<TransferService>(host, config);
  service.request(TransferSpec{"t1", "alice", "bob", 2500});
  service.relay_poll();
  service.relay_publish_nacked(host.relay_seqs.back());
  service.relay_poll();
  REQUIRE(host.published.size() == 2);
  REQUIRE(host.published[0]->message_id != host.published[1]->message_id);
}

TEST_CASE("transfer-service: the state machine refuses an illegal transition", "[services]") {
  FakeHost host;
  Config config;
  config.transfer_dedupe = TransferDedupe::none;
  TransferService service = make_service<TransferService>(host, config);
  service.request(TransferSpec{"t1", "alice", "bob", 2500});
  const auto debited =
      make_message("m-2", MessageType::account_debited, "t1", "alice", "bob", 2500, "", 0);
  run(service.handle(TransferConsumer::saga, debited));
  run(service.handle(TransferConsumer::saga, debited));
  REQUIRE(service.unsent_outbox_rows() == 2);  // Requested + one CreditRequested
  REQUIRE(std::any_of(host.events.begin(), host.events.end(),
                      [](const TraceEvent& e) { return e.kind == EventKind::illegal_transition; }));
}

TEST_CASE("transfer-service: processed_messages without its unique index lets a duplicate in",
          "[services]") {
  FakeHost host;
  Config config;
  config.transfer_state_machine = false;
  TransferService service = make_service<TransferService>(host, config);
  service.request(TransferSpec{"t1", "alice", "bob", 2500});
  service.drop_index(IndexName::transfer_processed_messages);
  const auto debited =
      make_message("m-2", MessageType::account_debited, "t1", "alice", "bob", 2500, "", 0);
  run(service.handle(TransferConsumer::saga, debited));
  run(service.handle(TransferConsumer::saga, debited));
  REQUIRE(host.dedupe_hits() == 0);
  REQUIRE(service.unsent_outbox_rows() == 3);  // a second CreditRequested with a fresh id
}
