// Armed fault triggers (docs/contract.md §2, §6). A scenario's `fault` step arms a trigger; the World
// asks the FaultBook at each event where a fault could strike, and a trigger fires on the
// n-th event its match selects, so a script needs no timings.
//
// A long story (a million transfers) arms hundreds of thousands of faults, and most of them
// never fire: a crash aimed at an outbox resend that never happens, a nack on a rejection that
// never comes. None can be dropped, since a late duplicate or an operator's redrive may still
// bring their message, so a spilled book keeps them in a temporary database instead: whenever
// more than kFaultsInMemoryMax faults that name a transfer are held in memory, they all go to the
// database, and the first event that asks about one of those transfers brings its faults back.
// Which faults are in memory never changes which one fires.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "domain/message.h"
#include "domain/scenario.h"
#include "kernel/fingerprint.h"

namespace inboxsim {


// True when the message is selected by the match's type and transfer.
bool match_selects(const Match& match, const Message& message);

class FaultBook {
 public:
  // With `in_memory_max`: keep the faults that name a transfer in a temporary database once
  // more than that many are in memory (a long story). The answers are the same either way.
  explicit FaultBook(std::optional<size_t> in_memory_max = std::nullopt);
  ~FaultBook();
  FaultBook(const FaultBook&) = delete;
  FaultBook& operator=(const FaultBook&) = delete;

  // How many faults that name a transfer a long story's book holds in memory before it moves
  // them all to its database: about a megabyte.
  static constexpr size_t kFaultsInMemoryMax = 4'096;

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
    for (size_t kind = 0; kind < kFaultKindCount; ++kind) {
      if (armed(static_cast<FaultKind>(kind))) return false;
    }
    return true;
  }

  // True when a fault of `kind` is armed and has not fired yet.
  bool armed(FaultKind kind) const {
    return !buckets_[static_cast<size_t>(kind)].empty() ||
           spilled_counts_[static_cast<size_t>(kind)] > 0;
  }

  // How many armed faults are in the database (0 unless spilled), for tests and benchmarks.
  int64_t spilled_count() const;

  // What is still armed, and how far each has counted, for the explorer.
  // REQUIRES: nothing spilled (an explored story is short).
  void fingerprint(Hasher& hasher) const;

  // One armed fault and how far it has counted.
  struct Armed {
    FaultSpec spec;
    uint64_t sequence = 0;         // arm order: of two matching faults the older one counts first
    int64_t occurrences_left = 1;  // matching events until it fires
    int64_t times_left = 1;        // fires (nack only fires more than once)
  };

 private:
  // Armed faults by the transfer their match names ("" for any transfer), in arm order. A
  // large fuzz run arms thousands of faults; an event looks only at its own transfer's.
  using Buckets = std::map<std::string, std::vector<Armed>, std::less<>>;

  struct Spilled;

  template <typename Selects>
  std::optional<FaultSpec> take_first(FaultKind kind, std::string_view transfer, Selects&& selects);

  // Moves every armed fault that names a transfer to the database.
  void spill_all();
  // Brings the faults of `transfer` back from the database, if it may hold any.
  void reload(std::string_view transfer);
  // Every armed fault in the database, in arm order.
  std::vector<Armed> spilled_faults() const;

  std::array<Buckets, kFaultKindCount> buckets_;
  uint64_t next_sequence_ = 0;
  size_t named_in_memory_ = 0;  // armed faults in buckets_ that name a transfer
  std::array<int64_t, kFaultKindCount> spilled_counts_{};  // by kind, in the database
  std::unique_ptr<Spilled> spilled_;                       // when spilling
};

}  // namespace inboxsim
