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
                                                                           "redrive"};

}  // namespace

std::string_view event_kind_name(EventKind kind) { return name_of(kEventKindNames, kind); }

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

template <typename Sink>
void put_json_string(Sink& sink, std::string_view text) {
  sink.put('"');
  for (const char c : text) {
    switch (c) {
      case '"': sink.put("\\\""); break;
      case '\\': sink.put("\\\\"); break;
      case '\n': sink.put("\\n"); break;
      case '\t': sink.put("\\t"); break;
      case '\r': sink.put("\\r"); break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
          sink.put(std::string_view(buffer));
        } else {
          sink.put(c);
        }
    }
  }
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
  if (event.amount != 0) put_number(sink, "amount", event.amount);
  put_field(sink, "detail", event.detail);
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
  HashSink sink{hash_};
  write_event(sink, event);
  sink.put('\n');
  if (listener) listener(event);
  if (keep_events_) events_.push_back(std::move(event));
}

std::string Trace::hash_hex() const {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(hash_));
  return buffer;
}

}  // namespace inboxsim
