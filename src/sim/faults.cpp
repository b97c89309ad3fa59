#include "sim/faults.h"

#include "sim/assert.h"

namespace inboxsim {

std::string describe_fault(const FaultSpec& fault) {
  std::string text(fault_kind_name(fault.kind));
  if (fault.service) text += " " + std::string(service_name(*fault.service));
  if (fault.kind == FaultKind::crash) text += " at " + std::string(crash_point_name(fault.at));
  if (fault.has_match) {
    text += " on";
    if (fault.match.type) text += " " + std::string(message_type_name(*fault.match.type));
    if (!fault.match.transfer.empty()) text += " " + fault.match.transfer;
    if (fault.match.occurrence > 1)
      text += " (occurrence " + std::to_string(fault.match.occurrence) + ")";
  }
  if (fault.kind == FaultKind::delay) text += " by " + std::to_string(fault.ms) + " ms";
  if (fault.kind == FaultKind::nack && fault.times > 1) {
    text += ", " + std::to_string(fault.times) + " times";
  }
  return text;
}

bool match_selects(const Match& match, const Message& message) {
  if (match.type && *match.type != message.type) return false;
  if (!match.transfer.empty() && match.transfer != message.transfer) return false;
  return true;
}

void FaultBook::arm(const FaultSpec& fault) {
  INBOXSIM_ASSERT(fault.match.occurrence >= 1);
  INBOXSIM_ASSERT(fault.times >= 1);
  armed_.push_back(Armed{fault, fault.match.occurrence, fault.times});
}

std::optional<FaultSpec> FaultBook::take_crash(ServiceId service, CrashPoint point,
                                               const Message* message) {
  for (size_t index = 0; index < armed_.size(); ++index) {
    const FaultSpec& spec = armed_[index].spec;
    if (spec.kind != FaultKind::crash || spec.service != service || spec.at != point) continue;
    if (spec.has_match && (message == nullptr || !match_selects(spec.match, *message))) continue;
    if (auto fired = count_match(index)) return fired;
  }
  return std::nullopt;
}

std::optional<FaultSpec> FaultBook::take(FaultKind kind, ServiceId service,
                                         const Message& message) {
  INBOXSIM_ASSERT(kind != FaultKind::crash);
  for (size_t index = 0; index < armed_.size(); ++index) {
    const FaultSpec& spec = armed_[index].spec;
    if (spec.kind != kind) continue;
    if (spec.service && *spec.service != service) continue;
    if (spec.has_match && !match_selects(spec.match, message)) continue;
    if (auto fired = count_match(index)) return fired;
  }
  return std::nullopt;
}

std::optional<FaultSpec> FaultBook::count_match(size_t index) {
  Armed& armed = armed_[index];
  if (armed.occurrences_left > 1) {
    --armed.occurrences_left;
    return std::nullopt;
  }
  FaultSpec fired = armed.spec;
  if (--armed.times_left == 0) armed_.erase(armed_.begin() + static_cast<ptrdiff_t>(index));
  return fired;
}

std::vector<std::string> FaultBook::unfired() const {
  std::vector<std::string> out;
  for (const Armed& armed : armed_) {
    if (armed.times_left == armed.spec.times) out.push_back(describe_fault(armed.spec));
  }
  return out;
}

}  // namespace inboxsim
