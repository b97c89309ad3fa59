// The canonical event trace of one run, and its hash.
//
// Every observable thing a simulation does is one TraceEvent: who did what to whom, when, with
// which message id, delivery tag and redelivered flag. The trace is what the narration, the
// JSONL file, the sequence diagram and the HTML report are drawn from, and trace_hash (FNV-1a 64
// over the canonical JSONL lines) is how determinism is checked. A Trace can keep its events or
// only hash them, or neither (fuzzing keeps and computes nothing it does not report: a campaign
// reports verdicts, stats and coverage, never a seed's trace hash).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace inboxsim {

enum class EventKind : uint8_t {
  step,                // a scenario step begins; detail describes it
  request,             // client -> transfer-service: a transfer is requested
  publish,             // service -> broker: a message is published (routed to queues)
  deliver,             // broker -> consumer: a delivery with tag, redelivered flag, count
  ack,                 // consumer -> broker: the ack arrived
  ack_lost,            // consumer -> broker: the ack was lost on the wire
  nack,                // consumer -> broker: nack with requeue
  requeue,             // broker: an unacked delivery goes back to its queue
  dead_letter,         // broker: a message passed the delivery limit
  confirm,             // broker -> publisher: publisher confirm
  confirm_lost,        // broker -> publisher: the confirm never arrives
  dedupe_hit,          // consumer: the dedupe mechanism acked without effect
  dedupe_record,       // consumer: a dedupe record was written (inbox row, processed id, mark)
  effect,              // consumer: a balance changed (account, amount)
  rejected,            // consumer: business rule said no (insufficient funds, closed account)
  saga,                // transfer-service: saga state change (detail "FROM->TO")
  illegal_transition,  // transfer-service: the state machine refused a transition
  consumer_fault,      // consumer: the handler failed and rolled back (e.g. ledger index)
  notification,        // notifications consumer wrote a customer notification
  crash,               // a service died at a crash point
  restart,             // a service came back with its committed data
  connection_closed,   // a consumer connection closed (crash, reset, fault)
  index_dropped,       // a unique index was dropped
  advance,             // virtual time jumped forward
  cleanup,             // retention cleanup deleted dedupe records
  violation,           // an invariant was found broken
  paused,              // an instance stopped between two steps (a GC pause, a stalled disk)
  resumed,             // a paused instance goes on
  lock_wait,           // a handler waits for a row lock another handler holds
  lock_granted,        // a waiting handler got the row lock
  ack_void,            // a handler acked on a channel that had closed: the ack is ignored
  retry,               // a faulted handler runs again (MassTransit's UseMessageRetry)
  error_queued,        // a message moved to an _error queue after its retries, then acked
  publish_nacked,      // the broker refused a publish (basic.nack): it was not routed
  redrive,             // an operator moved a message from an error or dead-letter queue back
  dropped,             // broker: a message past the delivery limit, with no dead-letter exchange
  index_restored,      // an operator put back a dropped index (or could not)
  recovered,           // a durability agent took a stored envelope whose owner node is gone
  in_progress,         // consumer -> broker: JetStream's +WPI, still working (the ack wait restarts)
  term,                // consumer -> broker: JetStream's +TERM, the delivery is given up for good
};

inline constexpr size_t kEventKindCount = 40;

// Returns the stable name of an event kind, as written to traces.
std::string_view event_kind_name(EventKind kind);
// The event kind with that name, if any.
std::optional<EventKind> parse_event_kind(std::string_view name);

// What a cleanup event's rows were: the dedupe records (an inbox's rows, processed_messages) or
// a service's outbox, sent or delivered.
enum class CleanupOf : uint8_t { none, dedupe_records, outbox };

// Which dedupe record a dedupe_record event writes, by mechanism and step (its "record" in the
// trace): what the views act on, where the sentence only tells it.
enum class DedupeRecord : uint8_t {
  none,
  inbox_row_inserted,           // MassTransit: the inbox row, consumed still null, committed alone
  inbox_consumed,               // MassTransit: marked consumed, with the effect and outbox rows
  inbox_outbox_sent,            // MassTransit: one outbox message sent, last_sequence_number saved
  inbox_delivered,              // MassTransit: marked delivered, every outbox message sent
  marten_document,              // Marten: the message's document, with the event append
  wolverine_stored,             // Wolverine: the envelope stored, Incoming, before the ack
  wolverine_handled,            // Wolverine: the envelope marked Handled, with the effect
  seen_checked,                 // an external seen-set checked and not marked (check-then-add)
  seen_marked,                  // an external seen-set marked, outside every transaction
  processed_with_saga,          // processed_messages, with the saga update and its outbox row
  processed_with_notification,  // processed_messages, with the customer notification
  processed_alone,              // processed_messages in a transaction of its own (processed_after)
};
inline constexpr size_t kDedupeRecordCount = 13;
std::string_view dedupe_record_name(DedupeRecord record);

// Why a handler faulted and rolled back (a consumer_fault's "cause" in the trace).
enum class FaultCause : uint8_t {
  none,
  injected,             // a `nack` fault of the scenario
  ledger_key,           // the ledger's unique index (transfer_id, type) refused a second entry
  inbox_key,            // MassTransit's inbox key refused a second row
  inbox_rows_twice,     // two inbox rows for one key: the lookup's SingleOrDefault throws
  serialization,        // Postgres 40001 under Repeatable Read
  stream_conflict,      // Marten: a concurrent append moved the event stream
  delivery_timeout,     // MassTransit's MessageDeliveryTimeout cancelled the outbox send
  confirm_lost,         // the channel closed before the publisher confirm arrived
  publish_nacked,       // the broker nacked the publish
  cancelled,            // the channel closed while the handler ran (consume context cancelled)
};
inline constexpr size_t kFaultCauseCount = 11;
std::string_view fault_cause_name(FaultCause cause);

// Which step of a dedupe mechanism found a delivery to be a duplicate (a dedupe_hit's step):
// the views name the mechanism from it, where the sentence only tells it.
enum class DedupeStep : uint8_t {
  none,
  inbox_consumed,           // MassTransit: the inbox row says consumed and delivered
  inbox_resend,             // MassTransit: consumed, its outbox not yet delivered: send the rest
  marten_document,          // Marten: the message's document exists (the pre-check)
  marten_backstop,          // Marten: the document's primary key refused a concurrent copy
  stream_key_taken,         // Marten: a stream conflict taken for a duplicate (ledger_conflict ack)
  ledger_entry_exists,      // the ledger key: the entry is applied, the command taken as done
  seen_marked,              // an external seen-set holds the message (check-then-add)
  seen_set_refused,         // an external seen-set's SET NX replied nil (check and mark at once)
  wolverine_incoming,       // Wolverine: the envelope is already in the incoming table
  processed_precheck,       // processed_messages read before the business transaction
  processed_duplicate_key,  // processed_messages' unique key refused the insert: rolled back
};
inline constexpr size_t kDedupeStepCount = 12;
std::string_view dedupe_step_name(DedupeStep step);

// Defined by the domain (domain/crash.h, domain/scenario.h): the trace carries their values
// without knowing them, so the kernel stays below every bank's word.
enum class CrashPoint : uint8_t;
enum class EntryType : uint8_t;

// An event's facts are typed fields, each meaning one thing; `detail` says the event in words
// for people and is never parsed. Fields marked "not in the line" restate what `detail` already
// says in the canonical line, so they leave the line (and trace_hash) as it was.
struct TraceEvent {
  int64_t time_ms = 0;
  EventKind kind = EventKind::step;
  std::string_view service;  // the actor (a participant name)
  std::string_view target;   // the other side, if any (a participant name)
  std::string message_id;
  std::string_view type;  // message type, if any
  std::string transfer;
  int64_t delivery_tag = 0;
  bool redelivered = false;
  int64_t delivery_count = 0;
  std::string account;
  int64_t amount = 0;        // request, effect: money, in minor units (signed on an effect)
  int64_t duration_ms = 0;   // advance: the jump; paused: the pause's length
  int64_t rows_deleted = 0;  // cleanup: the rows retention deleted
  CleanupOf cleaned = CleanupOf::none;  // cleanup: which rows (not in the trace line)
  std::string detail;        // the event in words, for people; the typed fields are its data
  DedupeRecord record = DedupeRecord::none;  // dedupe_record
  FaultCause cause = FaultCause::none;       // consumer_fault
  std::string_view saga_from;                // saga: the state left (empty: a new saga)
  std::string_view saga_to;                  // saga: the state entered
  std::string_view invariant;                // violation: the invariant broken (its name)
  // Not in the line:
  DedupeStep dedupe_step = DedupeStep::none;  // dedupe_hit: the step that caught the copy
  std::optional<CrashPoint> crash_point;      // crash: where the process died
  std::optional<EntryType> entry;             // effect: the ledger entry written
  bool by_hand = false;  // publish: a new message an operator published (not a fault's copy)
};

// The number the canonical line writes under "amount": the money, or for an advance, a pause
// or a cleanup the duration or the row count, under the key the trace format has always used.
int64_t line_amount(const TraceEvent& event);

// Writes the canonical JSON line of an event (no trailing newline). The same event always
// gives the same bytes; empty optional fields are left out.
std::string trace_event_json(const TraceEvent& event);

class Trace {
 public:
  // `hashed` false: nothing reads the hash, so record() does not compute it.
  explicit Trace(bool keep_events, bool hashed = true)
      : keep_events_(keep_events), hashed_(hashed) {}

  // Appends an event: hashes its canonical line (if hashed), keeps it if asked, tells the
  // listener.
  void record(TraceEvent event);

  // Returns the FNV-1a 64 hash of all canonical lines so far, as 16 hex digits; empty when
  // the trace is not hashed.
  std::string hash_hex() const;
  const std::vector<TraceEvent>& events() const { return events_; }

  // Called with each event as it is recorded (live narration).
  std::function<void(const TraceEvent&)> listener;

 private:
  bool keep_events_;
  bool hashed_;
  uint64_t hash_ = 0xcbf29ce484222325ULL;
  std::vector<TraceEvent> events_;
};

}  // namespace inboxsim
