// The contract names (docs/contract.md §2, §4, §1) of the scenario enums, and their inverses.
//
// Each table is indexed by the enum's value, so a name and its parse can never disagree.
#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "domain/scenario.h"
#include "kernel/enum_names.h"

namespace inboxsim {

namespace {

// The names of kFaultKinds (domain/scenario.h), the home of each kind's name and keys.
constexpr std::array<std::string_view, kFaultKindCount> kFaultKindNames = [] {
  std::array<std::string_view, kFaultKindCount> names{};
  for (size_t i = 0; i < kFaultKindCount; ++i) names[i] = kFaultKinds[i].name;
  return names;
}();
static_assert(names_every(kFaultKindNames, FaultKind::publish_nack));

constexpr std::array<std::string_view, kCopySourceCount> kCopySourceNames = {"operator", "broker",
                                                                             "network"};
static_assert(names_every(kCopySourceNames, CopySource::network));

constexpr std::array<std::string_view, kFailureCauseCount> kFailureCauseNames = {"transient",
                                                                                 "poison"};
static_assert(names_every(kFailureCauseNames, FailureCause::poison));

constexpr size_t kIndexNameCount = 3;
constexpr std::array<std::string_view, kIndexNameCount> kIndexNames = {
    "transfer.processed_messages", "account.ledger", "account.inbox_state"};
static_assert(names_every(kIndexNames, IndexName::account_inbox_state));

constexpr std::array<std::string_view, kInvariantCount> kInvariantNames = {
    "conservation", "ledger_balance", "single_effect", "saga_ledger", "legal_transitions",
    "no_overdraft", "notified",       "termination",   "emailed"};
static_assert(names_every(kInvariantNames, Invariant::emailed));

constexpr std::array<std::string_view, kSagaStateCount> kSagaStateNames = {
    "REQUESTED", "DEBITED", "COMPLETED", "REJECTED", "COMPENSATING", "FAILED"};
static_assert(names_every(kSagaStateNames, SagaState::failed));

constexpr size_t kEntryTypeCount = 3;
constexpr std::array<std::string_view, kEntryTypeCount> kEntryTypeNames = {"DEBIT", "CREDIT",
                                                                           "REFUND"};
static_assert(names_every(kEntryTypeNames, EntryType::refund));

}  // namespace

std::string_view fault_kind_name(FaultKind kind) { return name_of(kFaultKindNames, kind); }

std::optional<FaultKind> parse_fault_kind(std::string_view name) {
  return parse_name<FaultKind>(kFaultKindNames, name);
}

std::string_view copy_source_name(CopySource source) { return name_of(kCopySourceNames, source); }

std::optional<CopySource> parse_copy_source(std::string_view name) {
  return parse_name<CopySource>(kCopySourceNames, name);
}

std::string_view failure_cause_name(FailureCause cause) {
  return name_of(kFailureCauseNames, cause);
}

std::optional<FailureCause> parse_failure_cause(std::string_view name) {
  return parse_name<FailureCause>(kFailureCauseNames, name);
}

// `delay` and `pause` are made of time, which an exploration does not have.
bool explorable_fault_kind(FaultKind kind) {
  return kind != FaultKind::delay && kind != FaultKind::pause;
}

FaultKinds explorable_fault_kinds() {
  FaultKinds kinds{};
  for (size_t kind = 0; kind < kFaultKindCount; ++kind) {
    kinds[kind] = explorable_fault_kind(static_cast<FaultKind>(kind));
  }
  return kinds;
}

std::string fault_kinds_text(const FaultKinds& kinds, std::string_view separator) {
  std::string text;
  for (size_t kind = 0; kind < kFaultKindCount; ++kind) {
    if (!kinds[kind]) continue;
    if (!text.empty()) text += separator;
    text += fault_kind_name(static_cast<FaultKind>(kind));
  }
  return text.empty() ? std::string("none") : text;
}

std::string_view index_name(IndexName index) { return name_of(kIndexNames, index); }

std::optional<IndexName> parse_index_name(std::string_view name) {
  return parse_name<IndexName>(kIndexNames, name);
}

std::string_view invariant_name(Invariant invariant) { return name_of(kInvariantNames, invariant); }

std::optional<Invariant> parse_invariant(std::string_view name) {
  return parse_name<Invariant>(kInvariantNames, name);
}

std::string_view saga_state_name(SagaState state) { return name_of(kSagaStateNames, state); }

std::optional<SagaState> parse_saga_state(std::string_view name) {
  return parse_name<SagaState>(kSagaStateNames, name);
}

std::string_view entry_type_name(EntryType type) { return name_of(kEntryTypeNames, type); }

std::optional<EntryType> parse_entry_type(std::string_view name) {
  return parse_name<EntryType>(kEntryTypeNames, name);
}

std::string describe_fault(const FaultSpec& fault) {
  std::string text(fault_kind_name(fault.kind));
  if (fault.service) text += " " + std::string(service_name(*fault.service));
  if (fault.instance) text += "#" + std::to_string(*fault.instance);
  if (fault_kind_spec(fault.kind).takes("at")) {
    text += " at " + std::string(crash_point_name(fault.at));
  }
  if (fault.has_match) {
    text += " on";
    if (fault.match.type) text += " " + std::string(message_type_name(*fault.match.type));
    if (!fault.match.transfer.empty()) text += " " + fault.match.transfer;
    if (fault.match.occurrence > 1)
      text += " (occurrence " + std::to_string(fault.match.occurrence) + ")";
  }
  if (fault.kind == FaultKind::delay) text += " by " + std::to_string(fault.ms) + " ms";
  if (fault.kind == FaultKind::pause) text += " for " + std::to_string(fault.ms) + " ms";
  if (fault.kind == FaultKind::nack && fault.times > 1) {
    text += ", " + std::to_string(fault.times) + " times";
  }
  if (fault.kind == FaultKind::nack && fault.cause != FailureCause::transient) {
    text += ", " + std::string(failure_cause_name(fault.cause));
  }
  // The default (an operator's copy) says nothing, so the words of every older file stay.
  if (fault.kind == FaultKind::duplicate && fault.copied_by != CopySource::operator_) {
    text += ", copied by the " + std::string(copy_source_name(fault.copied_by));
  }
  return text;
}

std::string goal_text(const Goal& goal) {
  switch (goal.kind) {
    case Goal::Kind::broken:
      return std::string(invariant_name(goal.invariant)) + " breaks";
    case Goal::Kind::probe:
      return "probe " + std::string(probe_name(goal.probe));
    case Goal::Kind::saga:
      return goal.subject + " ends " + std::string(saga_state_name(goal.state));
    case Goal::Kind::balance:
      return goal.subject + " ends with " + std::to_string(goal.balance);
  }
  return {};
}

}  // namespace inboxsim
