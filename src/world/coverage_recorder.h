// The coverage probes of docs/contract.md §8.3, counted from what a run records. Like StatsRecorder it
// sees every event on its way to the trace (kept or not), so a probe counted and the event that
// shows it can never disagree, and it only observes: nothing it does reaches the trace, the
// PRNG or the scheduler.
//
// Most probes are one event kind. The rest come from elsewhere, each for a reason:
// - which mechanism caught a duplicate, and which unique index rejected a row, the services say
//   (ServiceHost::reached): the events name only the service;
// - a compensation is a refund in a committed transaction's ledger entries (count_commit);
// - a same-id re-publication is what the World's publication log knows (reach);
// - a redelivery after a crash past the commit pairs two events: the crash, then the message's
//   next redelivered delivery.
#pragma once

#include <set>
#include <string>

#include "domain/commit.h"
#include "domain/config.h"
#include "domain/coverage.h"
#include "kernel/trace.h"

namespace inboxsim {

class CoverageRecorder {
 public:
  explicit CoverageRecorder(const Config& config) : config_(config) {}

  // Counts the probes an event shows.
  void count(const TraceEvent& event);
  // Counts the probes a committed transaction shows.
  void count_commit(const CommitRecord& record);
  // Counts a probe that a caller has seen reached.
  void reach(Probe probe) { ++coverage_[probe]; }

  const Coverage& coverage() const { return coverage_; }

 private:
  // True when a crash event is past its consumer's commit: the message's work is committed and
  // its ack was never sent, so the broker will deliver it again.
  bool past_commit(const TraceEvent& crash) const;

  const Config& config_;
  Coverage coverage_;
  // Messages whose consumer died past the commit, waiting for their redelivery. Crashes are
  // few, and each entry leaves at its redelivery, so this stays small.
  std::set<std::string> awaiting_redelivery_;
};

}  // namespace inboxsim
