// The fault gate: whether a fault of a kind strikes at a point of a run. It owns the fault book
// (the faults a scenario armed, faults.h), and a fault armed there fires first; in an
// exploration with faults of the kind left, the explorer's driver then chooses whether to inject
// one here (and, for the playground, is told in words what striking here would do).
//
// World asks the gate at every point where a fault could strike, which a fuzz seed passes
// millions of times: outside an exploration an answer is the book's lookup and a few branches on
// the driver's flags, with no allocation and no indirect call. The choice itself is World's
// (ExploreDriver::choose needs the whole world for the playground's chooser), handed in as a
// callable that the gate calls only when the explorer may inject.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "domain/crash.h"
#include "domain/message.h"
#include "domain/scenario.h"
#include "kernel/fingerprint.h"
#include "world/explore_driver.h"
#include "world/faults.h"

namespace inboxsim {

class Processes;
class Trace;

// A point where a fault may strike: the fault's kind, the side of the event it strikes (the
// consumer's or the publisher's service and instance; instance 0 is any), the crash point for a
// crash or a pause, and the message the instance handles or publishes there, if any.
struct FaultPoint {
  FaultKind kind = FaultKind::crash;
  ServiceId service = ServiceId::account;
  int64_t instance = 0;
  std::optional<CrashPoint> at;      // set for the faults that strike at a crash point
  const Message* message = nullptr;  // never null without `at`
};

// A message in the playground's words: "Transfer.Requested t1 (m-1)"; empty for none.
std::string message_words(const Message* message);

class FaultGate {
 public:
  // `in_memory_max`: the book's (FaultBook). The driver, the processes and the trace are the
  // world's, and outlive the gate; the gate reads the processes and the trace only for the
  // explorer's words of a fault point.
  FaultGate(std::optional<size_t> in_memory_max, ExploreDriver& driver, const Processes& processes,
            const Trace& trace)
      : book_(in_memory_max), driver_(driver), processes_(processes), trace_(trace) {}

  // The fault that strikes at `point`, if one does: the first one armed in the book that fires
  // here (consumed), else, where the explorer may inject a fault of the kind, one if `choose()`
  // (the explorer's choice between no fault, 0, and a fault, 1) takes it. An injected fault
  // names the point's crash point, or matches the point's message.
  // REQUIRES: point.at or point.message.
  template <typename Choose>
  std::optional<FaultSpec> take(const FaultPoint& point, Choose&& choose) {
    if (std::optional<FaultSpec> armed = take_armed(point)) return armed;
    // Read before the choice, which may move the explorer past its step-by-step choices.
    const bool stepwise = driver_.stepwise_now();
    if (!driver_.may_inject(point.kind) || choose() == 0) return std::nullopt;
    return injected(point, stepwise);
  }

  // The fault book's side: arming, what is armed, what never fired.
  void arm(const FaultSpec& fault) { book_.arm(fault); }
  bool armed(FaultKind kind) const { return book_.armed(kind); }
  std::vector<std::string> unfired() const { return book_.unfired(); }
  void fingerprint(Hasher& hasher) const { book_.fingerprint(hasher); }

 private:
  // The fault armed in the book that fires at `point`, if any; the explorer's footprint and
  // log hear of the point either way.
  std::optional<FaultSpec> take_armed(const FaultPoint& point);
  // The fault the explorer injects at `point` (`stepwise`: a playground's move, outside the
  // budget).
  FaultSpec injected(const FaultPoint& point, bool stepwise);
  // ExploreControl::log_choices: the point, in the explorer's log.
  void log_point(const FaultPoint& point);
  // What striking at `point` would do, in the playground's words.
  std::string label(const FaultPoint& point) const;

  FaultBook book_;
  ExploreDriver& driver_;
  const Processes& processes_;
  const Trace& trace_;
};

}  // namespace inboxsim
