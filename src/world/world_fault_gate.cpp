// The fault gate: whether a fault of a kind strikes at this point of a run. A scripted fault
// armed in the fault book fires first; in an exploration with faults left, the explorer's
// driver chooses whether to inject one here (and, for the playground, says in words what
// striking here would do).
#include <optional>
#include <string>

#include "world/world.h"

namespace inboxsim {

std::optional<FaultSpec> World::take_fault(FaultKind kind, ServiceId service, int64_t instance,
                                           const Message& message) {
  if (footprinting() && !faults_.empty()) touch(resource_id(ResourceClass::fault_book, 0));
  if (auto fired = faults_.take(kind, service, instance, message)) return fired;
  if (explorer_.logs_fault_points()) {
    log_fault_point(kind, service, instance, std::nullopt, &message);
  }
  std::optional<FaultSpec> fault = inject_fault(kind, service, instance);
  if (fault) {
    fault->has_match = true;
    fault->match.type = message.type;
    fault->match.transfer = message.transfer;
  }
  return fault;
}

std::optional<FaultSpec> World::take_fault_at(FaultKind kind, ServiceId service, int64_t instance,
                                              CrashPoint point, const Message* message) {
  if (footprinting() && !faults_.empty()) touch(resource_id(ResourceClass::fault_book, 0));
  if (auto fired = faults_.take_at(kind, service, instance, point, message)) return fired;
  if (explorer_.logs_fault_points()) log_fault_point(kind, service, instance, point, message);
  std::optional<FaultSpec> fault = inject_fault(kind, service, instance);
  if (fault) fault->at = point;
  return fault;
}

// In an exploration with faults left, the explorer's choice: a fault of `kind` here, or not.
std::optional<FaultSpec> World::inject_fault(FaultKind kind, ServiceId service, int64_t instance) {
  const bool stepwise = explorer_.stepwise_now();
  if (!explorer_.may_inject(kind) || choose(2) == 0) return std::nullopt;
  explorer_.injected(stepwise);
  FaultSpec fault;
  fault.kind = kind;
  fault.service = service;
  if (instance > 0) fault.instance = instance;
  return fault;
}

// A message in the playground's words: "Transfer.Requested t1 (m-1)".
std::string World::message_words(const Message* message) {
  if (message == nullptr) return {};
  return std::string(message_type_name(message->type)) + " " + message->transfer + " (" +
         message->message_id + ")";
}

std::string World::fault_label(FaultKind kind, ServiceId service, int64_t instance,
                               std::optional<CrashPoint> point, const Message* message) const {
  std::string who(service_name(service));
  for (const Process& candidate : processes_) {
    if (candidate.service == service && (instance == 0 || candidate.number == instance)) {
      who = candidate.names.service;
      break;
    }
  }
  const std::string about = message_words(message);
  switch (kind) {
    case FaultKind::crash:
      return who + " crashes here, at " + std::string(crash_point_name(*point)) +
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
  return std::string(fault_kind_name(kind)) + " " + about;
}

void World::log_fault_point(FaultKind kind, ServiceId service, int64_t instance,
                            std::optional<CrashPoint> point, const Message* message) {
  if (!explorable_fault_kind(kind) || !explorer_.enabled() || explorer_.stopped()) return;
  if (explorer_.may_inject(kind)) {  // inject_fault's choice logs it, with these words
    explorer_.fault_choice_words(kind, fault_label(kind, service, instance, point, message));
    return;
  }
  explorer_.uncounted_fault_point(kind, trace_.events().size());
}

}  // namespace inboxsim
