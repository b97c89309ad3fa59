// Wolverine's durable inbox (account.inbox = wolverine, services/inbox/wolverine_inbox.cpp):
// store, ack, then handle from the table. A crash at each point keeps only what was committed;
// a copy of a stored id is acked and dropped; the durability agent recovers what a dead node
// stored; and the stories 71 to 73 run as their lessons say.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "domain/account_inbox.h"
#include "domain/config.h"
#include "fuzz/campaign.h"
#include "scenario/runner.h"
#include "scenario/write.h"
#include "services/account_service.h"
#include "support/fake_host.h"
#include "support/scenarios.h"

using namespace inboxsim;
using inboxsim::testing::debits_of;
using inboxsim::testing::events_with;
using inboxsim::testing::FakeHost;
using inboxsim::testing::library_scenario;
using inboxsim::testing::make_service;
using inboxsim::testing::run;

namespace {

const MessagePtr kRequested =
    make_message("m-1", MessageType::transfer_requested, "t1", "alice", "bob", 2500, "", 0);

Config wolverine_config() {
  Config config;
  REQUIRE(config_set_text(config, "account.inbox", "wolverine").empty());
  return config;
}

int64_t debits(AccountService& service) {
  int64_t count = 0;
  for (const LedgerEntry& entry : service.ledger()) count += entry.type == EntryType::debit;
  return count;
}

int64_t events_of(const FakeHost& host, EventKind kind) {
  return std::count_if(host.events.begin(), host.events.end(),
                       [&](const TraceEvent& event) { return event.kind == kind; });
}


}  // namespace

TEST_CASE("wolverine's row: store and ack, its own points, a defence", "[inbox][wolverine]") {
  const AccountInboxKind& kind = account_inbox_kind(AccountInbox::wolverine);
  CHECK(kind.name == "wolverine");
  CHECK(kind.store_and_ack);
  CHECK(kind.is_a_defence);
  CHECK(kind.framework == InboxFramework::wolverine);
  CHECK(kind.retention == InboxRetention::handled_envelopes);
  CHECK(kind.has(CrashPoint::after_store));
  CHECK(kind.has(CrashPoint::after_ack));
  CHECK(kind.has(CrashPoint::after_commit));
  CHECK_FALSE(kind.has(CrashPoint::after_precheck));
  // No other mechanism stores and acks, nor passes its two points.
  for (const AccountInboxKind& other : account_inbox_kinds()) {
    if (other.inbox == AccountInbox::wolverine) continue;
    CAPTURE(other.name);
    CHECK_FALSE(other.store_and_ack);
    CHECK_FALSE(other.has(CrashPoint::after_store));
    CHECK_FALSE(other.has(CrashPoint::after_ack));
  }
  CHECK(Config{}.account_durability_poll_ms == 5'000);
  Config config;
  CHECK_FALSE(config_set_text(config, "account.durability_poll_ms", "-1").empty());
  REQUIRE(config_set_text(config, "account.durability_poll_ms", "0").empty());
  CHECK(config_to_json(config).at("account.durability_poll_ms") == 0);
}

TEST_CASE("wolverine inbox: stores the envelope, acks, then handles it and marks it Handled",
          "[inbox][wolverine]") {
  FakeHost host;
  const Config config = wolverine_config();
  AccountService service = make_service<AccountService>(host, config);
  service.open_accounts({{"alice", {10000, false}}, {"bob", {0, false}}});
  REQUIRE(run(service.handle(kRequested)) == Outcome::ack);
  CHECK(host.acks_now == 1);
  CHECK(host.durability_polls_asked == 1);
  CHECK(debits(service) == 1);
  CHECK(service.balances()["alice"] == 7500);
  REQUIRE(host.steps.size() >= 3);
  CHECK(host.steps[0] ==
        "store the envelope in wolverine_incoming_envelopes (Incoming, owner node " +
            std::to_string(service.node_number()) + ")");
  CHECK(host.steps[1] == "ack the broker: the envelope is stored");
  // Two dedupe records: the store, then the Handled mark in the handler's transaction.
  CHECK(events_of(host, EventKind::dedupe_record) == 2);
  // The agent finds nothing to recover: the one envelope is Handled.
  const AccountService::Recovery recovery = service.recover_envelopes({service.node_number()});
  CHECK(recovery.recovered.empty());
  CHECK_FALSE(recovery.incoming_left);
}

TEST_CASE("wolverine inbox: a copy of a stored id is acked and dropped, Incoming or Handled",
          "[inbox][wolverine]") {
  FakeHost host;
  const Config config = wolverine_config();
  AccountService service = make_service<AccountService>(host, config);
  service.open_accounts({{"alice", {10000, false}}, {"bob", {0, false}}});
  SECTION("Handled") {
    REQUIRE(run(service.handle(kRequested)) == Outcome::ack);
    REQUIRE(run(service.handle(kRequested)) == Outcome::ack);
    CHECK(host.acks_now == 1);  // the copy was acked by its end, not by a store
  }
  SECTION("Incoming") {
    host.crash_at = CrashPoint::after_ack;
    REQUIRE_THROWS_AS(run(service.handle(kRequested)), ServiceCrash);
    REQUIRE(run(service.handle(kRequested)) == Outcome::ack);
    CHECK(debits(service) == 0);  // dropped: only the agent handles the stored one
  }
  CHECK(host.dedupe_hits() == 1);
  CHECK(host.coverage[Probe::dedupe_wolverine_incoming] == 1);
}

TEST_CASE("wolverine inbox: a crash at each point keeps only what was committed",
          "[inbox][wolverine][crash]") {
  struct Case {
    CrashPoint point;
    bool stored;
    bool debit_committed;
  };
  const Case cases[] = {
      {CrashPoint::before_tx, false, false},  {CrashPoint::after_store, true, false},
      {CrashPoint::after_ack, true, false},   {CrashPoint::after_effect, true, false},
      {CrashPoint::after_commit, true, true},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION("crash at " << crash_point_name(c.point)) {
      FakeHost host;
      const Config config = wolverine_config();
      AccountService service = make_service<AccountService>(host, config);
      service.open_accounts({{"alice", {10000, false}}, {"bob", {0, false}}});
      host.crash_at = c.point;
      REQUIRE_THROWS_AS(run(service.handle(kRequested)), ServiceCrash);
      CHECK(debits(service) == (c.debit_committed ? 1 : 0));
      CHECK(host.acks_now ==
            (c.point == CrashPoint::before_tx || c.point == CrashPoint::after_store ? 0 : 1));
      // The process comes back as a new node; the old node's envelope is Incoming and its
      // owner gone, so the agent claims it, unless the handler's transaction marked it.
      const int64_t old_node = service.node_number();
      service.restart();
      REQUIRE(service.node_number() != old_node);
      const AccountService::Recovery recovery = service.recover_envelopes({service.node_number()});
      const bool recoverable = c.stored && !c.debit_committed;
      REQUIRE(recovery.recovered.size() == (recoverable ? 1U : 0U));
      CHECK(host.coverage[Probe::inbox_recovered] == (recoverable ? 1 : 0));
      if (recoverable) {
        CHECK(recovery.recovered[0]->message_id == "m-1");
        CHECK(recovery.recovered[0]->amount == 2500);
        REQUIRE(run(service.handle_stored(recovery.recovered[0])) == Outcome::ack);
      }
      // Not stored: the broker still holds the message, and its redelivery does the work.
      if (!c.stored) REQUIRE(run(service.handle(kRequested)) == Outcome::ack);
      CHECK(debits(service) == 1);
      CHECK(service.balances()["alice"] == 7500);
      CHECK_FALSE(service.recover_envelopes({service.node_number()}).incoming_left);
    }
  }
}

TEST_CASE("wolverine inbox: the agent leaves a live node's envelope alone", "[inbox][wolverine]") {
  FakeHost host;
  const Config config = wolverine_config();
  AccountService service = make_service<AccountService>(host, config);
  service.open_accounts({{"alice", {10000, false}}, {"bob", {0, false}}});
  host.crash_at = CrashPoint::after_ack;
  REQUIRE_THROWS_AS(run(service.handle(kRequested)), ServiceCrash);
  // Its node counts as alive (no restart): nothing is released or claimed.
  const AccountService::Recovery kept = service.recover_envelopes({service.node_number()});
  CHECK(kept.recovered.empty());
  CHECK(kept.incoming_left);
  // Once the owner is not among the live nodes, the envelope is released and claimed.
  const AccountService::Recovery taken = service.recover_envelopes({});
  CHECK(taken.recovered.size() == 1);
}

TEST_CASE("wolverine inbox: Handled envelopes are kept KeepAfterMessageHandling, then deleted",
          "[inbox][wolverine][retention]") {
  FakeHost host;
  const Config config = wolverine_config();
  AccountService service = make_service<AccountService>(host, config);
  service.open_accounts({{"alice", {10000, false}}, {"bob", {0, false}}});
  REQUIRE(run(service.handle(kRequested)) == Outcome::ack);
  CHECK(service.cleanup_inbox(config.account_keep_after_handling_ms - 1).dedupe_rows == 0);
  CHECK(service.cleanup_inbox(config.account_keep_after_handling_ms).dedupe_rows == 1);
  // Past the window a copy is stored again and the ledger key is what is left.
  REQUIRE_THROWS_AS(run(service.handle(kRequested)), ConsumerFault);
  CHECK(debits(service) == 1);
}

TEST_CASE("71: after the ack only the durability agent finishes the message", "[wolverine]") {
  const RunResult result =
      run_scenario(library_scenario("71-wolverine-crash-after-ack.json"), RunOptions{});
  CHECK(result.passed);
  CHECK(result.violations.empty());
  CHECK(debits_of(result, "t1") == 1);
  CHECK(result.coverage[Probe::inbox_recovered] == 1);
  CHECK(events_with(result, EventKind::recovered, "durability agent") == 1);
  // The broker delivered Transfer.Requested once: it had the ack.
  CHECK(std::count_if(result.events.begin(), result.events.end(), [](const TraceEvent& event) {
          return event.kind == EventKind::deliver && event.message_id == "m-1";
        }) == 1);
}

TEST_CASE("72: the agent races a running handler and the ledger key stops the second debit",
          "[wolverine]") {
  const Scenario scenario = library_scenario("72-wolverine-agent-races-handler.json");
  const RunResult result = run_scenario(scenario, RunOptions{});
  CHECK(result.passed);
  CHECK(result.violations.empty());
  CHECK(debits_of(result, "t1") == 1);
  CHECK(result.coverage[Probe::inbox_recovered] == 1);
  CHECK(result.coverage[Probe::ledger_key_rejected] >= 1);
  // Without the ledger key both handlers debit Alice.
  Scenario unkeyed = scenario;
  unkeyed.config.account_ledger_unique = false;
  const RunResult doubled = run_scenario(unkeyed, RunOptions{});
  CHECK(debits_of(doubled, "t1") == 2);
  CHECK_FALSE(doubled.violations.empty());
}

TEST_CASE("73: with no durability agent the acked envelope is stranded", "[wolverine]") {
  const Scenario scenario = library_scenario("73-wolverine-stranded-envelope.json");
  const RunResult result = run_scenario(scenario, RunOptions{});
  CHECK(result.passed);
  REQUIRE(result.violations.size() == 1);
  CHECK(result.violations[0].invariant == Invariant::termination);
  CHECK(debits_of(result, "t1") == 0);
  CHECK(result.coverage[Probe::operator_redrive] == 0);  // no queue held anything to move
  // The same story with the agent on is 71: it completes.
  Scenario with_agent = scenario;
  with_agent.config.account_durability_poll_ms = Config{}.account_durability_poll_ms;
  const RunResult recovered = run_scenario(with_agent, RunOptions{});
  CHECK(recovered.violations.empty());
  CHECK(debits_of(recovered, "t1") == 1);
}

// The fast half of the fuzzer's teeth for this inbox (the thousands of seeds are fuzz_correct and
// fuzz_teeth, tests/fuzz/test_fuzz.cpp): a correct bank passes, and the bank without the ledger
// key is caught and shrunk to a story of one or two transfers.
TEST_CASE("fuzz: the wolverine inbox passes, and without the ledger key it is caught and shrunk",
          "[wolverine][fuzz]") {
  Config correct = wolverine_config();
  REQUIRE(config_set_text(correct, "account.remember_rejections", "true").empty());
  CampaignOptions options;
  options.seed_first = 1;
  options.seed_last = 200;
  options.generator.config = correct;
  options.out_dir = "";
  const CampaignResult passed = run_campaign(options, nullptr);
  CHECK(passed.failures.empty());
  CHECK(passed.coverage[Probe::inbox_recovered] > 0);

  Config broken = correct;
  REQUIRE(config_set_text(broken, "account.ledger_unique", "false").empty());
  options.seed_last = 300;
  options.generator.config = broken;
  options.stop_after = 1;
  options.shrink_max = 1;
  const CampaignResult caught = run_campaign(options, nullptr);
  REQUIRE(caught.failures.size() == 1);
  REQUIRE(caught.counterexamples.size() == 1);
  const Counterexample& cx = caught.counterexamples[0];
  INFO("seed " << cx.seed << ": " << scenario_to_json(cx.scenario).dump());
  CHECK(cx.replay_verified);
  CHECK(cx.transfers <= 2);
  CHECK(cx.faults <= 3);
}
