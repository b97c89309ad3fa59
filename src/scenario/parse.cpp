// How a scenario file becomes a Scenario: bytes -> checked text -> JSON -> validated fields.
//
// Validation throws a file-local Failure at the first problem and the two public functions
// catch it: unwinding is the shortest way out of a deep check, and it never crosses the API.
// Every check reads only the keys it knows, so a hostile file cannot make it recurse or loop
// beyond the size and nesting limits below.
#include "scenario/parse.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <string_view>
#include <vector>

#include "domain/participants.h"
#include "domain/topology.h"
#include "kernel/text.h"
#include "scenario/runner.h"

namespace inboxsim {

namespace {

using json = nlohmann::json;

// The file size bounds everything else: steps, accounts and the work a parse can do.
constexpr size_t kFileBytesMax = 16 * 1024 * 1024;
// A valid scenario nests five levels deep; the limit only stops stack-exhaustion attacks.
constexpr size_t kNestingDepthMax = 64;
constexpr size_t kNameBytesMax = 256;
// Long enough to jump past any retention window, short enough that a million steps of it
// still fit in an int64 clock.
constexpr int64_t kDurationMsMax = 1'000'000'000'000;
constexpr int64_t kRestartAfterMsMax = 1'000'000'000;
// Enough for a poison message: a handler failing more often than any delivery limit allows.
constexpr int64_t kNackTimesMax = 1'000'000;
constexpr int64_t kOccurrenceMax = 1'000'000;
// Offending values and name lists are shortened in messages so that a message stays one line.
constexpr size_t kGotBytesMax = 60;
constexpr size_t kListedNamesMax = 12;

struct Failure {
  std::string pointer;
  std::string expected;
};

[[noreturn]] void fail(std::string pointer, std::string expected) {
  throw Failure{std::move(pointer), std::move(expected)};
}

// A JSON value and where it is. `value` is null when the key is absent.
struct Node {
  const json* value = nullptr;
  std::string pointer;
};

std::string child_pointer(const std::string& pointer, std::string_view key) {
  return pointer + "/" + json_pointer_token(key);
}

std::string child_pointer(const std::string& pointer, size_t index) {
  return pointer + "/" + std::to_string(index);
}

// Returns the member `key` of an object node, with a null value when absent.
Node field(const Node& object, std::string_view key) {
  const auto it = object.value->find(std::string(key));
  if (it == object.value->end()) return Node{nullptr, child_pointer(object.pointer, key)};
  return Node{&*it, child_pointer(object.pointer, key)};
}

// Cuts `text` to at most `bytes_max` bytes without splitting a UTF-8 sequence.
std::string shorten(std::string text, size_t bytes_max) {
  if (text.size() <= bytes_max) return text;
  size_t end = bytes_max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0U) == 0x80U) --end;
  return text.substr(0, end) + "...";
}

std::string quote_json(std::string_view text) {
  return shorten(json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace),
                 kGotBytesMax);
}

// Describes a value for the "(got ...)" part of a message.
std::string describe(const json* value) {
  if (value == nullptr) return "missing";
  switch (value->type()) {
    case json::value_t::object: return "got an object";
    case json::value_t::array: return "got an array";
    case json::value_t::null: return "got null";
    case json::value_t::string: return "got " + quote_json(value->get_ref<const std::string&>());
    default: return "got " + shorten(value->dump(), kGotBytesMax);
  }
}

[[noreturn]] void expect_failed(const Node& node, std::string_view expected) {
  fail(node.pointer, "expected " + std::string(expected) + " (" + describe(node.value) + ")");
}

template <typename Names>
std::string join(const Names& names) {
  std::string text;
  size_t count = 0;
  for (const auto& name : names) {
    if (count == kListedNamesMax) return text + ", ...";
    if (count > 0) text += ", ";
    text += name;
    ++count;
  }
  return text;
}

const json& as_object(const Node& node, std::string_view expected) {
  if (node.value == nullptr || !node.value->is_object()) expect_failed(node, expected);
  return *node.value;
}

const std::string& as_string(const Node& node, std::string_view expected) {
  if (node.value == nullptr || !node.value->is_string()) expect_failed(node, expected);
  return node.value->get_ref<const std::string&>();
}

// A name shows up as a lane, a file name and in every line that mentions it: 1 to
// kNameBytesMax bytes, no control characters.
std::string as_name(const Node& node, std::string_view expected) {
  const std::string& text = as_string(node, expected);
  if (text.empty() || text.size() > kNameBytesMax || has_control_characters(text)) {
    expect_failed(node, std::string(expected) + " without control characters");
  }
  return text;
}

bool as_bool(const Node& node) {
  if (node.value == nullptr || !node.value->is_boolean()) expect_failed(node, "true or false");
  return node.value->get<bool>();
}

std::string integer_range(int64_t low, int64_t high) {
  return "an integer from " + std::to_string(low) + " to " + std::to_string(high);
}

// Accepts only JSON integers (2.0 and 1e3 are floats) within [low, high].
int64_t as_integer(const Node& node, int64_t low, int64_t high) {
  const json* value = node.value;
  if (value == nullptr || !value->is_number_integer()) {
    expect_failed(node, integer_range(low, high));
  }
  if (value->is_number_unsigned() && value->get<uint64_t>() > static_cast<uint64_t>(high)) {
    expect_failed(node, integer_range(low, high));
  }
  const auto number = value->get<int64_t>();
  if (number < low || number > high) expect_failed(node, integer_range(low, high));
  return number;
}

// Returns the enum value whose name `parse` accepts, or fails listing `names`.
template <typename Parse>
auto as_choice(const Node& node, Parse parse, const std::string& names) {
  const std::string expected = "one of " + names;
  const std::string& text = as_string(node, expected);
  const auto parsed = parse(text);
  if (!parsed) expect_failed(node, expected);
  return *parsed;
}

// Fails at the first key of `object` that is not in `allowed`; `why` ends the message.
void check_keys(const Node& object, std::span<const std::string_view> allowed,
                std::string_view why) {
  for (auto it = object.value->begin(); it != object.value->end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end()) {
      // Every key: a key list is the program's own, short, and a cut one would hide the key
      // the user meant.
      std::string keys;
      for (const std::string_view key : allowed) keys += (keys.empty() ? "" : ", ") + std::string(key);
      fail(child_pointer(object.pointer, it.key()),
           "expected one of the keys " + keys + " (" + std::string(why) + ")");
    }
  }
}

// What the whole file declares, so that a step or an expectation can name it in any order.
struct Context {
  Config config;  // the file's own, for the instance counts a fault may name
  std::map<std::string, AccountSpec> accounts;
  std::set<std::string> declared_transfers;
  std::map<std::string, std::string> transfer_pointers;  // id -> where it was declared
};

std::string account_expected(const Context& context) {
  std::vector<std::string_view> names;
  for (const auto& entry : context.accounts) names.push_back(entry.first);
  return "an account named in /accounts: " + join(names);
}

std::string transfer_expected(const Context& context) {
  if (context.declared_transfers.empty()) return "the id of a transfer step (this file has none)";
  return "the id of a transfer step: " + join(context.declared_transfers);
}

// Lists the names of the first `count` values of an enum, for "expected one of ..." texts.
template <typename Enum>
std::string enum_names(size_t count, std::string_view (*name)(Enum)) {
  std::vector<std::string_view> names;
  for (size_t i = 0; i < count; ++i) names.push_back(name(static_cast<Enum>(i)));
  return join(names);
}

// ---- Accounts and config ----------------------------------------------------------------------

constexpr std::array<std::string_view, 2> kAccountKeys = {"balance", "closed"};

AccountSpec parse_account(const Node& node) {
  AccountSpec account;
  if (node.value->is_object()) {
    check_keys(node, kAccountKeys, "unknown key");
    if (const Node balance = field(node, "balance"); balance.value != nullptr) {
      account.balance = as_integer(balance, 0, kAmountMax);
    }
    if (const Node closed = field(node, "closed"); closed.value != nullptr) {
      account.closed = as_bool(closed);
    }
    return account;
  }
  if (!node.value->is_number_integer()) {
    expect_failed(node, integer_range(0, kAmountMax) + " or {\"balance\": N, \"closed\": true}");
  }
  account.balance = as_integer(node, 0, kAmountMax);
  return account;
}

std::map<std::string, AccountSpec> parse_accounts(const Node& node) {
  const json& object = as_object(node, "an object of accounts, name -> opening balance");
  if (object.empty()) fail(node.pointer, "expected at least one account (got an empty object)");
  std::map<std::string, AccountSpec> accounts;
  int64_t total = 0;
  for (auto it = object.begin(); it != object.end(); ++it) {
    const Node account{&*it, child_pointer(node.pointer, it.key())};
    if (it.key().empty() || it.key().size() > kNameBytesMax || has_control_characters(it.key())) {
      fail(account.pointer, "expected an account name of 1 to " + std::to_string(kNameBytesMax) +
                                " bytes without control characters (got " + quote_json(it.key()) +
                                ")");
    }
    accounts[it.key()] = parse_account(account);
    // The bank's total must stay a JSON-safe integer too: the invariants add balances up.
    total += accounts[it.key()].balance;
    if (total > kAmountMax) {
      fail(account.pointer, "expected opening balances that add up to at most " +
                                std::to_string(kAmountMax) + " (this one brings the total to " +
                                std::to_string(total) + ")");
    }
  }
  return accounts;
}

Config parse_config(const Node& node) {
  const json& object = as_object(node, "an object of config keys and values");
  Config config;
  const auto& keys = config_keys();
  for (auto it = object.begin(); it != object.end(); ++it) {
    const Node value{&*it, child_pointer(node.pointer, it.key())};
    if (std::find(keys.begin(), keys.end(), it.key()) == keys.end()) {
      fail(value.pointer, "expected one of the keys " + join(keys) + " (unknown key)");
    }
    const std::string expected = config_set(config, it.key(), *it);
    if (!expected.empty()) expect_failed(value, expected);
  }
  return config;
}

// ---- Steps --------------------------------------------------------------------------------------

std::string as_account(const Node& node, const Context& context) {
  const std::string expected = account_expected(context);
  const std::string& name = as_string(node, expected);
  if (!context.accounts.contains(name)) expect_failed(node, expected);
  return name;
}

std::string as_declared_transfer(const Node& node, const Context& context) {
  const std::string expected = transfer_expected(context);
  const std::string& id = as_string(node, expected);
  if (!context.declared_transfers.contains(id)) expect_failed(node, expected);
  return id;
}

constexpr std::array<std::string_view, 4> kTransferKeys = {"id", "from", "to", "amount"};

TransferSpec parse_transfer(const Node& node, Context& context) {
  as_object(node, "an object with keys id, from, to, amount");
  check_keys(node, kTransferKeys, "unknown key");
  TransferSpec transfer;
  const Node id = field(node, "id");
  transfer.id = as_name(id, "a transfer id of 1 to " + std::to_string(kNameBytesMax) + " bytes");
  const auto [first, inserted] = context.transfer_pointers.emplace(transfer.id, id.pointer);
  if (!inserted) {
    fail(id.pointer, "expected a transfer id not used before (got " + quote_json(transfer.id) +
                         ", already declared at " + first->second + ")");
  }
  transfer.from = as_account(field(node, "from"), context);
  const Node to = field(node, "to");
  transfer.to = as_account(to, context);
  if (transfer.to == transfer.from) expect_failed(to, "an account other than \"from\"");
  transfer.amount = as_integer(field(node, "amount"), 1, kAmountMax);
  return transfer;
}

constexpr std::array<std::string_view, 3> kMatchKeys = {"type", "transfer", "occurrence"};

Match parse_match(const Node& node, const Context& context) {
  as_object(node, "a match: an object with keys type, transfer, occurrence");
  check_keys(node, kMatchKeys, "unknown key");
  Match match;
  const Node type = field(node, "type");
  const Node transfer = field(node, "transfer");
  if (type.value == nullptr && transfer.value == nullptr) {
    fail(node.pointer, "expected a match with \"type\" or \"transfer\" (got neither)");
  }
  if (type.value != nullptr) {
    match.type =
        as_choice(type, parse_message_type, enum_names(kMessageTypeCount, message_type_name));
  }
  if (transfer.value != nullptr) match.transfer = as_declared_transfer(transfer, context);
  if (const Node occurrence = field(node, "occurrence"); occurrence.value != nullptr) {
    match.occurrence = as_integer(occurrence, 1, kOccurrenceMax);
  }
  return match;
}

// Reads the name of one of `points` of `service` (its crash points, or its pause points).
CrashPoint as_point(const Node& node, ServiceId service, std::span<const CrashPoint> points) {
  std::vector<std::string_view> names;
  for (const CrashPoint point : points) names.push_back(crash_point_name(point));
  const std::string expected =
      "one of " + join(names) + " for " + std::string(service_name(service));
  const std::string& text = as_string(node, expected);
  const auto point = parse_crash_point(text);
  if (!point || std::find(points.begin(), points.end(), *point) == points.end()) {
    expect_failed(node, expected);
  }
  return *point;
}

ServiceId as_service(const Node& node) {
  return as_choice(node, parse_service, "account-service, transfer-service");
}

// The keys each fault kind takes. The first kFaultKindCount rows are indexed by FaultKind; the
// last two are the fault spellings of the advance and drop_index steps (docs/contract.md §2 lists them).
struct FaultKeys {
  std::string_view kind;
  std::array<std::string_view, 7> keys;
  size_t key_count;
};
constexpr size_t kFaultAdvanceRow = kFaultKindCount;
constexpr size_t kFaultDropIndexRow = kFaultKindCount + 1;
constexpr std::array<FaultKeys, kFaultKindCount + 2> kFaultKeysByKind = {{
    {"crash", {"kind", "service", "instance", "at", "match", "restart_after_ms"}, 6},
    {"drop_ack", {"kind", "service", "instance", "match"}, 4},
    {"drop_connection", {"kind", "service", "instance", "match"}, 4},
    {"nack", {"kind", "service", "instance", "match", "times", "cause"}, 6},
    {"duplicate", {"kind", "match", "by"}, 3},
    {"lose_confirm", {"kind", "match"}, 2},
    {"delay", {"kind", "match", "ms"}, 3},
    {"pause", {"kind", "service", "instance", "at", "ms", "match"}, 6},
    {"publish_nack", {"kind", "match"}, 2},
    {"advance", {"kind", "ms"}, 2},
    {"drop_index", {"kind", "index"}, 2},
}};
constexpr std::array<std::string_view, 11> kAllFaultKeys = {
    "kind",  "service", "instance", "at",   "match", "ms", "restart_after_ms",
    "times", "index",   "by",       "cause"};

size_t as_fault_row(const Node& node) {
  std::vector<std::string_view> kinds;
  for (const auto& row : kFaultKeysByKind) kinds.push_back(row.kind);
  const std::string expected = "one of " + join(kinds);
  const std::string& text = as_string(node, expected);
  for (size_t row = 0; row < kFaultKeysByKind.size(); ++row) {
    if (kFaultKeysByKind[row].kind == text) return row;
  }
  expect_failed(node, expected);
}

// `instance` names one of the service's instances, as many as the file's config runs.
int64_t as_instance(const Node& node, ServiceId service, const Context& context) {
  const int64_t count = context.config.instances(service == ServiceId::account);
  const std::string key =
      service == ServiceId::account ? "account.instances" : "transfer.instances";
  const int64_t instance = as_integer(node, 1, kInstancesMax);
  if (instance > count) {
    expect_failed(node, "an instance from 1 to " + std::to_string(count) + " (" + key + " is " +
                            std::to_string(count) + ")");
  }
  return instance;
}

FaultSpec parse_fault(const Node& node, FaultKind kind, const Context& context) {
  FaultSpec fault;
  fault.kind = kind;
  // crash, pause and drop_connection act on a service; for them the match is optional.
  const bool on_service =
      kind == FaultKind::crash || kind == FaultKind::drop_connection || kind == FaultKind::pause;
  const Node service = field(node, "service");
  if (on_service || service.value != nullptr) fault.service = as_service(service);
  if (const Node instance = field(node, "instance"); instance.value != nullptr) {
    if (!fault.service)
      fail(node.pointer, "expected \"service\" with \"instance\" (got no service)");
    fault.instance = as_instance(instance, *fault.service, context);
  }
  if (kind == FaultKind::crash) {
    fault.at = as_point(field(node, "at"), *fault.service, crash_points_of(*fault.service));
  } else if (kind == FaultKind::pause) {
    fault.at = as_point(field(node, "at"), *fault.service, pause_points_of(*fault.service));
  }
  const Node match = field(node, "match");
  if (match.value != nullptr || !on_service) {
    fault.match = parse_match(match, context);
    fault.has_match = true;
  }
  if (kind == FaultKind::delay) fault.ms = as_integer(field(node, "ms"), 0, kDurationMsMax);
  if (kind == FaultKind::pause) fault.ms = as_integer(field(node, "ms"), 1, kDurationMsMax);
  // check_keys has already rejected the keys this kind does not take.
  if (const Node restart = field(node, "restart_after_ms"); restart.value != nullptr) {
    fault.restart_after_ms = as_integer(restart, 0, kRestartAfterMsMax);
  }
  if (const Node times = field(node, "times"); times.value != nullptr) {
    fault.times = as_integer(times, 1, kNackTimesMax);
  }
  if (const Node cause = field(node, "cause"); cause.value != nullptr) {
    fault.cause =
        as_choice(cause, parse_failure_cause, enum_names(kFailureCauseCount, failure_cause_name));
  }
  if (const Node by = field(node, "by"); by.value != nullptr) {
    fault.copied_by =
        as_choice(by, parse_copy_source, enum_names(kCopySourceCount, copy_source_name));
  }
  return fault;
}

IndexName as_index(const Node& node) {
  return as_choice(node, parse_index_name,
                   "transfer.processed_messages, account.ledger, "
                   "account.inbox_state");
}

Step parse_fault_step(const Node& node, const Context& context) {
  as_object(node, "a fault: an object with a \"kind\"");
  check_keys(node, kAllFaultKeys, "unknown key");
  const size_t row = as_fault_row(field(node, "kind"));
  const FaultKeys& keys = kFaultKeysByKind[row];
  const std::string why = "not used by a " + std::string(keys.kind) + " fault";
  check_keys(node, std::span(keys.keys.data(), keys.key_count), why);
  Step step;
  if (row == kFaultAdvanceRow) {
    step.kind = StepKind::advance;
    step.ms = as_integer(field(node, "ms"), 0, kDurationMsMax);
  } else if (row == kFaultDropIndexRow) {
    step.kind = StepKind::drop_index;
    step.index = as_index(field(node, "index"));
  } else {
    step.kind = StepKind::fault;
    step.fault = parse_fault(node, static_cast<FaultKind>(row), context);
  }
  return step;
}

constexpr std::array<std::string_view, 2> kRunKeys = {"until", "ms"};
constexpr std::array<std::string_view, 1> kAdvanceKeys = {"ms"};

Step parse_run(const Node& node) {
  as_object(node, "{\"until\": \"quiescent\"} or {\"ms\": N}");
  check_keys(node, kRunKeys, "unknown key");
  const Node until = field(node, "until");
  const Node ms = field(node, "ms");
  if (until.value != nullptr && ms.value != nullptr) {
    fail(node.pointer, "expected either \"until\" or \"ms\", not both");
  }
  Step step;
  step.kind = StepKind::run;
  if (ms.value != nullptr) {
    step.until_quiescent = false;
    step.ms = as_integer(ms, 0, kDurationMsMax);
  } else if (until.value != nullptr && as_string(until, "\"quiescent\"") != "quiescent") {
    expect_failed(until, "\"quiescent\"");
  }
  return step;
}

Step parse_advance(const Node& node) {
  as_object(node, "{\"ms\": N}");
  check_keys(node, kAdvanceKeys, "unknown key");
  Step step;
  step.kind = StepKind::advance;
  step.ms = as_integer(field(node, "ms"), 0, kDurationMsMax);
  return step;
}

constexpr std::array<std::string_view, 8> kStepKeys = {
    "transfer", "fault", "run", "advance", "drop_index", "redrive", "publish", "restore_index"};

Step parse_redrive(const Node& node, const Context& context) {
  std::vector<std::string> names = redrivable_queues(context.config);
  names.emplace_back("all");
  const std::string expected = "an error or dead-letter queue: one of " + join(names);
  const std::string& queue = as_string(node, expected);
  if (std::find(names.begin(), names.end(), queue) == names.end()) expect_failed(node, expected);
  Step step;
  step.kind = StepKind::redrive;
  step.queue = queue;
  return step;
}

constexpr std::array<std::string_view, 4> kPublishKeys = {"exchange", "routing_key",
                                                          "message_id", "body"};
constexpr std::array<std::string_view, 5> kEnvelopeKeys = {"messageId", "type", "transferId",
                                                           "occurredAt", "payload"};
constexpr std::array<std::string_view, 4> kPayloadKeys = {"from", "to", "amount", "reason"};

// A message published by hand (docs/contract.md §9.2), as RabbitMQ's management UI publishes one: an
// exchange, a routing key, the message-id property and a body, which must be an envelope of
// the bank's (docs/contract.md §1) about a transfer the story has.
Step parse_publish(const Node& node, const Context& context) {
  as_object(node, "{\"exchange\", \"routing_key\", \"message_id\", \"body\"}");
  check_keys(node, kPublishKeys, "unknown key");
  Step step;
  step.kind = StepKind::publish;
  step.exchange = "banking.events";
  if (const Node exchange = field(node, "exchange"); exchange.value != nullptr) {
    const std::string expected =
        "\"banking.events\" (the bank's topic exchange) or \"\" (the default exchange, which "
        "routes to the queue the routing key names)";
    step.exchange = as_string(exchange, expected);
    if (step.exchange != "banking.events" && !step.exchange.empty()) {
      expect_failed(exchange, expected);
    }
  }
  step.routing_key = as_string(field(node, "routing_key"), "a routing key (a string)");
  if (step.routing_key.size() > 255) {
    expect_failed(field(node, "routing_key"), "a routing key of at most 255 bytes");
  }
  Message& message = step.message;
  message.message_id = as_name(field(node, "message_id"),
                               "a message id of 1 to " + std::to_string(kNameBytesMax) + " bytes");
  const Node body = field(node, "body");
  as_object(body, "an envelope: {\"type\", \"transferId\", \"payload\": {\"from\", \"to\", "
                  "\"amount\"}}");
  check_keys(body, kEnvelopeKeys, "unknown key");
  if (const Node id = field(body, "messageId"); id.value != nullptr) {
    const std::string expected =
        "the same id as message_id (" + quote_json(message.message_id) +
        "): the bank's publishers set the envelope's messageId and the message-id property alike";
    if (as_string(id, expected) != message.message_id) expect_failed(id, expected);
  }
  message.type = as_choice(field(body, "type"), parse_message_type,
                           enum_names(kMessageTypeCount, message_type_name));
  message.transfer = as_declared_transfer(field(body, "transferId"), context);
  if (const Node at = field(body, "occurredAt"); at.value != nullptr) {
    message.occurred_at_ms = as_integer(at, 0, kDurationMsMax);
  }
  const Node payload = field(body, "payload");
  as_object(payload, "{\"from\", \"to\", \"amount\"}");
  check_keys(payload, kPayloadKeys, "unknown key");
  message.from = as_account(field(payload, "from"), context);
  message.to = as_account(field(payload, "to"), context);
  message.amount = as_integer(field(payload, "amount"), 0, kAmountMax);
  if (const Node reason = field(payload, "reason"); reason.value != nullptr) {
    message.reason = as_string(reason, "a string");
  }
  // Only where a consumer takes the type: a message of a type a MassTransit endpoint has no
  // consumer for goes to its `_skipped` queue, which the simulation does not model.
  const std::string_view own_key = routing_key(message.type);
  if (!step.exchange.empty() && step.routing_key != own_key) {
    expect_failed(field(node, "routing_key"),
                  "the routing key of " + std::string(message_type_name(message.type)) + " (" +
                      std::string(own_key) +
                      "): through banking.events, another key would hand a consumer a type it "
                      "has no consumer for (MassTransit's _skipped queue, not modelled)");
  }
  if (step.exchange.empty() && step.routing_key == participant::account_service &&
      !is_transfer_command(message.type)) {
    expect_failed(field(body, "type"),
                  "a type account-service consumes (Transfer.Requested, "
                  "Transfer.CreditRequested, Transfer.RefundRequested) for its queue");
  }
  return step;
}

Step parse_step(const Node& node, Context& context) {
  const std::string expected =
      "a step: an object with exactly one of the keys transfer, fault, run, advance, drop_index, "
      "redrive, publish, restore_index";
  const json& object = as_object(node, expected);
  check_keys(node, kStepKeys, "unknown step");
  if (object.size() != 1) {
    fail(node.pointer,
         "expected " + expected + " (got " + std::to_string(object.size()) + " keys)");
  }
  const std::string& key = object.begin().key();
  const Node body = field(node, key);
  Step step;
  if (key == "transfer") {
    step.kind = StepKind::transfer;
    step.transfer = parse_transfer(body, context);
  } else if (key == "fault") {
    step = parse_fault_step(body, context);
  } else if (key == "run") {
    step = parse_run(body);
  } else if (key == "advance") {
    step = parse_advance(body);
  } else if (key == "redrive") {
    step = parse_redrive(body, context);
  } else if (key == "publish") {
    step = parse_publish(body, context);
  } else if (key == "restore_index") {
    step.kind = StepKind::restore_index;
    step.index = as_index(body);
  } else {
    step.kind = StepKind::drop_index;
    step.index = as_index(body);
  }
  return step;
}

// Collects every transfer id the steps declare, before the other steps, so that a fault may
// match a transfer declared later in the file. Each transfer step is validated here, so that a
// malformed one is reported where it is, not at a fault that names it.
std::set<std::string> declared_transfer_ids(const Node& steps, const Context& context) {
  std::set<std::string> ids;
  if (steps.value == nullptr || !steps.value->is_array()) return ids;
  Context scratch = context;  // the real pass records where each id was declared
  for (size_t i = 0; i < steps.value->size(); ++i) {
    const json& step = (*steps.value)[i];
    if (!step.is_object() || !step.contains("transfer")) continue;
    ids.insert(parse_step(Node{&step, child_pointer(steps.pointer, i)}, scratch).transfer.id);
  }
  return ids;
}

std::vector<Step> parse_steps(const Node& node, Context& context) {
  if (!node.value->is_array()) expect_failed(node, "an array of steps");
  std::vector<Step> steps;
  steps.reserve(node.value->size());
  for (size_t i = 0; i < node.value->size(); ++i) {
    steps.push_back(parse_step(Node{&(*node.value)[i], child_pointer(node.pointer, i)}, context));
  }
  return steps;
}

// ---- Expectations -------------------------------------------------------------------------------

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
constexpr std::array<std::string_view, 6> kGoalKeys = {"broken",   "probe", "transfer",
                                                       "state",    "account", "balance"};
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
    if (transfer.value == nullptr) fail(node.pointer + "/transfer", "expected " + transfer_expected(context) + " beside \"state\"");
    if (state.value == nullptr) fail(node.pointer + "/state", "expected a saga state beside \"transfer\": one of " + enum_names(kSagaStateCount, saga_state_name));
    goal.kind = Goal::Kind::saga;
    goal.subject = as_string(transfer, transfer_expected(context));
    if (!context.declared_transfers.contains(goal.subject)) {
      expect_failed(transfer, transfer_expected(context));
    }
    goal.state = as_choice(state, parse_saga_state, enum_names(kSagaStateCount, saga_state_name));
  } else {
    if (account.value == nullptr) fail(node.pointer + "/account", "expected " + account_expected(context) + " beside \"balance\"");
    if (balance.value == nullptr) fail(node.pointer + "/balance", "expected " + integer_range(-kAmountMax, kAmountMax) + " beside \"account\"");
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
    "balances",      "transfers",    "published", "sends",        "effects",   "dedupe_hits",
    "dead_lettered", "error_queued", "dropped",   "redeliveries", "violations", "reachable",
    "unreachable"};

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

// ---- The whole file -----------------------------------------------------------------------------

constexpr std::array<std::string_view, 14> kTopKeys = {
    "name",     "title", "description", "setup",    "watch_for",   "why",  "lesson",
    "seed",     "config", "accounts",   "steps",    "expect",      "schedule", "checkpoints"};

// ---- Checkpoints --------------------------------------------------------------------------------

constexpr std::array<std::string_view, 2> kCheckpointKeys = {"after", "question"};
constexpr std::array<std::string_view, 4> kCheckpointMatchKeys = {"kind", "type", "transfer",
                                                                  "occurrence"};
constexpr size_t kCheckpointsMax = 64;
constexpr size_t kQuestionBytesMax = 1000;

// {"kind": KIND, "type"?, "transfer"?, "occurrence"?}: a checkpoint's "after", a "watch_for"'s
// "event".
EventSelector parse_event_selector(const Node& node, const Context& context) {
  as_object(node, "an object with keys kind, type, transfer, occurrence");
  check_keys(node, kCheckpointMatchKeys, "unknown key");
  std::string kinds;  // every one: join() would cut the list
  for (size_t i = 0; i < kEventKindCount; ++i) {
    kinds += (i > 0 ? ", " : "") + std::string(event_kind_name(static_cast<EventKind>(i)));
  }
  EventSelector selector;
  selector.kind = as_choice(field(node, "kind"), parse_event_kind, kinds);
  if (const Node type = field(node, "type"); type.value != nullptr) {
    selector.match.type =
        as_choice(type, parse_message_type, enum_names(kMessageTypeCount, message_type_name));
  }
  if (const Node transfer = field(node, "transfer"); transfer.value != nullptr) {
    selector.match.transfer = as_declared_transfer(transfer, context);
  }
  if (const Node occurrence = field(node, "occurrence"); occurrence.value != nullptr) {
    selector.match.occurrence = as_integer(occurrence, 1, kOccurrenceMax);
  }
  return selector;
}

// Text a teacher reads out (a question, a part of a description): 1 to `bytes_max` bytes,
// no control characters.
std::string as_class_text(const Node& node, std::string_view what, size_t bytes_max) {
  const std::string& text = as_string(node, std::string(what) + " (a string)");
  if (text.empty() || text.size() > bytes_max || has_control_characters(text)) {
    expect_failed(node, std::string(what) + " of 1 to " + std::to_string(bytes_max) +
                            " bytes without control characters");
  }
  return text;
}

// {"after": {"kind": KIND, "type"?, "transfer"?, "occurrence"?}, "question": TEXT}
Checkpoint parse_checkpoint(const Node& node, const Context& context) {
  as_object(node, "a checkpoint: {\"after\": {\"kind\": ..., \"type\": ..., \"transfer\": "
                  "...}, \"question\": ...}");
  check_keys(node, kCheckpointKeys, "unknown key");
  Checkpoint checkpoint;
  const EventSelector after = parse_event_selector(field(node, "after"), context);
  checkpoint.kind = after.kind;
  checkpoint.match = after.match;
  checkpoint.question =
      as_class_text(field(node, "question"), "the question to put to the class", kQuestionBytesMax);
  return checkpoint;
}

std::vector<Checkpoint> parse_checkpoints(const Node& node, const Context& context) {
  if (!node.value->is_array()) expect_failed(node, "an array of checkpoints");
  if (node.value->size() > kCheckpointsMax) {
    expect_failed(node, "at most " + std::to_string(kCheckpointsMax) + " checkpoints");
  }
  std::vector<Checkpoint> checkpoints;
  for (size_t i = 0; i < node.value->size(); ++i) {
    checkpoints.push_back(
        parse_checkpoint(Node{&(*node.value)[i], child_pointer(node.pointer, i)}, context));
  }
  return checkpoints;
}

// ---- A description in three parts ----------------------------------------------------------

constexpr std::array<std::string_view, 2> kWatchForKeys = {"event", "text"};
constexpr size_t kDescriptionPartBytesMax = 1000;  // a part is read out: a few sentences at most

// "setup": TEXT, "watch_for": {"event": SELECTOR, "text": TEXT}, "why": TEXT: all three or none,
// and not beside "description".
DescriptionParts parse_description_parts(const Node& root, const Context& context) {
  const Node setup = field(root, "setup");
  const Node watch_for = field(root, "watch_for");
  const Node why = field(root, "why");
  DescriptionParts parts;
  if (setup.value == nullptr && watch_for.value == nullptr && why.value == nullptr) return parts;
  if (const Node description = field(root, "description"); description.value != nullptr) {
    expect_failed(description, "either description or setup, watch_for and why, not both");
  }
  for (const Node* part : {&setup, &watch_for, &why}) {
    if (part->value == nullptr) {
      expect_failed(*part, "setup, watch_for and why together (this file has some of them)");
    }
  }
  parts.setup = as_class_text(setup, "what the story sets up", kDescriptionPartBytesMax);
  as_object(watch_for, "{\"event\": {\"kind\": ..., \"type\": ..., \"transfer\": ..., "
                       "\"occurrence\": ...}, \"text\": ...}");
  check_keys(watch_for, kWatchForKeys, "unknown key");
  parts.watch_for_event = parse_event_selector(field(watch_for, "event"), context);
  parts.watch_for =
      as_class_text(field(watch_for, "text"), "what to watch for", kDescriptionPartBytesMax);
  parts.why = as_class_text(why, "why it turns out so", kDescriptionPartBytesMax);
  return parts;
}

constexpr std::array<std::string_view, 6> kScheduleKeys = {"faults",   "fault_kinds", "choices",
                                                           "stepwise", "clock",       "actions"};
constexpr int64_t kScheduleFaultsMax = 16;
constexpr int64_t kChoiceMax = 65535;

// A hand action of the playground: {"at": N, one of publish, drop_index, restore_index,
// redrive, advance}.
Schedule::Action parse_action(const Node& node, Context& context, size_t choices) {
  const std::string expected =
      "a hand action: {\"at\": N, and one of publish, drop_index, restore_index, redrive, "
      "advance}";
  const json& object = as_object(node, expected);
  Schedule::Action action;
  action.at = static_cast<size_t>(as_integer(field(node, "at"), 0, static_cast<int64_t>(choices)));
  json rest = object;
  rest.erase("at");
  if (rest.size() != 1) fail(node.pointer, "expected " + expected);
  const std::string key = rest.begin().key();
  if (key != "publish" && key != "drop_index" && key != "restore_index" && key != "redrive" &&
      key != "advance") {
    fail(child_pointer(node.pointer, key),
         "expected one of publish, drop_index, restore_index, redrive, advance (got " +
             quote_json(key) + ")");
  }
  action.step = parse_step(Node{&rest, node.pointer}, context);
  return action;
}

// An explored order (docs/contract.md §8.3): {"faults": K, "fault_kinds": [...], "choices": [...]}, and
// the playground's "stepwise", "clock" and "actions" (§9.1).
Schedule parse_schedule(const Node& node, Context& context) {
  as_object(node, "a schedule: an object with \"faults\", \"fault_kinds\" and \"choices\"");
  check_keys(node, kScheduleKeys, "unknown key");
  Schedule schedule;
  if (const Node faults = field(node, "faults"); faults.value != nullptr) {
    schedule.faults = as_integer(faults, 0, kScheduleFaultsMax);
  }
  const std::string kinds = fault_kinds_text(explorable_fault_kinds());
  if (const Node list = field(node, "fault_kinds"); list.value != nullptr) {
    if (!list.value->is_array()) expect_failed(list, "an array of fault kinds (" + kinds + ")");
    for (size_t i = 0; i < list.value->size(); ++i) {
      const Node item{&(*list.value)[i], child_pointer(list.pointer, i)};
      const FaultKind kind = as_choice(item, parse_fault_kind, kinds);
      if (!explorable_fault_kind(kind)) expect_failed(item, "one of " + kinds);
      schedule.fault_kinds[static_cast<size_t>(kind)] = true;
    }
  }
  const Node choices = field(node, "choices");
  if (choices.value == nullptr || !choices.value->is_array()) {
    expect_failed(choices, "an array of choices (integers from 0 to " +
                               std::to_string(kChoiceMax) + ")");
  }
  schedule.choices.reserve(choices.value->size());
  for (size_t i = 0; i < choices.value->size(); ++i) {
    const Node item{&(*choices.value)[i], child_pointer(choices.pointer, i)};
    schedule.choices.push_back(static_cast<uint32_t>(as_integer(item, 0, kChoiceMax)));
  }
  const auto count = static_cast<int64_t>(schedule.choices.size());
  if (const Node stepwise = field(node, "stepwise"); stepwise.value != nullptr) {
    schedule.stepwise = static_cast<size_t>(as_integer(stepwise, 0, count));
  }
  if (const Node clock = field(node, "clock"); clock.value != nullptr) {
    schedule.clocked = as_bool(clock);
  }
  if (const Node actions = field(node, "actions"); actions.value != nullptr) {
    if (!actions.value->is_array()) expect_failed(actions, "an array of hand actions");
    for (size_t i = 0; i < actions.value->size(); ++i) {
      const Node item{&(*actions.value)[i], child_pointer(actions.pointer, i)};
      schedule.actions.push_back(parse_action(item, context, schedule.choices.size()));
      if (schedule.actions.size() > 1 && schedule.actions.back().at < schedule.actions[i - 1].at) {
        fail(child_pointer(item.pointer, "at"),
             "expected the actions in the order they are taken (at no less than " +
                 std::to_string(schedule.actions[i - 1].at) + ")");
      }
    }
  }
  return schedule;
}

std::string optional_string(const Node& object, std::string_view key, std::string fallback) {
  const Node node = field(object, key);
  if (node.value == nullptr) return fallback;
  return as_string(node, "a string");
}

Scenario parse_root(const json& root, const std::string& file_label) {
  const Node node{&root, ""};
  if (!root.is_object()) {
    fail("", "expected a JSON object at the top level (" + describe(&root) + ")");
  }
  check_keys(node, kTopKeys, "unknown key");
  Scenario scenario;
  scenario.file = file_label;
  scenario.name = std::filesystem::path(file_label).stem().string();
  if (const Node name = field(node, "name"); name.value != nullptr) {
    scenario.name =
        as_name(name, "a scenario name of 1 to " + std::to_string(kNameBytesMax) + " bytes");
  }
  scenario.title = optional_string(node, "title", "");
  scenario.description = optional_string(node, "description", "");
  scenario.lesson = optional_string(node, "lesson", "");
  if (const Node seed = field(node, "seed"); seed.value != nullptr) {
    scenario.seed = static_cast<uint64_t>(as_integer(seed, 0, kAmountMax));
  }
  if (const Node config = field(node, "config"); config.value != nullptr) {
    scenario.config = parse_config(config);
  }
  Context context;
  context.config = scenario.config;
  context.accounts = parse_accounts(field(node, "accounts"));
  const Node steps = field(node, "steps");
  context.declared_transfers = declared_transfer_ids(steps, context);
  if (steps.value != nullptr) scenario.steps = parse_steps(steps, context);
  if (const Node expect = field(node, "expect"); expect.value != nullptr) {
    scenario.expect = parse_expect(expect, context);
  }
  if (const Node schedule = field(node, "schedule"); schedule.value != nullptr) {
    scenario.schedule = parse_schedule(schedule, context);
    if (const std::optional<Refusal> refusal = clockless_refusal(scenario);
        refusal && !scenario.schedule->clocked) {
      fail(refusal->pointer, "expected " + refusal->expected +
                                 " (this file has a schedule without \"clock\": true)");
    }
  }
  if (const Node checkpoints = field(node, "checkpoints"); checkpoints.value != nullptr) {
    scenario.checkpoints = parse_checkpoints(checkpoints, context);
  }
  if (const std::optional<Refusal> refusal = broker_refusal(scenario)) {
    fail(refusal->pointer, "expected " + refusal->expected);
  }
  scenario.description_parts = parse_description_parts(node, context);
  scenario.accounts = std::move(context.accounts);
  return scenario;
}

// ---- Bytes to JSON ------------------------------------------------------------------------------

std::string position_text(std::string_view text, size_t offset) {
  const size_t end = std::min(offset, text.size());
  const auto line = std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(end), '\n');
  const size_t line_start = text.rfind('\n', end == 0 ? 0 : end - 1);
  const size_t column =
      line_start == std::string_view::npos || end == 0 ? end + 1 : end - line_start;
  return "line " + std::to_string(line + 1) + ", column " + std::to_string(column);
}

// Returns the offset of the first byte that does not begin a well-formed UTF-8 sequence (no
// overlong forms, no surrogates, nothing above U+10FFFF), or npos.
size_t invalid_utf8_offset(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<uint32_t>(static_cast<unsigned char>(text[i]));
    if (lead < 0x80U) {
      ++i;
      continue;
    }
    size_t length = 0;
    uint32_t code = 0;
    uint32_t code_min = 0;
    if ((lead & 0xE0U) == 0xC0U) {
      length = 2, code = lead & 0x1FU, code_min = 0x80U;
    } else if ((lead & 0xF0U) == 0xE0U) {
      length = 3, code = lead & 0x0FU, code_min = 0x800U;
    } else if ((lead & 0xF8U) == 0xF0U) {
      length = 4, code = lead & 0x07U, code_min = 0x10000U;
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    for (size_t k = 1; k < length; ++k) {
      const auto next = static_cast<uint32_t>(static_cast<unsigned char>(text[i + k]));
      if ((next & 0xC0U) != 0x80U) return i;
      code = (code << 6U) | (next & 0x3FU);
    }
    if (code < code_min || code > 0x10FFFFU || (code >= 0xD800U && code <= 0xDFFFU)) return i;
    i += length;
  }
  return std::string_view::npos;
}

}  // namespace

size_t too_deep_offset(std::string_view text) {
  size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kNestingDepthMax) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

namespace {

// Rejects, before any JSON parsing, what the parser should never see.
void check_text(std::string_view text) {
  if (text.size() > kFileBytesMax) {
    fail("", "larger than " + std::to_string(kFileBytesMax / (1024 * 1024)) + " MiB");
  }
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) fail("", "empty file");
  // A JSON text never holds a raw NUL; nlohmann's lexer would stop at one and ignore the rest.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    fail("", "not valid JSON: a NUL byte at " + position_text(text, nul));
  }
  if (const size_t bad = invalid_utf8_offset(text); bad != std::string_view::npos) {
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X",
                  static_cast<unsigned>(static_cast<unsigned char>(text[bad])));
    fail("", "not valid UTF-8: byte " + std::string(byte) + " at " + position_text(text, bad));
  }
  if (const size_t deep = too_deep_offset(text); deep != std::string_view::npos) {
    fail("", "nested deeper than " + std::to_string(kNestingDepthMax) + " levels at " +
                 position_text(text, deep));
  }
}

// Replaces control characters, so that a message stays on one line.
std::string printable(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20U || c == 0x7F) c = ' ';
  }
  return text;
}

std::string json_error_text(const json::exception& error) {
  std::string text = error.what();
  // nlohmann prefixes "[json.exception.parse_error.101] parse error at "; only the rest is news.
  if (const size_t end = text.find("] "); end != std::string::npos) text.erase(0, end + 2);
  constexpr std::string_view kPrefix = "parse error at ";
  if (text.starts_with(kPrefix)) text.erase(0, kPrefix.size());
  return "not valid JSON: " + printable(text);
}

// A SAX pass that finds a key appearing twice in one object: nlohmann keeps the last value
// silently, which would hide a typo like a second "amount". It runs before the real parse, in
// time linear in the text; nlohmann's callback parser, which did this before, rescans the parent
// container after every object and made a large file quadratic.
class DuplicateKeyFinder : public nlohmann::json_sax<json> {
 public:
  bool null() override { return element_done(); }
  bool boolean(bool /*value*/) override { return element_done(); }
  bool number_integer(number_integer_t /*value*/) override { return element_done(); }
  bool number_unsigned(number_unsigned_t /*value*/) override { return element_done(); }
  bool number_float(number_float_t /*value*/, const string_t& /*text*/) override {
    return element_done();
  }
  bool string(string_t& /*value*/) override { return element_done(); }
  bool binary(binary_t& /*value*/) override { return element_done(); }
  bool start_object(std::size_t /*size*/) override { return push_frame(/*is_object=*/true); }
  bool start_array(std::size_t /*size*/) override { return push_frame(/*is_object=*/false); }
  bool end_object() override { return pop_frame(); }
  bool end_array() override { return pop_frame(); }
  bool key(string_t& key) override {
    Frame& frame = frames_.back();
    frame.key = key;
    if (!frame.keys.insert(key).second && !duplicate_pointer_) {
      std::string pointer;
      for (const Frame& outer : frames_) {
        pointer = outer.is_object ? child_pointer(pointer, outer.key)
                                  : child_pointer(pointer, outer.index);
      }
      duplicate_pointer_ = pointer;
    }
    return true;
  }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& /*error*/) override {
    return false;  // the real parse reports syntax errors, with its message
  }

  const std::optional<std::string>& duplicate_pointer() const { return duplicate_pointer_; }

 private:
  struct Frame {
    bool is_object = false;
    size_t index = 0;  // arrays: the index of the element being parsed
    std::string key;   // objects: the key being parsed
    std::set<std::string> keys;
  };

  bool push_frame(bool is_object) {
    frames_.emplace_back();
    frames_.back().is_object = is_object;
    return true;
  }
  bool pop_frame() {
    frames_.pop_back();
    return element_done();
  }
  bool element_done() {
    if (!frames_.empty() && !frames_.back().is_object) ++frames_.back().index;
    return true;
  }

  std::vector<Frame> frames_;
  std::optional<std::string> duplicate_pointer_;
};

json parse_json(const std::string& text) {
  check_text(text);
  json root;
  try {
    root = json::parse(text, /*callback=*/nullptr, /*allow_exceptions=*/true,
                       /*ignore_comments=*/false);
  } catch (const json::exception& error) {
    fail("", json_error_text(error));
  }
  DuplicateKeyFinder finder;
  json::sax_parse(text, &finder);
  if (finder.duplicate_pointer()) {
    fail(*finder.duplicate_pointer(), "expected each key at most once in an object (got it twice)");
  }
  return root;
}

ParseResult failed(const std::string& file, std::string pointer, std::string expected) {
  return ParseResult{std::nullopt, InputError{file, std::move(pointer), std::move(expected)}};
}

}  // namespace

std::string json_pointer_token(std::string_view key) {
  std::string token;
  token.reserve(key.size());
  for (const char c : key) {
    if (c == '~') {
      token += "~0";
    } else if (c == '/') {
      token += "~1";
    } else {
      token += c;
    }
  }
  return token;
}

std::string InputError::message() const {
  std::string line = file + ": ";
  if (!pointer.empty()) line += pointer + ": ";
  return printable(line + expected);
}

ParseResult parse_scenario_text(const std::string& text, const std::string& file_label) {
  try {
    const json root = parse_json(text);
    return ParseResult{parse_root(root, file_label), std::nullopt};
  } catch (const Failure& failure) {
    return failed(file_label, failure.pointer, failure.expected);
  }
}

ParseResult parse_scenario_file(const std::string& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (status.type() == std::filesystem::file_type::not_found) {
    return failed(path, "", "cannot read: no such file");
  }
  if (error) return failed(path, "", "cannot read: " + error.message());
  if (std::filesystem::is_directory(status)) return failed(path, "", "is a directory");
  if (!std::filesystem::is_regular_file(status)) return failed(path, "", "not a regular file");
  const auto size_bytes = std::filesystem::file_size(path, error);
  if (error) return failed(path, "", "cannot read: " + error.message());
  if (size_bytes > kFileBytesMax) {
    return failed(path, "",
                  "larger than " + std::to_string(kFileBytesMax / (1024 * 1024)) + " MiB");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return failed(path, "", "cannot read: cannot open the file");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) return failed(path, "", "cannot read: I/O error");
  return parse_scenario_text(text, path);
}

}  // namespace inboxsim
