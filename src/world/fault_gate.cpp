#include "world/fault_gate.h"

#include <optional>
#include <string>

#include "domain/messages.h"
#include "kernel/assert.h"
#include "kernel/footprint.h"
#include "kernel/trace.h"
#include "world/processes.h"

namespace inboxsim {

std::string message_words(const Message* message) {
  if (message == nullptr) return {};
  return std::string(message_type_name(message->type)) + " " + message->transfer + " (" +
         message->message_id + ")";
}

std::optional<FaultSpec> FaultGate::take_armed(const FaultPoint& point) {
  INBOXSIM_ASSERT(point.at || point.message != nullptr);
  if (driver_.footprinting() && !book_.empty()) {
    driver_.touch(resource_id(ResourceClass::fault_book, 0));
  }
  std::optional<FaultSpec> fired =
      point.at ? book_.take_at(point.kind, point.service, point.instance, *point.at, point.message)
               : book_.take(point.kind, point.service, point.instance, *point.message);
  if (!fired && driver_.logs_fault_points()) log_point(point);
  return fired;
}

FaultSpec FaultGate::injected(const FaultPoint& point, bool stepwise) {
  driver_.injected(stepwise);
  FaultSpec fault;
  fault.kind = point.kind;
  fault.service = point.service;
  if (point.instance > 0) fault.instance = point.instance;
  if (point.at) {
    fault.at = *point.at;
  } else {
    fault.has_match = true;
    fault.match.type = point.message->type;
    fault.match.transfer = point.message->transfer;
  }
  return fault;
}

void FaultGate::log_point(const FaultPoint& point) {
  if (!explorable_fault_kind(point.kind) || !driver_.enabled() || driver_.stopped()) return;
  if (driver_.may_inject(point.kind)) {  // the injection's choice logs it, with these words
    driver_.fault_choice_words(point.kind, label(point));
    return;
  }
  driver_.uncounted_fault_point(point.kind, trace_.events().size());
}

std::string FaultGate::label(const FaultPoint& point) const {
  std::string who(service_name(point.service));
  for (const Process& candidate : processes_) {
    if (candidate.service == point.service &&
        (point.instance == 0 || candidate.number == point.instance)) {
      who = candidate.names.service;
      break;
    }
  }
  const std::string about = message_words(point.message);
  switch (point.kind) {
    case FaultKind::crash:
      return who + " crashes here, at " + std::string(crash_point_name(*point.at)) +
             (about.empty() ? "" : ", handling " + about);
    case FaultKind::duplicate: return "the broker gets a second copy of " + about;
    case FaultKind::drop_ack:
      return "the ack of " + about + " is lost: " + who + "'s connection resets";
    case FaultKind::drop_connection: return who + "'s connection drops while it has " + about;
    case FaultKind::nack:
      return who + "'s handler of " + about + " fails (a transient error): nack";
    case FaultKind::lose_confirm:
      return "the publisher confirm of " + about + " is lost: " + who + "'s channel closes";
    case FaultKind::publish_nack: return "the broker refuses " + about + " (basic.nack)";
    case FaultKind::delay:
    case FaultKind::pause: break;
  }
  return std::string(fault_kind_name(point.kind)) + " " + about;
}

}  // namespace inboxsim
