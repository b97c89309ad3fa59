// The parser's steps: transfers, faults, runs, clock advances, redrives, hand publishes and the
// other steps of a scenario's "steps" array, each checked where it stands.
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

// What a fault's "kind" may name: the fault kinds (kFaultKinds, domain/scenario.h: the rows
// indexed by FaultKind), then the fault spellings of the advance and drop_index steps
// (docs/contract.md §2 lists them).
struct FaultRow {
  std::string_view kind;
  std::span<const std::string_view> keys;
};
constexpr std::array<std::string_view, 2> kFaultAdvanceKeys = {"kind", "ms"};
constexpr std::array<std::string_view, 2> kFaultDropIndexKeys = {"kind", "index"};
constexpr size_t kFaultAdvanceRow = kFaultKindCount;
constexpr size_t kFaultDropIndexRow = kFaultKindCount + 1;
constexpr std::array<FaultRow, kFaultKindCount + 2> kFaultRows = [] {
  std::array<FaultRow, kFaultKindCount + 2> rows{};
  for (size_t i = 0; i < kFaultKindCount; ++i) {
    rows[i] = {kFaultKinds[i].name, kFaultKinds[i].keys()};
  }
  rows[kFaultAdvanceRow] = {"advance", kFaultAdvanceKeys};
  rows[kFaultDropIndexRow] = {"drop_index", kFaultDropIndexKeys};
  return rows;
}();
// Every key of any row, in the order the "unknown key" message lists them.
constexpr std::array<std::string_view, 11> kAllFaultKeys = {
    "kind",  "service", "instance", "at",   "match", "ms", "restart_after_ms",
    "times", "index",   "by",       "cause"};

// Whether kAllFaultKeys holds the keys of the rows and no other.
constexpr bool all_fault_keys_are_the_rows() {
  const auto listed = [](std::string_view key) {
    return std::find(kAllFaultKeys.begin(), kAllFaultKeys.end(), key) != kAllFaultKeys.end();
  };
  for (const FaultRow& row : kFaultRows) {
    if (!std::all_of(row.keys.begin(), row.keys.end(), listed)) return false;
  }
  return std::all_of(kAllFaultKeys.begin(), kAllFaultKeys.end(), [](std::string_view key) {
    return std::any_of(kFaultRows.begin(), kFaultRows.end(), [&](const FaultRow& row) {
      return std::find(row.keys.begin(), row.keys.end(), key) != row.keys.end();
    });
  });
}
static_assert(all_fault_keys_are_the_rows());

size_t as_fault_row(const Node& node) {
  std::vector<std::string_view> kinds;
  for (const FaultRow& row : kFaultRows) kinds.push_back(row.kind);
  const std::string expected = "one of " + join(kinds);
  const std::string& text = as_string(node, expected);
  for (size_t row = 0; row < kFaultRows.size(); ++row) {
    if (kFaultRows[row].kind == text) return row;
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
  const bool on_service = fault_kind_spec(kind).on_service;
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
  const FaultRow& keys = kFaultRows[row];
  const std::string why = "not used by a " + std::string(keys.kind) + " fault";
  check_keys(node, keys.keys, why);
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

constexpr std::array<std::string_view, 4> kPublishKeys = {"exchange", "routing_key", "message_id",
                                                          "body"};
constexpr std::array<std::string_view, 5> kEnvelopeKeys = {"messageId", "type", "transferId",
                                                           "occurredAt", "payload"};
constexpr std::array<std::string_view, 4> kPayloadKeys = {"from", "to", "amount", "reason"};

// A message published by hand (docs/contract.md §9.2), as RabbitMQ's management UI publishes one:
// an exchange, a routing key, the message-id property and a body, which must be an envelope of the
// bank's (docs/contract.md §1) about a transfer the story has.
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
  as_object(body,
            "an envelope: {\"type\", \"transferId\", \"payload\": {\"from\", \"to\", "
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

}  // namespace inboxsim::scenario_parse
