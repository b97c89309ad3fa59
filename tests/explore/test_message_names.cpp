// Names whose order nothing reads (world/message_names.h, docs/model.md): where the services
// never read the order of message ids, nor of some tables' rows beyond one message's, the
// explorer lets two messages' mints and inserts commute and names final states by a fingerprint
// that reads those ids by their causes and those rows as sets. What it must keep: every final
// state and every violation of the search that orders them all.
#include <catch2/catch.hpp>
#include <string>

#include "support/explore.h"
#include "support/scenarios.h"
#include "fuzz/explore.h"
#include "world/message_names.h"

namespace inboxsim {

using testing::broken_invariants;
using testing::check_same_outcomes;
using testing::library_scenario;
using testing::parse_ok;
using testing::with_faults;

namespace {

std::string renamed(const MessageNames& names, const std::string& text) {
  std::string out;
  return names.rename(text, out) ? out : text;
}

// Two transfers between four accounts, one instance of each service (notes/ has it as a file).
constexpr const char* kFourAccounts = R"({"name": "four-accounts", "seed": 1,
  "accounts": {"alice": 10000, "bob": 0, "carol": 5000, "dave": 0},
  "steps": [
    {"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}},
    {"transfer": {"id": "t2", "from": "carol", "to": "dave", "amount": 1000}},
    {"run": {"until": "quiescent"}}]})";

// DPOR with the names commuting against DPOR with every two mints and every two inserts into
// one table ordered: the same final states (both named canonically) and the same violations,
// in fewer states.
ExploreResult check_commuting_loses_nothing(const Scenario& scenario, ExploreSettings settings) {
  settings.dpor = true;
  settings.keep_going = true;
  ExploreSettings ordered = settings;
  ordered.names_commute = false;
  const ExploreResult reference = explore(scenario, ordered);
  const ExploreResult result = explore(scenario, settings);
  check_same_outcomes(result, reference);
  CHECK(result.states < reference.states);
  return result;
}

}  // namespace

TEST_CASE("a minted id is named by its cause and its place among the cause's mints",
          "[fingerprint]") {
  // Two handlers mint one id each, in either order: the same messages get other numbers, and
  // the same names.
  MessageNames first;
  first.minted("m-1", "");
  first.minted("m-2", "");
  first.minted("m-3", "m-1");
  first.minted("m-4", "m-2");
  MessageNames second;
  second.minted("m-1", "");
  second.minted("m-2", "");
  second.minted("m-3", "m-2");
  second.minted("m-4", "m-1");
  CHECK(renamed(first, "m-3|account-service") == renamed(second, "m-4|account-service"));
  CHECK(renamed(first, "m-3|account-service") != renamed(second, "m-3|account-service"));
  // Two mints of one cause are told apart by their place.
  first.minted("m-5", "m-1");
  CHECK(renamed(first, "m-5") != renamed(first, "m-3"));
  // Only whole ids that were minted are renamed.
  std::string out;
  CHECK_FALSE(first.rename("m-33 xm-3 m-3x m-9 alice", out));
  CHECK(renamed(first, "(m-1, m-3)") != "(m-1, m-3)");
  CHECK(renamed(first, "(m-1, m-3)").find("m-") == std::string::npos);
}

TEST_CASE("names commute only where nothing reads their order", "[fingerprint]") {
  Scenario scenario = parse_ok(kFourAccounts);
  const Schedule clockless;
  CHECK(MessageNames::commute_in(scenario, scenario.config, clockless));
  // A clock: the retention passes delete by age, then by id.
  Schedule clocked;
  clocked.clocked = true;
  CHECK_FALSE(MessageNames::commute_in(scenario, scenario.config, clocked));
  // Inboxes that sweep their outbox across messages, or read ids in order.
  for (const AccountInbox inbox : {AccountInbox::none, AccountInbox::marten,
                                   AccountInbox::wolverine, AccountInbox::external_after}) {
    Config config = scenario.config;
    config.account_inbox = inbox;
    CHECK_FALSE(MessageNames::commute_in(scenario, config, clockless));
  }
  Config jetstream = scenario.config;
  jetstream.broker_kind = BrokerKind::jetstream;
  CHECK_FALSE(MessageNames::commute_in(scenario, jetstream, clockless));
  // A story that names an id by its number: a message published by hand, an account so named.
  CHECK_FALSE(MessageNames::commute_in(library_scenario("05-duplicate-by-hand.json"),
                                       scenario.config, clockless));
  Scenario named = scenario;
  named.steps.front().transfer.to = "m-2";
  CHECK_FALSE(MessageNames::commute_in(named, scenario.config, clockless));
  // The playground's hand actions: a message published by hand before the moment explored.
  Schedule by_hand;
  Step publish;
  publish.kind = StepKind::publish;
  by_hand.actions.push_back(Schedule::Action{0, publish});
  CHECK_FALSE(MessageNames::commute_in(scenario, scenario.config, by_hand));
  Step redrive;
  redrive.kind = StepKind::redrive;
  Schedule redriving;
  redriving.actions.push_back(Schedule::Action{0, redrive});
  CHECK(MessageNames::commute_in(scenario, scenario.config, redriving));
}

TEST_CASE("commuting names loses nothing where two transfers' chains take turns (lesson 77)",
          "[dpor]") {
  const ExploreResult result = check_commuting_loses_nothing(
      library_scenario("77-explorer-two-transfers.json"), with_faults(0, {}));
  CHECK(broken_invariants(result).empty());
  // 609 states with every mint and insert ordered.
  CHECK(result.states == 433);
  CHECK(result.leaves == 1);
}

TEST_CASE("commuting names loses nothing where two copies race without MassTransit's keys",
          "[dpor]") {
  // Lesson 50's two instances and two copies, with MassTransit's inbox but neither its key nor
  // the ledger's: both copies may insert an inbox_state row for one message id, whose order the
  // inbox's lookup reads (ORDER BY id), so those two inserts stay ordered.
  Scenario scenario = library_scenario("50-explorer-proves-the-key.json");
  scenario.config.account_inbox = AccountInbox::masstransit;
  scenario.config.account_inbox_unique = false;
  scenario.config.account_ledger_unique = false;
  scenario.expect.goals.clear();  // its goals are about the ledger key alone
  const ExploreResult result = check_commuting_loses_nothing(scenario, with_faults(0, {}));
  CHECK_FALSE(broken_invariants(result).empty());
}

TEST_CASE("commuting names loses nothing where two transfers' handlers run at once",
          "[.explore_names]") {
  // The four-account story at the default prefetch, where two handlers of one service insert
  // into one table and mint ids at once; the search with every mint and insert ordered takes
  // about a minute.
  const ExploreResult result =
      check_commuting_loses_nothing(parse_ok(kFourAccounts), with_faults(0, {}));
  CHECK(broken_invariants(result).empty());
  CHECK(result.leaves == 2);
}

TEST_CASE("two transfers between four accounts are proven for every order", "[dpor]") {
  // Two transfers' handlers insert into the same tables and mint ids in either order; only
  // the order within one message's rows is read, so those orders commute (131,415 states with
  // them all ordered).
  ExploreSettings settings = with_faults(0, {});
  settings.dpor = true;
  const ExploreResult result = explore(parse_ok(kFourAccounts), settings);
  CHECK(result.complete);
  CHECK(broken_invariants(result).empty());
  CHECK(result.states == 784);
  CHECK(result.leaves == 2);
}

}  // namespace inboxsim
