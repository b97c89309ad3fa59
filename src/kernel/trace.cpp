#include "kernel/trace.h"

#include <array>
#include <charconv>
#include <cstdio>

#include "kernel/assert.h"
#include "kernel/enum_names.h"

namespace inboxsim {

namespace {

// Indexed by EventKind, so a kind and its name can never disagree.
constexpr std::array<std::string_view, kEventKindCount> kEventKindNames = {"step",
                                                                           "request",
                                                                           "publish",
                                                                           "deliver",
                                                                           "ack",
                                                                           "ack_lost",
                                                                           "nack",
                                                                           "requeue",
                                                                           "dead_letter",
                                                                           "confirm",
                                                                           "confirm_lost",
                                                                           "dedupe_hit",
                                                                           "dedupe_record",
                                                                           "effect",
                                                                           "rejected",
                                                                           "saga",
                                                                           "illegal_transition",
                                                                           "consumer_fault",
                                                                           "notification",
                                                                           "crash",
                                                                           "restart",
                                                                           "connection_closed",
                                                                           "index_dropped",
                                                                           "advance",
                                                                           "cleanup",
                                                                           "violation",
                                                                           "paused",
                                                                           "resumed",
                                                                           "lock_wait",
                                                                           "lock_granted",
                                                                           "ack_void",
                                                                           "retry",
                                                                           "error_queued",
                                                                           "publish_nacked",
                                                                           "redrive",
                                                                           "dropped",
                                                                           "index_restored",
                                                                           "recovered",
                                                                           "in_progress",
                                                                           "term"};
static_assert(names_every(kEventKindNames, EventKind::term));

constexpr std::array<std::string_view, kDedupeRecordCount> kDedupeRecordNames = {
    "none",           "inbox_row_inserted",  "inbox_consumed",
    "inbox_outbox_sent", "inbox_delivered",  "marten_document",
    "wolverine_stored",  "wolverine_handled", "seen_checked",
    "seen_marked",    "processed_with_saga", "processed_with_notification",
    "processed_alone"};
static_assert(names_every(kDedupeRecordNames, DedupeRecord::processed_alone));

constexpr std::array<std::string_view, kFaultCauseCount> kFaultCauseNames = {
    "none",           "injected",        "ledger_key",       "inbox_key",
    "inbox_rows_twice", "serialization", "stream_conflict",  "delivery_timeout",
    "confirm_lost",   "publish_nacked",  "cancelled"};
static_assert(names_every(kFaultCauseNames, FaultCause::cancelled));

constexpr std::array<std::string_view, kDedupeStepCount> kDedupeStepNames = {
    "none",
    "inbox_consumed",
    "inbox_resend",
    "marten_document",
    "marten_backstop",
    "stream_key_taken",
    "ledger_entry_exists",
    "seen_marked",
    "seen_set_refused",
    "wolverine_incoming",
    "processed_precheck",
    "processed_duplicate_key"};
static_assert(names_every(kDedupeStepNames, DedupeStep::processed_duplicate_key));

}  // namespace

std::string_view event_kind_name(EventKind kind) { return name_of(kEventKindNames, kind); }
std::string_view dedupe_record_name(DedupeRecord record) {
  return name_of(kDedupeRecordNames, record);
}
std::string_view fault_cause_name(FaultCause cause) { return name_of(kFaultCauseNames, cause); }
std::string_view dedupe_step_name(DedupeStep step) { return name_of(kDedupeStepNames, step); }

int64_t line_amount(const TraceEvent& event) {
  switch (event.kind) {
    case EventKind::advance:
    case EventKind::paused: return event.duration_ms;
    case EventKind::cleanup: return event.rows_deleted;
    default: return event.amount;
  }
}
std::optional<EventKind> parse_event_kind(std::string_view name) {
  return parse_name<EventKind>(kEventKindNames, name);
}

namespace {

// The canonical line is written once, by write_event(), into either a string (for --trace and
// the views) or straight into the hash (for every event of every run, fuzzing included), so the
// two can never disagree and hashing allocates nothing.
struct StringSink {
  std::string& out;
  void put(std::string_view text) { out.append(text); }
  void put(char c) { out.push_back(c); }
};

struct HashSink {
  uint64_t& hash;
  void put(std::string_view text) {
    for (const char c : text) put(c);
  }
  void put(char c) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
};

// Which bytes JSON must escape: the quote, the backslash and the control characters.
constexpr std::array<bool, 256> kNeedsEscape = [] {
  std::array<bool, 256> table{};
  for (size_t c = 0; c < 0x20; ++c) table[c] = true;
  table['"'] = true;
  table['\\'] = true;
  return table;
}();

template <typename Sink>
void put_escaped(Sink& sink, char c) {
  switch (c) {
    case '"': sink.put("\\\""); break;
    case '\\': sink.put("\\\\"); break;
    case '\n': sink.put("\\n"); break;
    case '\t': sink.put("\\t"); break;
    case '\r': sink.put("\\r"); break;
    default: {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
      sink.put(std::string_view(buffer));
    }
  }
}

// Hands the sink whole runs of bytes that need no escape (nearly every string is one run):
// hashing a run is a tight loop, where a test per byte between the hash steps was a twentieth
// of a small fuzz seed's time. The bytes are the same either way.
template <typename Sink>
void put_json_string(Sink& sink, std::string_view text) {
  sink.put('"');
  size_t run_start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!kNeedsEscape[static_cast<unsigned char>(c)]) continue;
    sink.put(text.substr(run_start, i - run_start));
    put_escaped(sink, c);
    run_start = i + 1;
  }
  sink.put(text.substr(run_start));
  sink.put('"');
}

template <typename Sink>
void put_integer(Sink& sink, int64_t value) {
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  sink.put(std::string_view(buffer, static_cast<size_t>(result.ptr - buffer)));
}

template <typename Sink>
void put_key(Sink& sink, std::string_view name) {
  sink.put(",\"");
  sink.put(name);
  sink.put("\":");
}

template <typename Sink>
void put_field(Sink& sink, std::string_view name, std::string_view value) {
  if (value.empty()) return;
  put_key(sink, name);
  put_json_string(sink, value);
}

template <typename Sink>
void put_number(Sink& sink, std::string_view name, int64_t value) {
  put_key(sink, name);
  put_integer(sink, value);
}

template <typename Sink>
void write_event(Sink& sink, const TraceEvent& event) {
  sink.put("{\"t\":");
  put_integer(sink, event.time_ms);
  sink.put(",\"kind\":");
  put_json_string(sink, event_kind_name(event.kind));
  put_field(sink, "service", event.service);
  put_field(sink, "to", event.target);
  put_field(sink, "message_id", event.message_id);
  put_field(sink, "type", event.type);
  put_field(sink, "transfer", event.transfer);
  if (event.delivery_tag != 0) {
    put_number(sink, "tag", event.delivery_tag);
    sink.put(event.redelivered ? ",\"redelivered\":true" : ",\"redelivered\":false");
    put_number(sink, "delivery_count", event.delivery_count);
  }
  put_field(sink, "account", event.account);
  if (const int64_t amount = line_amount(event); amount != 0) put_number(sink, "amount", amount);
  put_field(sink, "detail", event.detail);
  if (event.record != DedupeRecord::none) {
    put_field(sink, "record", dedupe_record_name(event.record));
  }
  if (event.cause != FaultCause::none) put_field(sink, "cause", fault_cause_name(event.cause));
  put_field(sink, "saga_from", event.saga_from);
  put_field(sink, "saga_to", event.saga_to);
  put_field(sink, "invariant", event.invariant);
  sink.put('}');
}

}  // namespace

std::string trace_event_json(const TraceEvent& event) {
  std::string out;
  out.reserve(192);
  StringSink sink{out};
  write_event(sink, event);
  return out;
}

void Trace::record(TraceEvent event) {
  if (hashed_) {
    HashSink sink{hash_};
    write_event(sink, event);
    sink.put('\n');
  }
  if (listener) listener(event);
  if (keep_events_) events_.push_back(std::move(event));
}

std::string Trace::hash_hex() const {
  if (!hashed_) return {};
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(hash_));
  return buffer;
}

}  // namespace inboxsim
