// The parser's expectations: the "expect" object (balances, transfers, counts, invariants, and
// the reachability goals the explorer answers), each key checked against what the file declares.
#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <string_view>
#include <vector>

#include "domain/participants.h"
#include "domain/topology.h"
#include "kernel/text.h"
#include "scenario/parse_internal.h"
#include "scenario/runner.h"

namespace inboxsim::scenario_parse {

// Fails at a key of an expectation object that names nothing the file declares.
[[noreturn]] void key_failed(const Node& member, const std::string& key,
                             std::string_view expected) {
  fail(member.pointer,
       "expected the key to be " + std::string(expected) + " (got " + quote_json(key) + ")");
}

// Reads an object whose keys `key_of` turns into Keys and whose values `value_of` reads.
template <typename Key, typename Value>
std::map<Key, Value> parse_map(const Node& node, std::string_view expected,
                               const std::function<Key(const std::string&, const Node&)>& key_of,
                               const std::function<Value(const Node&)>& value_of) {
  const json& object = as_object(node, expected);
  std::map<Key, Value> result;
  for (auto it = object.begin(); it != object.end(); ++it) {
    const Node member{&*it, child_pointer(node.pointer, it.key())};
    Key key = key_of(it.key(), member);
    result[std::move(key)] = value_of(member);
  }
  return result;
}

int64_t as_count(const Node& node) { return as_integer(node, 0, kAmountMax); }

std::map<EntryType, int64_t> parse_entry_counts(const Node& node) {
  const std::string names = enum_names(3, entry_type_name);
  return parse_map<EntryType, int64_t>(
      node, "an object of entry type -> count",
      [&](const std::string& key, const Node& member) {
        const auto type = parse_entry_type(key);
        if (!type) key_failed(member, key, "one of " + names);
        return *type;
      },
      as_count);
}

void parse_expect_maps(const Node& node, const Context& context, Expect& expect) {
  const auto account_key = [&](const std::string& key, const Node& member) {
    if (!context.accounts.contains(key)) key_failed(member, key, account_expected(context));
    return key;
  };
  const auto transfer_key = [&](const std::string& key, const Node& member) {
    if (!context.declared_transfers.contains(key)) {
      key_failed(member, key, transfer_expected(context));
    }
    return key;
  };
  if (const Node balances = field(node, "balances"); balances.value != nullptr) {
    expect.balances = parse_map<std::string, int64_t>(
        balances, "an object of account -> balance", account_key,
        [](const Node& member) { return as_integer(member, -kAmountMax, kAmountMax); });
  }
  if (const Node transfers = field(node, "transfers"); transfers.value != nullptr) {
    const std::string states = enum_names(kSagaStateCount, saga_state_name);
    expect.transfers = parse_map<std::string, SagaState>(
        transfers, "an object of transfer id -> saga state", transfer_key,
        [&](const Node& member) { return as_choice(member, parse_saga_state, states); });
  }
  if (const Node effects = field(node, "effects"); effects.value != nullptr) {
    expect.effects = parse_map<std::string, std::map<EntryType, int64_t>>(
        effects, "an object of transfer id -> {DEBIT, CREDIT, REFUND -> count}", transfer_key,
        parse_entry_counts);
  }
}

std::map<MessageType, int64_t> parse_type_counts(const Node& node) {
  const std::string types = enum_names(kMessageTypeCount, message_type_name);
  return parse_map<MessageType, int64_t>(
      node, "an object of message type -> count",
      [&](const std::string& key, const Node& member) {
        const auto type = parse_message_type(key);
        if (!type) key_failed(member, key, "one of " + types);
        return *type;
      },
      as_count);
}

void parse_expect_counts(const Node& node, Expect& expect) {
  if (const Node published = field(node, "published"); published.value != nullptr) {
    expect.published = parse_type_counts(published);
  }
  if (const Node sends = field(node, "sends"); sends.value != nullptr) {
    expect.sends = parse_type_counts(sends);
  }
  if (const Node hits = field(node, "dedupe_hits"); hits.value != nullptr) {
    expect.dedupe_hits = parse_map<ServiceId, int64_t>(
        hits, "an object of service -> count",
        [](const std::string& key, const Node& member) {
          const auto service = parse_service(key);
          if (!service) key_failed(member, key, "one of account-service, transfer-service");
          return *service;
        },
        as_count);
  }
  if (const Node dead = field(node, "dead_lettered"); dead.value != nullptr) {
    expect.dead_lettered = as_count(dead);
  }
  if (const Node error = field(node, "error_queued"); error.value != nullptr) {
    expect.error_queued = as_count(error);
  }
  if (const Node dropped = field(node, "dropped"); dropped.value != nullptr) {
    expect.dropped = as_count(dropped);
  }
  if (const Node again = field(node, "redeliveries"); again.value != nullptr) {
    expect.redeliveries = as_count(again);
  }
}

std::vector<Invariant> parse_violations(const Node& node) {
  if (!node.value->is_array()) expect_failed(node, "an array of invariant names");
  const std::string names = enum_names(kInvariantCount, invariant_name);
  std::set<Invariant> violations;
  for (size_t i = 0; i < node.value->size(); ++i) {
    const Node item{&(*node.value)[i], child_pointer(node.pointer, i)};
    violations.insert(as_choice(item, parse_invariant, names));
  }
  return {violations.begin(), violations.end()};
}

// A reachability goal: {"broken": INVARIANT}, {"probe": PROBE}, {"transfer": ID, "state":
// STATE} or {"account": NAME, "balance": N}.
constexpr std::array<std::string_view, 6> kGoalKeys = {"broken", "probe",   "transfer",
                                                       "state",  "account", "balance"};
constexpr std::string_view kGoalShapes =
    "one of {\"broken\": INVARIANT}, {\"probe\": PROBE}, {\"transfer\": ID, \"state\": "
    "STATE}, {\"account\": NAME, \"balance\": N}";

Goal parse_goal(const Node& node, const Context& context, bool reachable) {
  as_object(node, kGoalShapes);
  check_keys(node, kGoalKeys, "a reachability goal");
  Goal goal;
  goal.reachable = reachable;
  const Node broken = field(node, "broken");
  const Node probe = field(node, "probe");
  const Node transfer = field(node, "transfer");
  const Node state = field(node, "state");
  const Node account = field(node, "account");
  const Node balance = field(node, "balance");
  const int shapes = (broken.value != nullptr ? 1 : 0) + (probe.value != nullptr ? 1 : 0) +
                     (transfer.value != nullptr || state.value != nullptr ? 1 : 0) +
                     (account.value != nullptr || balance.value != nullptr ? 1 : 0);
  if (shapes != 1) expect_failed(node, kGoalShapes);
  if (broken.value != nullptr) {
    goal.kind = Goal::Kind::broken;
    goal.invariant =
        as_choice(broken, parse_invariant, enum_names(kInvariantCount, invariant_name));
  } else if (probe.value != nullptr) {
    goal.kind = Goal::Kind::probe;
    goal.probe = as_choice(probe, parse_probe, std::string(probe_names_text()));
  } else if (transfer.value != nullptr || state.value != nullptr) {
    if (transfer.value == nullptr)
      fail(node.pointer + "/transfer",
           "expected " + transfer_expected(context) + " beside \"state\"");
    if (state.value == nullptr)
      fail(node.pointer + "/state", "expected a saga state beside \"transfer\": one of " +
                                        enum_names(kSagaStateCount, saga_state_name));
    goal.kind = Goal::Kind::saga;
    goal.subject = as_string(transfer, transfer_expected(context));
    if (!context.declared_transfers.contains(goal.subject)) {
      expect_failed(transfer, transfer_expected(context));
    }
    goal.state = as_choice(state, parse_saga_state, enum_names(kSagaStateCount, saga_state_name));
  } else {
    if (account.value == nullptr)
      fail(node.pointer + "/account",
           "expected " + account_expected(context) + " beside \"balance\"");
    if (balance.value == nullptr)
      fail(node.pointer + "/balance",
           "expected " + integer_range(-kAmountMax, kAmountMax) + " beside \"account\"");
    goal.kind = Goal::Kind::balance;
    goal.subject = as_string(account, account_expected(context));
    if (!context.accounts.contains(goal.subject)) expect_failed(account, account_expected(context));
    goal.balance = as_integer(balance, -kAmountMax, kAmountMax);
  }
  return goal;
}

void parse_goals(const Node& node, const Context& context, bool reachable, Expect& expect) {
  if (!node.value->is_array()) {
    expect_failed(node, "an array of reachability goals, each " + std::string(kGoalShapes));
  }
  for (size_t i = 0; i < node.value->size(); ++i) {
    const Node item{&(*node.value)[i], child_pointer(node.pointer, i)};
    if (expect.goals.size() == kGoalsMax) {
      fail(item.pointer, "expected at most " + std::to_string(kGoalsMax) +
                             " reachability goals in all (reachable and unreachable)");
    }
    expect.goals.push_back(parse_goal(item, context, reachable));
  }
}

constexpr std::array<std::string_view, 13> kExpectKeys = {
    "balances",    "transfers",     "published",    "sends",   "effects",
    "dedupe_hits", "dead_lettered", "error_queued", "dropped", "redeliveries",
    "violations",  "reachable",     "unreachable"};

Expect parse_expect(const Node& node, const Context& context) {
  as_object(node, "an object of expectations");
  check_keys(node, kExpectKeys, "unknown key");
  Expect expect;
  parse_expect_maps(node, context, expect);
  parse_expect_counts(node, expect);
  if (const Node violations = field(node, "violations"); violations.value != nullptr) {
    expect.violations = parse_violations(violations);
  }
  if (const Node goals = field(node, "reachable"); goals.value != nullptr) {
    parse_goals(goals, context, true, expect);
  }
  if (const Node goals = field(node, "unreachable"); goals.value != nullptr) {
    parse_goals(goals, context, false, expect);
  }
  return expect;
}

}  // namespace inboxsim::scenario_parse
