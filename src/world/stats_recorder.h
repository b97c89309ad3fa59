// The counters of docs/contract.md §5 (`stats`, and dedupe hits per service), kept from the events a run
// records: every event passes here on its way to the trace, so what is counted and what is
// traced can never disagree.
#pragma once

#include <map>

#include "domain/crash.h"
#include "domain/participants.h"
#include "domain/result.h"
#include "kernel/trace.h"

namespace inboxsim {

class StatsRecorder {
 public:
  void count(const TraceEvent& event) {
    switch (event.kind) {
      case EventKind::publish: ++stats_.published; break;
      case EventKind::deliver:
        ++stats_.deliveries;
        if (event.redelivered) ++stats_.redeliveries;
        break;
      case EventKind::ack: ++stats_.acks; break;
      case EventKind::dedupe_hit: {
        ++stats_.dedupe_hits;
        const std::string_view base = participant_base(event.service);
        ++dedupe_hits_[base == participant::account_service ? ServiceId::account
                                                            : ServiceId::transfer];
        break;
      }
      case EventKind::effect: ++stats_.effects; break;
      case EventKind::crash: ++stats_.crashes; break;
      case EventKind::dead_letter: ++stats_.dead_lettered; break;
      case EventKind::dropped: ++stats_.dropped; break;
      case EventKind::error_queued: ++stats_.error_queued; break;
      default: break;
    }
  }
  void count_transaction() { ++stats_.transactions; }

  const Stats& stats() const { return stats_; }
  const std::map<ServiceId, int64_t>& dedupe_hits() const { return dedupe_hits_; }

 private:
  Stats stats_;
  std::map<ServiceId, int64_t> dedupe_hits_;
};

}  // namespace inboxsim
