// The account-service inbox seam (services/inbox/, domain/account_inbox.h): the registry says each
// mechanism's facts once, config, shrinker and matrix read them, and external-atomic (Redis's
// SET NX) closes the check-then-add race of two instances (scenario 69) but not the mark of a
// transaction that rolls back (scenario 70).
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

#include "domain/account_inbox.h"
#include "domain/config.h"
#include "fuzz/matrix.h"
#include "fuzz/shrink.h"
#include "scenario/runner.h"
#include "support/scenarios.h"

using namespace inboxsim;
using inboxsim::testing::debits_of;
using inboxsim::testing::hits_of;
using inboxsim::testing::library_scenario;
using inboxsim::testing::records_of;

TEST_CASE("every inbox of the registry is a config value, and the value names it back", "[inbox]") {
  for (const AccountInboxKind& kind : account_inbox_kinds()) {
    CAPTURE(kind.name);
    Config config;
    REQUIRE(config_set_text(config, "account.inbox", kind.name).empty());
    CHECK(config.account_inbox == kind.inbox);
    CHECK(account_inbox_name(config.account_inbox) == kind.name);
    CHECK(config_to_json(config).at("account.inbox") == std::string(kind.name));
    CHECK_FALSE(kind.summary.empty());
    CHECK(kind.has(CrashPoint::before_tx));
    // A probe the mechanism reaches is a dedupe probe, and no two mechanisms share one.
    for (const Probe probe : kind.probes) {
      CHECK(is_dedupe_probe(probe));
      for (const AccountInboxKind& other : account_inbox_kinds()) {
        if (other.inbox == kind.inbox) continue;
        CHECK(std::find(other.probes.begin(), other.probes.end(), probe) == other.probes.end());
      }
    }
  }
  Config config;
  const std::string refused = config_set_text(config, "account.inbox", "redis");
  CHECK(refused == "a string, one of " + account_inbox_names_text());
  CHECK(refused.find("external-atomic") != std::string::npos);
  CHECK(Config{}.account_inbox == default_account_inbox());
}

TEST_CASE("the shrinker's repair keeps an inbox the registry calls a defence, and only that",
          "[inbox]") {
  for (const AccountInboxKind& kind : account_inbox_kinds()) {
    CAPTURE(kind.name);
    Config config;
    config.account_inbox = kind.inbox;
    const Config repaired = repaired_config(config);
    CHECK(repaired.account_inbox == (kind.is_a_defence ? kind.inbox : default_account_inbox()));
    CHECK(account_inbox_kind(repaired.account_inbox).is_a_defence);
  }
  // Marten's own repair: its rich append must not ack a version conflict as a duplicate.
  Config rich;
  REQUIRE(config_set_text(rich, "account.inbox", "marten").empty());
  REQUIRE(config_set_text(rich, "account.marten_append", "rich").empty());
  REQUIRE(config_set_text(rich, "account.ledger_conflict", "ack").empty());
  CHECK(repaired_config(rich).account_ledger_conflict == LedgerConflict::fault);
}

TEST_CASE("the matrix's inbox defence is the base's when it is one, and none when off", "[inbox]") {
  const std::array<bool, kDefenceCount> on = {true, true, true, true, true};
  const std::array<bool, kDefenceCount> off = {false, true, true, true, true};
  for (const AccountInboxKind& kind : account_inbox_kinds()) {
    CAPTURE(kind.name);
    Config base;
    base.account_inbox = kind.inbox;
    CHECK(config_with_defences(base, on).account_inbox ==
          (kind.is_a_defence ? kind.inbox : default_account_inbox()));
    CHECK(config_with_defences(base, off).account_inbox == no_account_inbox());
  }
}

TEST_CASE("external-atomic's row: the mark before the commit, no separate check, not a defence",
          "[inbox]") {
  const AccountInboxKind& atomic = account_inbox_kind(AccountInbox::external_atomic);
  CHECK(atomic.name == "external-atomic");
  CHECK(atomic.has(CrashPoint::after_mark));
  CHECK_FALSE(atomic.mark_after_commit);
  CHECK_FALSE(atomic.has(CrashPoint::after_precheck));  // no check apart from the mark
  CHECK_FALSE(atomic.is_a_defence);
  CHECK(atomic.swept_outbox);
  REQUIRE(atomic.probes.size() == 1);
  CHECK(atomic.probes[0] == Probe::dedupe_account_external_atomic);
}

TEST_CASE("69: SET NX tells one of two instances 'new': Alice is debited once", "[inbox]") {
  const Scenario scenario = library_scenario("69-redis-set-nx-two-instances.json");
  const RunResult result = run_scenario(scenario, RunOptions{});
  CHECK(result.passed);
  CHECK(result.violations.empty());
  CHECK(debits_of(result, "t1") == 1);
  CHECK(result.balances.at("alice") == 7500);
  CHECK(records_of(result, DedupeRecord::seen_marked, "m-1") == 1);
  CHECK(hits_of(result, DedupeStep::seen_set_refused, "m-1") == 1);
  CHECK(result.coverage[Probe::dedupe_account_external_atomic] == 1);
  // The same story with check-then-add is scenario 36's race: both instances debit.
  Scenario check_then_add = scenario;
  check_then_add.config.account_inbox = AccountInbox::external_before;
  const RunResult raced = run_scenario(check_then_add, RunOptions{});
  CHECK(records_of(raced, DedupeRecord::seen_checked, "m-1") == 2);
  CHECK(debits_of(raced, "t1") == 2);
  CHECK_FALSE(raced.violations.empty());
}

TEST_CASE("70: the SET NX mark of a rolled-back debit stays, and the redelivery is skipped",
          "[inbox]") {
  const Scenario scenario = library_scenario("70-redis-set-nx-mark-rolled-back.json");
  const RunResult result = run_scenario(scenario, RunOptions{});
  CHECK(result.passed);
  REQUIRE(result.violations.size() == 1);
  CHECK(result.violations[0].invariant == Invariant::termination);
  CHECK(debits_of(result, "t1") == 0);
  CHECK(result.balances.at("alice") == 10000);
  CHECK(result.transfers.at("t1") == SagaState::requested);
  CHECK(result.stats.crashes == 1);
  CHECK(hits_of(result, DedupeStep::seen_set_refused, "m-1") == 1);
  // With the mark in the debit's transaction (MassTransit's inbox) the same crash loses nothing.
  Scenario inbox_row = scenario;
  inbox_row.config.account_inbox = AccountInbox::masstransit;
  const RunResult kept = run_scenario(inbox_row, RunOptions{});
  CHECK(kept.violations.empty());
  CHECK(debits_of(kept, "t1") == 1);
}

TEST_CASE("external-atomic counts the duplicate it catches under its own probe", "[inbox]") {
  // 05 hands account-service a duplicate Transfer.Requested after the original was handled.
  Scenario scenario = library_scenario("05-duplicate-by-hand.json");
  REQUIRE(config_set_text(scenario.config, "account.inbox", "external-atomic").empty());
  const RunResult result = run_scenario(scenario, RunOptions{});
  for (size_t index = 0; index < kProbeCount; ++index) {
    const auto probe = static_cast<Probe>(index);
    if (!is_dedupe_probe(probe)) continue;
    CAPTURE(probe_name(probe));
    CHECK(result.coverage[probe] == (probe == Probe::dedupe_account_external_atomic ? 1 : 0));
  }
  CHECK(result.balances.at("alice") == 7500);
}
