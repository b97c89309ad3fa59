// The sentence of each kind of event, as the narration, the HTML report's tooltips and the
// playground print it (narrate.h declares describe_event; narrate_internal.h, the rest).
#include <algorithm>
#include <array>
#include <string_view>

#include "domain/dedupe_words.h"
#include "domain/participants.h"
#include "kernel/assert.h"
#include "kernel/text.h"
#include "report/narrate.h"
#include "report/narrate_internal.h"

namespace inboxsim {

std::string signed_amount(int64_t amount) {
  return (amount > 0 ? "+" : "") + std::to_string(amount);
}

namespace {

// "Transfer.Requested t1 (m-3)" with the parts that are present.
std::string message_ref(const TraceEvent& event) {
  std::string text(event.type);
  if (!event.transfer.empty()) text += (text.empty() ? "" : " ") + event.transfer;
  if (!event.message_id.empty()) text += " (" + event.message_id + ")";
  return text;
}

std::string arrow(const TraceEvent& event) {
  return std::string(event.service) + " → " + std::string(event.target) + "  ";
}

// "2nd", "3rd", "11th", "21st".
std::string ordinal(int64_t number) {
  const int64_t last_two = number % 100;
  const int64_t last = number % 10;
  const char* suffix = (last_two >= 11 && last_two <= 13) ? "th"
                       : last == 1                        ? "st"
                       : last == 2                        ? "nd"
                       : last == 3                        ? "rd"
                                                          : "th";
  return std::to_string(number) + suffix;
}

// A delivery tag counts from 1 on each channel, so it is said with its channel: "tag 1 on
// account-service#2's channel", and "… on transfer-service's 2nd channel" once the consumer's
// connection closed and it opened another (`channel` counts them from 1). JetStream numbers a
// consumer's deliveries, whichever client pulls them: its consumer sequence.
std::string tag_text(int64_t tag, std::string_view consumer, const DeliveryNaming& naming) {
  if (naming.jetstream) return "consumer sequence " + std::to_string(tag);
  std::string text = "tag " + std::to_string(tag) + " on " + std::string(consumer) + "'s ";
  if (naming.channel > 1) text += ordinal(naming.channel) + " ";
  return text + "channel";
}

std::string describe_deliver(const TraceEvent& event, const DeliveryNaming& naming) {
  std::string text = arrow(event) + "deliver " + std::string(event.type) + " " + event.transfer +
                     " (" + event.message_id + ", " +
                     tag_text(event.delivery_tag, event.target, naming) + ")";
  // A redelivery is the whole point of the pattern, so it is flagged in capitals. A classic
  // queue sends no x-delivery-count.
  // x-delivery-count counts the returns before this delivery (none on a first delivery), so it
  // is shown under its own name: "delivery #1" on a second delivery read as a contradiction.
  // JetStream's delivery metadata counts this delivery too (nats.c's NumDelivered).
  if (event.redelivered && naming.jetstream) {
    return text + "  REDELIVERED (NumDelivered " + std::to_string(event.delivery_count + 1) + ")";
  }
  if (event.redelivered) {
    text += event.delivery_count > 0
                ? "  REDELIVERED (x-delivery-count " + std::to_string(event.delivery_count) + ")"
                : "  REDELIVERED";
  }
  return text;
}

std::string describe_publish(const TraceEvent& event) {
  std::string text = arrow(event) + "publish " + message_ref(event);
  if (!event.detail.empty()) text += "  → " + event.detail;
  // A duplicate fault's copy carries the routing key alone; a message published by hand (the
  // playground, a `publish` step) says so in its detail already, with its own message id.
  if (event.service == participant::operator_ && !event.by_hand) {
    text += "  (a copy by hand, same message id)";
  }
  // A `duplicate` fault whose story says who made the copy is published under that name.
  if (event.service == participant::broker)
    text += "  (a second copy made by the broker, same message id)";
  if (event.service == participant::network)
    text += "  (a second copy from the network, same message id)";
  return text;
}

// An ack that came back on a closed channel names no tag (the world says which in its detail).
std::string describe_ack(const TraceEvent& event, std::string_view verb,
                         const DeliveryNaming& naming) {
  std::string text = arrow(event) + std::string(verb);
  if (event.delivery_tag > 0) text += " " + tag_text(event.delivery_tag, event.service, naming);
  return text + "  " + message_ref(event);
}

constexpr std::string_view kAckedWithoutEffect = ", acked without effect";

// The sentence of a dedupe hit, without the words its line says itself: the mechanism's name
// (the line names it from the typed step), the message id and the verdict. What is left is
// for people and is printed as it stands.
std::string dedupe_reason(const TraceEvent& event) {
  std::string_view reason = event.detail;
  const std::string mechanism = std::string(dedupe_mechanism(event.dedupe_step)) + ": ";
  if (reason.starts_with(mechanism)) reason.remove_prefix(mechanism.size());
  const std::string id_prefix = "message " + event.message_id + " ";
  if (reason.starts_with(id_prefix)) reason.remove_prefix(id_prefix.size());
  if (reason.ends_with(kAckedWithoutEffect)) reason.remove_suffix(kAckedWithoutEffect.size());
  if (reason.empty()) return "is a duplicate";
  return std::string(reason);
}

std::string describe_effect(const TraceEvent& event) {
  return event.account + "  " + signed_amount(event.amount) + "  (" + event.detail + " " +
         event.transfer + ")";
}

std::string describe_crash(const TraceEvent& event) {
  std::string text = "✖ CRASH  " + std::string(event.service) + " died at " + event.detail;
  const std::string what = message_ref(event);
  if (!what.empty()) text += " while handling " + what;
  return text;
}

std::string describe_saga(const TraceEvent& event) {
  return std::string(event.service) + "  saga " + event.transfer + "  " + saga_change(event);
}

std::string describe_messaging(const TraceEvent& event, const DeliveryNaming& naming) {
  switch (event.kind) {
    case EventKind::request:
      return arrow(event) + "request " + event.transfer + ": " + event.detail + " " +
             std::to_string(event.amount);
    case EventKind::publish: return describe_publish(event);
    case EventKind::deliver: return describe_deliver(event, naming);
    case EventKind::ack: return describe_ack(event, "ack", naming);
    case EventKind::ack_lost: return describe_ack(event, "ack LOST on the wire,", naming);
    case EventKind::nack:
      // JetStream's nak redelivers too, at once or after its delay.
      return describe_ack(event, naming.jetstream ? "nak" : "nack (requeue)", naming) +
             (event.detail.empty() ? "" : ": " + event.detail);
    case EventKind::term:
      return describe_ack(event, "term (+TERM)", naming) + ": " + event.detail;
    case EventKind::in_progress:
      return describe_ack(event, "in progress (+WPI)", naming) + ": " + event.detail;
    case EventKind::requeue:
      return std::string(event.service) + (naming.jetstream ? "  redeliver " : "  requeue ") +
             message_ref(event) + ": " + event.detail;
    case EventKind::dead_letter:
      return "☠ DEAD-LETTERED  " + message_ref(event) + ": " + event.detail;
    case EventKind::dropped: return "✗ DROPPED  " + message_ref(event) + ": " + event.detail;
    // A publisher confirm is JetStream's publish ack.
    case EventKind::confirm:
      return arrow(event) + (naming.jetstream ? "publish ack " : "confirm ") + message_ref(event);
    case EventKind::confirm_lost:
      return arrow(event) + (naming.jetstream ? "publish ack LOST " : "confirm LOST ") +
             message_ref(event) + ": " + event.detail;
    default: return {};
  }
}

// Pauses, row locks and zombie acks: what only happens when handlers take time.
std::string describe_concurrency_event(const TraceEvent& event, const DeliveryNaming& naming) {
  const std::string who(event.service);
  switch (event.kind) {
    case EventKind::paused:
      return "‖ PAUSE  " + who + " " + event.detail +
             (event.message_id.empty() ? "" : ", handling " + message_ref(event));
    case EventKind::resumed: return "▶ RESUME  " + who + " " + event.detail;
    case EventKind::lock_wait: return who + "  " + event.detail + " (" + message_ref(event) + ")";
    case EventKind::lock_granted:
      return who + "  " + event.detail + " (" + message_ref(event) + ")";
    case EventKind::ack_void:
      return arrow(event) + "ack " + tag_text(event.delivery_tag, event.service, naming) + " " +
             message_ref(event) + ": " + event.detail + " (a zombie consumer)";
    case EventKind::retry: return who + "  ↺ RETRY " + message_ref(event) + ": " + event.detail;
    case EventKind::error_queued:
      return "⚠ ERROR QUEUE  " + who + " " + message_ref(event) + ": " + event.detail;
    case EventKind::publish_nacked:
      return arrow(event) + "publish NACKED " + message_ref(event) + ": " + event.detail;
    case EventKind::redrive:
      return arrow(event) + "REDRIVE " + message_ref(event) + ": " + event.detail;
    default: return {};
  }
}

std::string describe_service_event(const TraceEvent& event, const DeliveryNaming& naming) {
  const std::string who(event.service);
  switch (event.kind) {
    case EventKind::dedupe_hit: return describe_dedupe(event, dedupe_reason(event));
    case EventKind::dedupe_record: return who + "  " + event.detail;
    case EventKind::effect: return describe_effect(event);
    case EventKind::rejected:
      return who + "  rejected " + event.transfer + " (" + event.account + "): " + event.detail;
    case EventKind::saga: return describe_saga(event);
    case EventKind::illegal_transition:
      return who + "  state machine refused " + event.transfer + ": " + event.detail + " (" +
             event.message_id + ")";
    case EventKind::consumer_fault:
      // The world says what happens next ("...; rolled back, will nack").
      return who + "  FAULT on " + message_ref(event) + ": " + event.detail;
    case EventKind::notification: return who + "  notify " + event.transfer + ": " + event.detail;
    case EventKind::crash: return describe_crash(event);
    case EventKind::restart: return "↻ RESTART  " + who + " is back with its committed data";
    case EventKind::connection_closed:
      return who + " ✕ " + std::string(event.target) + "  connection closed: " + event.detail;
    case EventKind::index_dropped: return "✂ INDEX DROPPED  " + event.detail + " (" + who + ")";
    case EventKind::index_restored: return "⟲ INDEX RESTORE  " + event.detail + " (" + who + ")";
    case EventKind::recovered: return "⟳ RECOVERED  " + who + " " + event.detail;
    // The run goes on through the advance: what falls due inside it is printed after this line,
    // at its own moment.
    case EventKind::advance:
      return "⇥ clock runs on " + human_duration(event.duration_ms) + ", until " +
             human_duration(event.time_ms + event.duration_ms) +
             "; what falls due meanwhile follows";
    case EventKind::cleanup:
      return who + "  cleanup deleted " + std::to_string(event.rows_deleted) + " row(s)" +
             (event.detail.empty() ? "" : ": " + event.detail);
    case EventKind::violation: return "‼ VIOLATION  " + event.detail;
    default: return describe_concurrency_event(event, naming);
  }
}

// The database a participant writes: the relay and the notifications consumer are parts of
// transfer-service.
std::string_view database_of(std::string_view participant) {
  const std::string_view base = participant_base(participant);
  if (base == participant::relay || base == participant::notifications) {
    return participant::transfer_service;
  }
  return base;
}

}  // namespace

std::string_view dedupe_mechanism(DedupeStep step) {
  switch (step) {
    case DedupeStep::none: return "dedupe";
    case DedupeStep::inbox_consumed:
    case DedupeStep::inbox_resend: return "inbox";
    case DedupeStep::marten_document:
    case DedupeStep::marten_backstop: return "marten inbox";
    case DedupeStep::stream_key_taken: return "any unique violation as a duplicate";
    case DedupeStep::ledger_entry_exists: return "ledger key";
    case DedupeStep::seen_marked:
    case DedupeStep::seen_set_refused: return "external seen-set";
    case DedupeStep::wolverine_incoming: return "wolverine inbox";
    case DedupeStep::processed_precheck:
    case DedupeStep::processed_duplicate_key: return kProcessedMessages;
  }
  INBOXSIM_ASSERT(false && "a dedupe step without a name");
  return {};
}

// "account-service  inbox: message m-3 already consumed, acked without effect".
std::string describe_dedupe(const TraceEvent& event, std::string_view reason) {
  return std::string(event.service) + "  " + std::string(dedupe_mechanism(event.dedupe_step)) +
         ": message " + event.message_id + " " + std::string(reason) +
         std::string(kAckedWithoutEffect);
}

// Whether an event's line names a table of `source`: the tables its kind of line is about.
bool names_table(const TraceEvent& event, std::string_view source, std::string_view table) {
  if (database_of(event.service) != source) return false;
  switch (event.kind) {
    case EventKind::dedupe_record:
    case EventKind::dedupe_hit:
      // MassTransit's "marked consumed, in one transaction with its effect and outbox rows".
      return table == "inbox_state" || table == "inbox_documents" ||
             table == "processed_messages" ||
             (source == participant::account_service && table == "outbox");
    case EventKind::effect:
      return table == "ledger" || table == "accounts" || table == "account_events";
    case EventKind::rejected: return table == "rejected_debits";
    case EventKind::saga: return table == "sagas" || table == "outbox";  // the saga's command
    case EventKind::notification: return table == "notifications";
    default: return false;
  }
}

std::string human_duration(int64_t ms) {
  if (ms < 0) return "-" + human_duration(-ms);
  constexpr int64_t kSecondMs = 1000;
  constexpr int64_t kMinuteMs = 60 * kSecondMs;
  constexpr int64_t kHourMs = 60 * kMinuteMs;
  constexpr int64_t kDayMs = 24 * kHourMs;
  const std::array<std::pair<int64_t, std::string_view>, 3> units = {
      {{kDayMs, " d"}, {kHourMs, " h"}, {kMinuteMs, " min"}}};
  std::string text;
  int64_t rest = ms;
  for (const auto& [unit_ms, name] : units) {
    // A unit is said once a larger one was, so "2 h 0 min 0.016 s" keeps its zero minutes.
    if (rest < unit_ms && text.empty()) continue;
    if (rest == 0) return text;  // trailing zero units are left out: "2 h", "3 d"
    text += (text.empty() ? "" : " ") + std::to_string(rest / unit_ms) + std::string(name);
    rest %= unit_ms;
  }
  if (rest == 0 && !text.empty()) return text;
  std::string seconds = std::to_string(rest / kSecondMs);
  if (rest % kSecondMs != 0 || text.empty()) {
    const std::string millis = std::to_string(rest % kSecondMs);
    seconds += "." + std::string(3 - millis.size(), '0') + millis;
  }
  if (ms == 0) seconds = "0";
  return text + (text.empty() ? "" : " ") + seconds + " s";
}

std::string describe_on_channel(const TraceEvent& event, const DeliveryNaming& naming) {
  if (event.kind == EventKind::step) return "step: " + event.detail;
  std::string text = describe_messaging(event, naming);
  if (text.empty()) text = describe_service_event(event, naming);
  INBOXSIM_ASSERT(!text.empty());
  return text;
}

std::string describe_event(const TraceEvent& event) { return describe_on_channel(event, {}); }

std::string describe_event(const TraceEvent& event, bool jetstream) {
  return describe_on_channel(event, DeliveryNaming{1, jetstream});
}

bool ran_on_jetstream(const RunResult& result) {
  const auto kind = result.config.find("broker.kind");
  return kind != result.config.end() && kind->is_string() &&
         kind->get<std::string>() == "jetstream";
}

std::string delivery_id_text(int64_t tag, bool jetstream) {
  return (jetstream ? "consumer sequence " : "tag ") + std::to_string(tag);
}

std::string delivery_count_text(const TraceEvent& event, bool jetstream) {
  if (jetstream) return "NumDelivered " + std::to_string(event.delivery_count + 1);
  if (event.delivery_count == 0) return {};
  return "x-delivery-count " + std::to_string(event.delivery_count);
}

std::string saga_change(const TraceEvent& event) {
  return std::string(event.saga_from) + " → " + std::string(event.saga_to);
}

}  // namespace inboxsim
