// The explorer takes a row lock's grant and the step after it as one event (Lipton's
// reduction, World::between_steps, docs/model.md): it must reach the same final states and break
// the same invariants as the search that takes them apart, in fewer states, where two copies of
// one message race MassTransit's per-pass row lock, in two instances and in one.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "support/explore.h"
#include "support/scenarios.h"
#include "fuzz/explore.h"

namespace inboxsim {

using testing::broken_invariants;
using testing::library_scenario;
using testing::parse_ok;
namespace {

// The search with and without the fused steps, going on past violations: the same final states
// by fingerprint and the same broken invariants, and the fused one smaller. Returns the fused.
ExploreResult check_fusion_loses_nothing(const Scenario& scenario, ExploreSettings settings) {
  settings.keep_going = true;
  ExploreSettings apart = settings;
  apart.fuse_lock_steps = false;
  const ExploreResult whole = explore(scenario, apart);
  ExploreResult fused = explore(scenario, settings);
  testing::check_same_outcomes(fused, whole);
  CHECK(fused.states < whole.states);
  return fused;
}

// One transfer whose relay crashes after publishing Transfer.CreditRequested and before marking
// its row: the restarted relay publishes it again, and account-service's one instance runs the
// two copies at once, each pass of each copy taking the InboxState row's lock.
constexpr const char* kTwoCopiesInOneInstance = R"({
  "name": "two copies in one instance", "seed": 1, "accounts": {"alice": 10000, "bob": 0},
  "steps": [
    {"fault": {"kind": "crash", "service": "transfer-service", "at": "after_publish",
               "match": {"type": "Transfer.CreditRequested", "transfer": "t1"}}},
    {"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}},
    {"run": {"until": "quiescent"}}]})";

}  // namespace

TEST_CASE("a lock's grant and the step after it as one event lose nothing: two instances",
          "[explore]") {
  // Lesson 50's story with MassTransit's inbox and no ledger key: two instances take two copies
  // of one message, each pass of each copy takes the InboxState row's lock, and the inbox
  // alone keeps the double debit out.
  Scenario scenario = library_scenario("50-explorer-proves-the-key.json");
  scenario.config.account_inbox = AccountInbox::masstransit;
  scenario.config.account_ledger_unique = false;
  scenario.expect.goals.clear();  // its goals are about the ledger key alone
  ExploreSettings settings;
  settings.faults = 0;
  settings.dpor = true;
  const ExploreResult fused = check_fusion_loses_nothing(scenario, settings);
  CHECK(broken_invariants(fused).empty());
  // 4 with the rows of inbox_state and the ledger told apart by their rowids.
  CHECK(fused.leaf_states.size() == 2);
}

TEST_CASE("a lock's grant and the step after it as one event lose nothing: one instance",
          "[.explore_long]") {
  // Two copies in one instance wait for each other's row lock; breadth-first and with DPOR.
  const Scenario scenario = parse_ok(kTwoCopiesInOneInstance);
  ExploreSettings settings;
  settings.faults = 0;
  settings.dpor = true;
  const ExploreResult fused = check_fusion_loses_nothing(scenario, settings);
  CHECK(fused.leaf_states.size() == 7);
  // Pinned: 61,846 states with the steps apart (11,530 and 28 final states with channel numbers
  // in the state); 7,063 with a confirm ordered with every other event of the relay; 6,605 (and
  // 14 final states) with every two mints and inserts ordered and final states told apart by
  // their rowids and ids; 4,450 with every ack ordered with its queue's deliveries.
  CHECK(fused.states == 3993);
}

}  // namespace inboxsim
