#include "sim/trace.h"

#include <cstdio>

#include "sim/assert.h"

namespace inboxsim {

std::string_view event_kind_name(EventKind kind) {
  switch (kind) {
    case EventKind::step: return "step";
    case EventKind::request: return "request";
    case EventKind::publish: return "publish";
    case EventKind::deliver: return "deliver";
    case EventKind::ack: return "ack";
    case EventKind::ack_lost: return "ack_lost";
    case EventKind::nack: return "nack";
    case EventKind::requeue: return "requeue";
    case EventKind::dead_letter: return "dead_letter";
    case EventKind::confirm: return "confirm";
    case EventKind::confirm_lost: return "confirm_lost";
    case EventKind::dedupe_hit: return "dedupe_hit";
    case EventKind::effect: return "effect";
    case EventKind::rejected: return "rejected";
    case EventKind::saga: return "saga";
    case EventKind::illegal_transition: return "illegal_transition";
    case EventKind::consumer_fault: return "consumer_fault";
    case EventKind::notification: return "notification";
    case EventKind::crash: return "crash";
    case EventKind::restart: return "restart";
    case EventKind::connection_closed: return "connection_closed";
    case EventKind::index_dropped: return "index_dropped";
    case EventKind::advance: return "advance";
    case EventKind::cleanup: return "cleanup";
    case EventKind::violation: return "violation";
  }
  INBOXSIM_ASSERT(false);
}

namespace {

void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
          out += buffer;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
  if (value.empty()) return;
  out += ",\"";
  out += name;
  out += "\":";
  append_json_string(out, value);
}

void append_number(std::string& out, std::string_view name, int64_t value) {
  out += ",\"";
  out += name;
  out += "\":";
  out += std::to_string(value);
}

}  // namespace

std::string trace_event_json(const TraceEvent& event) {
  std::string out;
  out.reserve(192);
  out += "{\"t\":";
  out += std::to_string(event.time_ms);
  out += ",\"kind\":";
  append_json_string(out, event_kind_name(event.kind));
  append_field(out, "service", event.service);
  append_field(out, "to", event.target);
  append_field(out, "message_id", event.message_id);
  append_field(out, "type", event.type);
  append_field(out, "transfer", event.transfer);
  if (event.delivery_tag != 0) {
    append_number(out, "tag", event.delivery_tag);
    out += ",\"redelivered\":";
    out += event.redelivered ? "true" : "false";
    append_number(out, "delivery_count", event.delivery_count);
  }
  append_field(out, "account", event.account);
  if (event.amount != 0) append_number(out, "amount", event.amount);
  append_field(out, "detail", event.detail);
  out.push_back('}');
  return out;
}

void Trace::record(TraceEvent event) {
  const std::string line = trace_event_json(event);
  for (const char c : line) {
    hash_ ^= static_cast<unsigned char>(c);
    hash_ *= 0x100000001b3ULL;
  }
  hash_ ^= static_cast<unsigned char>('\n');
  hash_ *= 0x100000001b3ULL;
  ++count_;
  if (listener) listener(event);
  if (keep_events_) events_.push_back(std::move(event));
}

std::string Trace::hash_hex() const {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(hash_));
  return buffer;
}

}  // namespace inboxsim
