// The trace events the world's parts write about a delivery or an instance (World's own files
// only: a service writes its events through ServiceHost).
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "broker/message_broker.h"
#include "kernel/trace.h"
#include "services/host.h"

namespace inboxsim {

inline TraceEvent delivery_event(EventKind kind, int64_t time_ms, std::string_view service,
                                 std::string_view target, const Delivery& delivery) {
  TraceEvent event = event_about(kind, time_ms, service, *delivery.message);
  event.target = target;
  event.delivery_tag = delivery.delivery_tag;
  event.redelivered = delivery.redelivered;
  event.delivery_count = delivery.delivery_count;
  return event;
}

inline TraceEvent instance_event(EventKind kind, int64_t time_ms, std::string_view service,
                                 std::string detail) {
  TraceEvent event;
  event.time_ms = time_ms;
  event.kind = kind;
  event.service = service;
  event.detail = std::move(detail);
  return event;
}

}  // namespace inboxsim
