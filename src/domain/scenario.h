// A scenario (docs/contract.md §6, contract v1): accounts, configuration, steps and expectations.
//
// This is the parsed, validated form. Everything in it has been checked by parse_scenario():
// every account a step or expectation names exists, every transfer id is unique, amounts are
// positive and below 2^53. The runner may therefore assert on it instead of re-checking.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "domain/config.h"
#include "domain/coverage.h"
#include "domain/crash.h"
#include "domain/message.h"
#include "domain/messages.h"
#include "domain/saga.h"
#include "kernel/trace.h"

namespace inboxsim {

// The largest amount or balance a scenario may use: 2^53, so every value survives a round trip
// through a JSON number in any language.
inline constexpr int64_t kAmountMax = int64_t{1} << 53;

// The faults a scenario can inject; the keys each one takes are in kFaultKinds below.
enum class FaultKind : uint8_t {
  crash,            // an instance stops at a point (without a match, the next time it reaches it)
  drop_ack,         // the ack of the matched delivery is lost, the connection resets
  drop_connection,  // an instance's connection closes (without a match, at once)
  nack,             // the handler fails `times` times in a row
  duplicate,        // a copy with the same message id (by the operator by default)
  lose_confirm,     // the publisher confirm of the matched publish is lost
  delay,            // the matched delivery is held back for ms
  pause,            // the instance stops at a point for ms (docs/contract.md §8.1)
  publish_nack,     // the broker nacks the matched publish (basic.nack): it is not routed
};

inline constexpr size_t kFaultKindCount = 9;

// A fault kind as a scenario file writes it: its name and the keys a fault of it may have, "kind"
// first, in the order an error message lists them. The parser reads a fault by it and the writer
// writes one by it. A kind that acts on a service needs its "service", and its "match" is then
// optional; every other kind needs a "match".
struct FaultKindSpec {
  std::string_view name;
  std::array<std::string_view, 7> key_slots;  // the keys, then empty slots
  bool on_service = false;

  constexpr std::span<const std::string_view> keys() const {
    size_t count = 0;
    while (count < key_slots.size() && !key_slots[count].empty()) ++count;
    return {key_slots.data(), count};
  }
  constexpr bool takes(std::string_view key) const {
    for (const std::string_view taken : keys()) {
      if (taken == key) return true;
    }
    return false;
  }
};

// Indexed by FaultKind (names.cpp holds it to the enum's size).
inline constexpr std::array<FaultKindSpec, kFaultKindCount> kFaultKinds = {{
    {"crash", {"kind", "service", "instance", "at", "match", "restart_after_ms"}, true},
    {"drop_ack", {"kind", "service", "instance", "match"}, false},
    {"drop_connection", {"kind", "service", "instance", "match"}, true},
    {"nack", {"kind", "service", "instance", "match", "times", "cause"}, false},
    {"duplicate", {"kind", "match", "by"}, false},
    {"lose_confirm", {"kind", "match"}, false},
    {"delay", {"kind", "match", "ms"}, false},
    {"pause", {"kind", "service", "instance", "at", "ms", "match"}, true},
    {"publish_nack", {"kind", "match"}, false},
}};

inline const FaultKindSpec& fault_kind_spec(FaultKind kind) {
  return kFaultKinds[static_cast<size_t>(kind)];
}

std::string_view fault_kind_name(FaultKind kind);
std::optional<FaultKind> parse_fault_kind(std::string_view name);

// Who makes a `duplicate` fault's copy (its `by` key): the narration and the diagrams name it, and
// nothing else depends on it (every copy is routed and counted alike).
enum class CopySource : uint8_t {
  operator_,  // a person publishes it again by hand (exercise 2, docs/scenarios.md), the default
  broker,     // the broker delivers one published message twice
  network,    // a second copy on the wire below the application (a proxy or a client resending)
};

inline constexpr size_t kCopySourceCount = 3;
std::string_view copy_source_name(CopySource source);
std::optional<CopySource> parse_copy_source(std::string_view name);

// Why a `nack` fault's handler fails (its `cause` key), as the narration says it: a transient
// error (a busy database) that a later attempt gets past, or a poison message, one the handler
// throws on every time. The failure is the same; only the words differ.
enum class FailureCause : uint8_t { transient, poison };

inline constexpr size_t kFailureCauseCount = 2;
std::string_view failure_cause_name(FailureCause cause);
std::optional<FailureCause> parse_failure_cause(std::string_view name);

// Selects events by message type, transfer and occurrence. Empty fields match anything.
struct Match {
  std::optional<MessageType> type;
  std::string transfer;
  int64_t occurrence = 1;  // fire on the n-th matching event after the fault is armed
};

// How long a crashed instance stays down when its crash fault does not say (restart_after_ms):
// a FaultSpec's default and a World instance's until its first crash.
inline constexpr int64_t kRestartAfterMsDefault = 1000;

struct FaultSpec {
  FaultKind kind = FaultKind::crash;
  std::optional<ServiceId> service;
  // crash and pause: which instance (default 1); drop_ack, nack, drop_connection: narrows the
  // fault to one instance of `service` when set.
  std::optional<int64_t> instance;
  CrashPoint at = CrashPoint::before_tx;
  bool has_match = false;
  Match match;
  int64_t ms = 0;  // delay: how long the delivery is held back; pause: how long
  int64_t restart_after_ms = kRestartAfterMsDefault;  // crash: how long the service stays down
  int64_t times = 1;                                  // nack: how many consecutive failures
  CopySource copied_by = CopySource::operator_;       // duplicate: who makes the copy
  FailureCause cause = FailureCause::transient;       // nack: what the narration says fails
};

// Returns one line describing a fault ("crash account-service at after_commit on
// Transfer.Requested t1").
std::string describe_fault(const FaultSpec& fault);

struct TransferSpec {
  std::string id;
  std::string from;
  std::string to;
  int64_t amount = 0;
};

enum class StepKind : uint8_t {
  transfer,
  fault,
  run,
  advance,
  drop_index,
  redrive,
  publish,        // docs/contract.md §9.2: a person publishes a message by hand
  restore_index,  // puts back an index that drop_index removed
};

// The unique indexes a drop_index step can remove.
enum class IndexName : uint8_t { transfer_processed_messages, account_ledger, account_inbox_state };
std::string_view index_name(IndexName index);
std::optional<IndexName> parse_index_name(std::string_view name);

struct Step {
  StepKind kind = StepKind::run;
  TransferSpec transfer;        // kind == transfer
  FaultSpec fault;              // kind == fault
  bool until_quiescent = true;  // kind == run: until quiescent, or for `ms`
  int64_t ms = 0;               // kind == run (when !until_quiescent) or advance
  IndexName index = IndexName::transfer_processed_messages;  // kind == drop_index
  std::string queue;  // kind == redrive: an error or dead-letter queue
  // kind == publish: the exchange ("banking.events", or "" for the default exchange, which
  // routes to the queue named by the routing key), the routing key, and the message whose
  // envelope the body holds (its message_id is the AMQP message-id property too).
  std::string exchange;
  std::string routing_key;
  Message message;
};

struct AccountSpec {
  int64_t balance = 0;
  bool closed = false;
};

// The invariants of docs/contract.md §4, in contract order.
enum class Invariant : uint8_t {
  conservation,
  ledger_balance,
  single_effect,
  saga_ledger,
  legal_transitions,
  no_overdraft,
  notified,
  termination,
  emailed,  // with transfer.email: each finished transfer's customer got exactly one email
};
inline constexpr size_t kInvariantCount = 9;
std::string_view invariant_name(Invariant invariant);
std::optional<Invariant> parse_invariant(std::string_view name);

// Ledger entry types.
enum class EntryType : uint8_t { debit, credit, refund };
std::string_view entry_type_name(EntryType type);
std::optional<EntryType> parse_entry_type(std::string_view name);

// What must hold at the end. Absent keys are not checked (docs/contract.md §6), except violations: an
// absent or empty list means every invariant must hold.
// A reachability goal (docs/contract.md §8.3): something an order of the story reaches, which
// `inboxsim explore` finds (with the shortest order) or proves that no order reaches. A broken
// invariant or a coverage probe counts when an order reaches it on its way; a saga state or a
// balance, at the end of an order that runs to the story's end. `inboxsim run` does not check
// goals: one run shows one order.
struct Goal {
  enum class Kind : uint8_t { broken, probe, saga, balance };
  Kind kind = Kind::broken;
  bool reachable = true;  // from expect.reachable; false: from expect.unreachable
  Invariant invariant = Invariant::conservation;  // broken
  Probe probe = Probe::dedupe_masstransit;         // probe
  std::string subject;                             // saga: the transfer; balance: the account
  SagaState state = SagaState::requested;          // saga
  int64_t balance = 0;                             // balance
};
inline constexpr size_t kGoalsMax = 64;

// How a goal reads: "single_effect breaks", "probe ledger.key_rejected", "t1 ends FAILED",
// "alice ends with 7500".
std::string goal_text(const Goal& goal);

struct Expect {
  std::optional<std::map<std::string, int64_t>> balances;
  std::optional<std::map<std::string, SagaState>> transfers;
  std::optional<std::map<MessageType, int64_t>> published;
  // Publish operations per type: a re-publication of one message id counts again (the consumer
  // outbox sent once, the relay republished twice).
  std::optional<std::map<MessageType, int64_t>> sends;
  std::optional<std::map<std::string, std::map<EntryType, int64_t>>> effects;
  std::optional<std::map<ServiceId, int64_t>> dedupe_hits;
  std::optional<int64_t> dead_lettered;
  std::optional<int64_t> error_queued;
  std::optional<int64_t> dropped;       // stats.dropped
  std::optional<int64_t> redeliveries;  // stats.redeliveries
  std::vector<Invariant> violations;    // sorted, unique
  std::vector<Goal> goals;  // expect.reachable, then expect.unreachable, in file order
};

// An explored order of events (docs/contract.md §8.3): with `schedule` a run has no clock; each time
// several events may happen next, or a fault of `fault_kinds` may strike (while fewer than
// `faults` have), the next entry of `choices` says which option is taken (events in the order
// they were scheduled; for a fault, 0 no and 1 yes). Past the end of `choices`, option 0.
struct Schedule {
  int64_t faults = 0;
  std::array<bool, kFaultKindCount> fault_kinds{};
  // Without a clock, on a broker whose leases end by timer (JetStream's AckWait): how many
  // times in one order a lease may run out, each a choice among the pending events
  // (docs/model.md, "Exploration").
  int64_t ack_wait_expiries = 0;
  std::vector<uint32_t> choices;
  // The playground's moves (docs/contract.md §9.1): the first `stepwise` choices are taken step by step:
  // every event is a choice of its own, even when it is the only one, and every fault kind
  // that needs no clock may strike at every point, with no budget (`faults` and `fault_kinds`
  // hold past them, as for the explorer).
  size_t stepwise = 0;
  // With a clock (a story with timed steps): the seeded latencies and work times hold, and a
  // choice is among the events due first.
  bool clocked = false;
  // Hand actions (publish, drop_index, restore_index, redrive, advance), each taken where
  // `at` choices have been made (between two events, or at the story's end).
  struct Action {
    size_t at = 0;
    Step step;
  };
  std::vector<Action> actions;
};

// The fault kinds an exploration may inject: those that need no clock.
bool explorable_fault_kind(FaultKind kind);
using FaultKinds = std::array<bool, kFaultKindCount>;
// Every kind that needs no clock.
FaultKinds explorable_fault_kinds();
// The kinds set in `kinds`, in enum order, joined by `separator` ("none" when there are none).
std::string fault_kinds_text(const FaultKinds& kinds, std::string_view separator = ", ");

// A question put to the class at a moment of the run (docs/contract.md §6): right after the
// `match.occurrence`-th event of `kind` that `match` selects, the narration asks it, and a run
// that steps (--step, --step-on) waits there, before the events that answer it.
struct Checkpoint {
  EventKind kind = EventKind::deliver;
  Match match;
  std::string question;
};

// One event of a run, named as a checkpoint names its moment: the `match.occurrence`-th event of
// `kind` whose message type and transfer `match` selects (docs/contract.md §6).
struct EventSelector {
  EventKind kind = EventKind::deliver;
  Match match;
  bool operator==(const EventSelector& other) const {
    return kind == other.kind && match.type == other.match.type &&
           match.transfer == other.match.transfer && match.occurrence == other.match.occurrence;
  }
};

// A description in three parts (docs/contract.md §6), for a teacher who reads it out: what the
// story sets up, the moment to watch for (its text and the event it names, which the narration
// marks and the HTML report links to) and why the run turns out as it does.
struct DescriptionParts {
  std::string setup;
  std::string watch_for;
  EventSelector watch_for_event;
  std::string why;
  bool empty() const { return setup.empty() && watch_for.empty() && why.empty(); }
};

struct Scenario {
  std::string file;  // where it was read from, for messages
  std::string name;
  std::string title;
  // One paragraph (`description`), or the three parts (`setup`, `watch_for`, `why`); a file has
  // one or the other. When a program sets the paragraph of a story that has parts (explore's
  // counterexamples replace the lesson's description with their own), the paragraph is the
  // whole description: the parts are neither shown nor written (shown_parts).
  std::string description;
  DescriptionParts description_parts;
  std::string lesson;
  uint64_t seed = 1;
  Config config;
  std::map<std::string, AccountSpec> accounts;
  std::vector<Step> steps;
  Expect expect;
  std::optional<Schedule> schedule;
  std::vector<Checkpoint> checkpoints;
};

// The parts the scenario's description shows: none when its paragraph is set (see Scenario).
inline DescriptionParts shown_parts(const Scenario& scenario) {
  return scenario.description.empty() ? scenario.description_parts : DescriptionParts{};
}

}  // namespace inboxsim
