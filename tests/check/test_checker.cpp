// A checker that cannot fail is a defect: for each invariant, build a world where it is broken
// and show that it fires, and show that a healthy world raises nothing.
#include <catch2/catch.hpp>

#include "check/checker.h"

using namespace inboxsim;

namespace {

const std::map<std::string, AccountSpec> kAccounts = {{"alice", {10000, false}},
                                                      {"bob", {0, false}}};

CommitRecord entry(const std::string& transfer, EntryType type, const std::string& account,
                   int64_t delta, int64_t balance_after) {
  CommitRecord record;
  record.ledger.push_back(LedgerEntry{transfer, type, account, delta});
  record.balances.push_back(BalanceWrite{account, balance_after});
  return record;
}

CommitRecord transition(const std::string& transfer, std::optional<SagaState> from, SagaState to) {
  CommitRecord record;
  record.service = ServiceId::transfer;
  record.transitions.push_back(SagaTransition{transfer, from, to});
  return record;
}

std::vector<Invariant> fired(const Checker& checker) {
  std::vector<Invariant> out;
  for (const Violation& violation : checker.violations()) out.push_back(violation.invariant);
  return out;
}

bool has(const std::vector<Invariant>& list, Invariant invariant) {
  return std::find(list.begin(), list.end(), invariant) != list.end();
}

// A transfer that went right, step by step, as the services would report it.
void healthy_transfer(Checker& checker) {
  checker.register_transfer("t1", 2500);
  checker.on_commit(transition("t1", std::nullopt, SagaState::requested), 0);
  checker.on_commit(entry("t1", EntryType::debit, "alice", -2500, 7500), 1);
  checker.on_commit(transition("t1", SagaState::requested, SagaState::debited), 2);
  checker.on_commit(entry("t1", EntryType::credit, "bob", 2500, 2500), 3);
  checker.on_commit(transition("t1", SagaState::debited, SagaState::completed), 4);
}

// The final state's ledger and sagas, handed out row by row as the world reads its databases.
void set_tables(FinalState& state, std::vector<LedgerEntry> ledger,
                std::map<std::string, SagaState> sagas) {
  state.for_each_ledger_entry = [ledger](const auto& visit) {
    for (const LedgerEntry& entry : ledger) visit(entry);
  };
  state.for_each_saga = [sagas](const auto& visit) {
    for (const auto& [id, saga] : sagas) visit(id, saga);
  };
}

FinalState final_state_after_healthy_transfer() {
  FinalState state;
  state.balances = {{"alice", 7500}, {"bob", 2500}};
  set_tables(state,
             {{"t1", EntryType::debit, "alice", -2500}, {"t1", EntryType::credit, "bob", 2500}},
             {{"t1", SagaState::completed}});
  return state;
}

}  // namespace

TEST_CASE("a healthy transfer breaks no invariant, in flight or at the end", "[checker]") {
  Checker checker(kAccounts, false);
  healthy_transfer(checker);
  checker.check_final(final_state_after_healthy_transfer(), 10);
  REQUIRE(checker.violations().empty());
}

TEST_CASE("conservation and single_effect fire on a double debit", "[checker]") {
  Checker checker(kAccounts, false);
  checker.register_transfer("t1", 2500);
  checker.on_commit(entry("t1", EntryType::debit, "alice", -2500, 7500), 1);
  REQUIRE(checker.violations().empty());  // 2500 is in flight, not lost
  checker.on_commit(entry("t1", EntryType::debit, "alice", -2500, 5000), 2);
  const auto invariants = fired(checker);
  REQUIRE(has(invariants, Invariant::conservation));
  REQUIRE(has(invariants, Invariant::single_effect));
  REQUIRE_FALSE(has(invariants, Invariant::ledger_balance));
}

TEST_CASE("conservation fires on money invented by a double credit", "[checker]") {
  Checker checker(kAccounts, false);
  healthy_transfer(checker);
  checker.on_commit(entry("t1", EntryType::credit, "bob", 2500, 5000), 5);
  REQUIRE(has(fired(checker), Invariant::conservation));
  REQUIRE(checker.violated(Invariant::single_effect));
  REQUIRE(checker.violated(Invariant::saga_ledger));
}

TEST_CASE("ledger_balance fires when a balance moves without a ledger entry", "[checker]") {
  Checker checker(kAccounts, false);
  CommitRecord record;
  record.balances.push_back(BalanceWrite{"alice", 9000});
  checker.on_commit(record, 1);
  REQUIRE(checker.violated(Invariant::ledger_balance));
}

TEST_CASE("saga_ledger fires when a terminal state disagrees with the ledger", "[checker]") {
  Checker checker(kAccounts, false);
  checker.register_transfer("t1", 2500);
  checker.on_commit(transition("t1", std::nullopt, SagaState::requested), 0);
  checker.on_commit(transition("t1", SagaState::requested, SagaState::rejected), 1);
  REQUIRE_FALSE(checker.violated(Invariant::saga_ledger));
  checker.on_commit(entry("t1", EntryType::debit, "alice", -2500, 7500), 2);
  REQUIRE(checker.violated(Invariant::saga_ledger));
}

TEST_CASE("legal_transitions fires on a transition that is not an edge of the saga", "[checker]") {
  Checker checker(kAccounts, false);
  healthy_transfer(checker);
  REQUIRE_FALSE(checker.violated(Invariant::legal_transitions));
  checker.on_commit(transition("t1", SagaState::completed, SagaState::debited), 5);
  REQUIRE(checker.violated(Invariant::legal_transitions));
  REQUIRE(is_legal_transition(std::nullopt, SagaState::requested));
  REQUIRE_FALSE(is_legal_transition(std::nullopt, SagaState::debited));
  REQUIRE(is_legal_transition(SagaState::compensating, SagaState::failed));
}

TEST_CASE("no_overdraft fires on a negative balance", "[checker]") {
  Checker checker(kAccounts, false);
  checker.register_transfer("t1", 10100);
  checker.on_commit(entry("t1", EntryType::debit, "alice", -10100, -100), 1);
  REQUIRE(checker.violated(Invariant::no_overdraft));
  REQUIRE_FALSE(checker.violated(Invariant::ledger_balance));
}

TEST_CASE("notified fires on a second notification and on a missing one", "[checker]") {
  SECTION("twice") {
    Checker checker(kAccounts, true);
    CommitRecord record;
    record.notifications = {"t1"};
    checker.on_commit(record, 1);
    REQUIRE_FALSE(checker.violated(Invariant::notified));
    checker.on_commit(record, 2);
    REQUIRE(checker.violated(Invariant::notified));
  }
  SECTION("never") {
    Checker checker(kAccounts, true);
    healthy_transfer(checker);
    checker.check_final(final_state_after_healthy_transfer(), 10);
    REQUIRE(fired(checker) == std::vector<Invariant>{Invariant::notified});
  }
  SECTION("not applicable without the notifications consumer") {
    Checker checker(kAccounts, false);
    REQUIRE_FALSE(checker.applies(Invariant::notified));
  }
}

TEST_CASE("termination fires when a transfer never settles", "[checker]") {
  Checker checker(kAccounts, false);
  checker.register_transfer("t1", 2500);
  checker.on_commit(transition("t1", std::nullopt, SagaState::requested), 0);
  FinalState state;
  state.balances = {{"alice", 10000}, {"bob", 0}};
  set_tables(state, {}, {{"t1", SagaState::requested}});
  state.dead_lettered = 1;
  checker.check_final(state, 10);
  REQUIRE(fired(checker) == std::vector<Invariant>{Invariant::termination});
  REQUIRE(checker.violations()[0].detail.find("t1 is REQUESTED") != std::string::npos);
}

TEST_CASE("the final check reads the databases, not what transactions reported", "[checker]") {
  Checker checker(kAccounts, false);
  healthy_transfer(checker);
  FinalState state = final_state_after_healthy_transfer();
  state.balances["bob"] = 3000;  // the database disagrees with every report
  checker.check_final(state, 10);
  REQUIRE(checker.violated(Invariant::ledger_balance));
  REQUIRE(checker.violated(Invariant::conservation));
}

TEST_CASE("each invariant is reported once, with its first detail", "[checker]") {
  Checker checker(kAccounts, false);
  int reported = 0;
  checker.on_violation = [&](const Violation&) { ++reported; };
  CommitRecord record;
  record.balances.push_back(BalanceWrite{"alice", 9000});
  checker.on_commit(record, 1);
  record.balances[0].balance = 8000;
  checker.on_commit(record, 2);
  REQUIRE(checker.violations().size() == 2);  // ledger_balance, conservation
  REQUIRE(reported == 2);
  REQUIRE(checker.violations()[0].time_ms == 1);
}
