// Retention: the cleanup services' ticks (the inbox window, Marten's KeepAfterMessageHandling,
// transfer-service's TTL monitor), one pass per tick for all of a service's instances.
#include <string>
#include <utility>
#include <vector>

#include "domain/participants.h"
#include "kernel/assert.h"
#include "world/world.h"
#include "world/world_events.h"

namespace inboxsim {

void World::maybe_cleanup() {
  if (now_ms() < next_cleanup_ms_) return;
  const int64_t ticks_passed = (now_ms() - next_cleanup_ms_) / kCleanupIntervalMs;
  const int64_t tick_ms = next_cleanup_ms_ + ticks_passed * kCleanupIntervalMs;
  next_cleanup_ms_ = tick_ms + kCleanupIntervalMs;
  on_cleanup(tick_ms);
}

// Every instance runs the cleanup service; one pass per tick stands for them all, run by the
// first instance that is up and not paused. When none is, the next tick catches up.
void World::on_cleanup(int64_t tick_ms) {
  for (ServiceId service : {ServiceId::account, ServiceId::transfer}) {
    for (Instance& instance : instances_) {
      if (instance.service != service || !instance.up || paused(instance)) continue;
      if (instance.account) {
        const CleanupCounts deleted = instance.account->cleanup_inbox(tick_ms);
        const std::string window = std::to_string(config_.account_inbox_window_ms);
        const std::string what = retention_words(window);
        record_cleanup(instance.names.service, deleted.dedupe_rows, "inbox cleanup: " + what);
        record_cleanup(instance.names.service, deleted.outbox_rows,
                       "outbox cleanup: rows delivered more than " + window + " ms ago deleted");
      } else {
        const CleanupCounts deleted =
            instance.transfer->cleanup_processed(tick_ms - tick_ms % kTtlMonitorIntervalMs);
        const std::string ttl = std::to_string(config_.transfer_processed_ttl_ms);
        record_cleanup(instance.names.service, deleted.dedupe_rows,
                       "TTL: processed_messages older than " + ttl + " ms deleted");
        record_cleanup(instance.names.service, deleted.outbox_rows,
                       "TTL: outbox rows sent more than " + ttl + " ms ago deleted");
      }
      break;
    }
  }
}

// What the inbox cleanup deleted, in the mechanism's words: the Marten documents and the
// durable inbox's Handled envelopes are kept Wolverine's KeepAfterMessageHandling, not the
// window.
std::string World::retention_words(const std::string& window) const {
  const std::string keep = std::to_string(config_.account_keep_after_handling_ms);
  switch (account_inbox_kind(config_.account_inbox).retention) {
    case InboxRetention::handled_documents:
      return "documents handled more than " + keep + " ms ago deleted (KeepAfterMessageHandling)";
    case InboxRetention::handled_envelopes:
      return "Handled envelopes past their keep_until deleted from wolverine_incoming_envelopes "
             "(KeepAfterMessageHandling, " +
             keep + " ms)";
    case InboxRetention::delivered_rows: break;
  }
  return "rows delivered more than " + window + " ms ago deleted";
}

void World::record_cleanup(std::string_view service, int64_t deleted, std::string detail) {
  if (deleted == 0) return;
  TraceEvent event = instance_event(EventKind::cleanup, now_ms(), service, std::move(detail));
  event.rows_deleted = deleted;
  record(std::move(event));
}

}  // namespace inboxsim
