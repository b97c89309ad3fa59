#include "world/faults.h"

#include <algorithm>

#include "kernel/assert.h"

namespace inboxsim {

std::string describe_fault(const FaultSpec& fault) {
  std::string text(fault_kind_name(fault.kind));
  if (fault.service) text += " " + std::string(service_name(*fault.service));
  if (fault.instance) text += "#" + std::to_string(*fault.instance);
  if (fault.kind == FaultKind::crash || fault.kind == FaultKind::pause) {
    text += " at " + std::string(crash_point_name(fault.at));
  }
  if (fault.has_match) {
    text += " on";
    if (fault.match.type) text += " " + std::string(message_type_name(*fault.match.type));
    if (!fault.match.transfer.empty()) text += " " + fault.match.transfer;
    if (fault.match.occurrence > 1)
      text += " (occurrence " + std::to_string(fault.match.occurrence) + ")";
  }
  if (fault.kind == FaultKind::delay) text += " by " + std::to_string(fault.ms) + " ms";
  if (fault.kind == FaultKind::pause) text += " for " + std::to_string(fault.ms) + " ms";
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
  const std::string transfer = fault.has_match ? fault.match.transfer : std::string();
  buckets_[static_cast<size_t>(fault.kind)][transfer].push_back(
      Armed{fault, next_sequence_++, fault.match.occurrence, fault.times});
}

// Walks the faults of `kind` that name `transfer` and those that name none, together in arm
// order. Every selecting fault counts the event; the first whose count is reached fires.
template <typename Selects>
std::optional<FaultSpec> FaultBook::take_first(FaultKind kind, std::string_view transfer,
                                               Selects&& selects) {
  Buckets& buckets = buckets_[static_cast<size_t>(kind)];
  const auto named = transfer.empty() ? buckets.end() : buckets.find(transfer);
  const auto any = buckets.find(std::string_view{});
  std::vector<Armed>* lists[2] = {named == buckets.end() ? nullptr : &named->second,
                                  any == buckets.end() ? nullptr : &any->second};
  size_t next[2] = {0, 0};
  for (;;) {
    int pick = -1;
    for (int side = 0; side < 2; ++side) {
      if (lists[side] == nullptr || next[side] >= lists[side]->size()) continue;
      if (pick < 0 || (*lists[side])[next[side]].sequence < (*lists[pick])[next[pick]].sequence) {
        pick = side;
      }
    }
    if (pick < 0) return std::nullopt;
    std::vector<Armed>& list = *lists[pick];
    Armed& armed = list[next[pick]];
    if (!selects(armed.spec) || armed.occurrences_left > 1) {
      if (selects(armed.spec)) --armed.occurrences_left;
      ++next[pick];
      continue;
    }
    FaultSpec fired = armed.spec;
    if (--armed.times_left == 0) {
      list.erase(list.begin() + static_cast<ptrdiff_t>(next[pick]));
      if (list.empty()) buckets.erase(pick == 0 ? named : any);
    }
    return fired;
  }
}

std::optional<FaultSpec> FaultBook::take_at(FaultKind kind, ServiceId service, int64_t instance,
                                            CrashPoint point, const Message* message) {
  INBOXSIM_ASSERT(kind == FaultKind::crash || kind == FaultKind::pause);
  const std::string_view transfer = message == nullptr ? std::string_view{} : message->transfer;
  return take_first(kind, transfer, [&](const FaultSpec& spec) {
    if (spec.service != service || spec.at != point) return false;
    if (spec.instance.value_or(1) != instance) return false;
    return !spec.has_match || (message != nullptr && match_selects(spec.match, *message));
  });
}

std::optional<FaultSpec> FaultBook::take(FaultKind kind, ServiceId service, int64_t instance,
                                         const Message& message) {
  INBOXSIM_ASSERT(kind != FaultKind::crash && kind != FaultKind::pause);
  return take_first(kind, message.transfer, [&](const FaultSpec& spec) {
    if (spec.service && *spec.service != service) return false;
    if (spec.instance && *spec.instance != instance) return false;
    return !spec.has_match || match_selects(spec.match, message);
  });
}

void FaultBook::fingerprint(Hasher& hasher) const {
  for (const Buckets& buckets : buckets_) {
    hasher.add(static_cast<uint64_t>(buckets.size()));
    for (const auto& [transfer, list] : buckets) {
      hasher.add(transfer).add(static_cast<uint64_t>(list.size()));
      for (const Armed& armed : list) {
        hasher.add(describe_fault(armed.spec)).add_signed(armed.spec.restart_after_ms);
        hasher.add_signed(armed.occurrences_left).add_signed(armed.times_left);
      }
    }
  }
}

std::vector<std::string> FaultBook::unfired() const {
  std::vector<const Armed*> never_fired;
  for (const Buckets& buckets : buckets_) {
    for (const auto& [transfer, list] : buckets) {
      for (const Armed& armed : list) {
        if (armed.times_left == armed.spec.times) never_fired.push_back(&armed);
      }
    }
  }
  std::sort(never_fired.begin(), never_fired.end(),
            [](const Armed* a, const Armed* b) { return a->sequence < b->sequence; });
  std::vector<std::string> out;
  for (const Armed* armed : never_fired) out.push_back(describe_fault(armed->spec));
  return out;
}

}  // namespace inboxsim
