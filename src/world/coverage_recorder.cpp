#include "world/coverage_recorder.h"

#include "domain/crash.h"
#include "domain/participants.h"
#include "kernel/assert.h"

namespace inboxsim {

void CoverageRecorder::count(const TraceEvent& event) {
  switch (event.kind) {
    case EventKind::lock_wait: reach(Probe::masstransit_row_lock); break;
    case EventKind::illegal_transition: reach(Probe::saga_illegal_transition); break;
    case EventKind::ack_lost: reach(Probe::ack_lost); break;
    case EventKind::ack_void: reach(Probe::ack_void); break;
    case EventKind::confirm_lost: reach(Probe::confirm_lost); break;
    case EventKind::publish_nacked: reach(Probe::publish_nacked); break;
    case EventKind::retry: reach(Probe::consumer_retry); break;
    case EventKind::nack: reach(Probe::consumer_nack); break;
    case EventKind::error_queued: reach(Probe::consumer_error_queued); break;
    case EventKind::dead_letter: reach(Probe::broker_dead_lettered); break;
    case EventKind::redrive: reach(Probe::operator_redrive); break;
    case EventKind::cleanup: reach(Probe::retention_cleanup); break;
    case EventKind::crash:
      if (!event.message_id.empty() && past_commit(event)) {
        awaiting_redelivery_.insert(event.message_id);
      }
      break;
    case EventKind::deliver:
      if (event.redelivered && awaiting_redelivery_.erase(event.message_id) > 0) {
        reach(Probe::redelivery_after_commit);
      }
      break;
    default: break;
  }
}

void CoverageRecorder::count_commit(const CommitRecord& record) {
  for (const LedgerEntry& entry : record.ledger) {
    if (entry.type == EntryType::refund) reach(Probe::saga_compensation);
  }
}

// after_commit and after_outbox_send come after the consumer's commit in every mode; after_mark
// does only where the seen-set is marked after the commit.
// REQUIRES: crash is a crash event, with its crash point.
bool CoverageRecorder::past_commit(const TraceEvent& crash) const {
  INBOXSIM_ASSERT(crash.kind == EventKind::crash);
  INBOXSIM_ASSERT(crash.crash_point.has_value());
  switch (*crash.crash_point) {
    case CrashPoint::after_commit:
    case CrashPoint::after_outbox_send: return true;
    case CrashPoint::after_mark:
      if (participant_base(crash.service) == participant::account_service) {
        return account_inbox_kind(config_.account_inbox).mark_after_commit;
      }
      return config_.transfer_dedupe == TransferDedupe::external_after ||
             config_.transfer_dedupe == TransferDedupe::processed_after;
    default: return false;
  }
}

}  // namespace inboxsim
