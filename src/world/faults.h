// Armed fault triggers (DESIGN §2, §6). A scenario's `fault` step arms a trigger; the World
// asks the FaultBook at each event where a fault could strike, and a trigger fires on the
// n-th event its match selects, so a script needs no timings.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "domain/message.h"
#include "domain/scenario.h"
#include "kernel/fingerprint.h"

namespace inboxsim {

// Returns one line describing a fault ("crash account-service at after_commit on
// Transfer.Requested t1").
std::string describe_fault(const FaultSpec& fault);

// True when the message is selected by the match's type and transfer.
bool match_selects(const Match& match, const Message& message);

class FaultBook {
 public:
  void arm(const FaultSpec& fault);

  // The crash or pause fault (`kind`) that fires at this point of instance `instance` of this
  // service, if any (consumed when it fires). A fault without an instance names instance 1.
  // `message` is what the instance was handling or publishing, or null.
  std::optional<FaultSpec> take_at(FaultKind kind, ServiceId service, int64_t instance,
                                   CrashPoint point, const Message* message);

  // The fault of `kind` that fires on this event, if any. `service` and `instance` are on the
  // consumer or publisher side of the event; a fault that names neither takes any.
  std::optional<FaultSpec> take(FaultKind kind, ServiceId service, int64_t instance,
                                const Message& message);

  // Faults armed but never fired, described, in the order they were armed.
  std::vector<std::string> unfired() const;

  bool empty() const {
    for (const Buckets& buckets : buckets_) {
      if (!buckets.empty()) return false;
    }
    return true;
  }

  // True when a fault of `kind` is armed and has not fired yet.
  bool armed(FaultKind kind) const { return !buckets_[static_cast<size_t>(kind)].empty(); }

  // What is still armed, and how far each has counted, for the explorer.
  void fingerprint(Hasher& hasher) const;

 private:
  struct Armed {
    FaultSpec spec;
    uint64_t sequence = 0;         // arm order: of two matching faults the older one counts first
    int64_t occurrences_left = 1;  // matching events until it fires
    int64_t times_left = 1;        // fires (nack only fires more than once)
  };
  // Armed faults by the transfer their match names ("" for any transfer), in arm order. A
  // large fuzz run arms thousands of faults; an event looks only at its own transfer's.
  using Buckets = std::map<std::string, std::vector<Armed>, std::less<>>;

  template <typename Selects>
  std::optional<FaultSpec> take_first(FaultKind kind, std::string_view transfer, Selects&& selects);

  std::array<Buckets, kFaultKindCount> buckets_;
  uint64_t next_sequence_ = 0;
};

}  // namespace inboxsim
