// Retention: the cleanup services' passes (world/retention.h says when one is due), one pass per
// tick for all of a service's instances.
#include <optional>
#include <string>
#include <utility>

#include "domain/participants.h"
#include "world/world.h"
#include "world/world_events.h"

namespace inboxsim {

void World::maybe_cleanup() {
  if (const std::optional<int64_t> tick_ms = retention_.take_due(now_ms())) on_cleanup(*tick_ms);
}

// Every instance runs the cleanup service; one pass per tick stands for them all, run by the
// first instance that is up and not paused. When none is, the next tick catches up.
void World::on_cleanup(int64_t tick_ms) {
  // The passes' commits record no event of their own: their rows go to the cleanup events that
  // follow (World::committed), not to the event before them.
  cleaning_ = true;
  for (ServiceId service : {ServiceId::account, ServiceId::transfer}) {
    for (const Process& instance : processes_) {
      if (instance.service != service || !instance.up || instance.paused(now_ms())) continue;
      if (instance.account) {
        const CleanupCounts deleted = instance.account->cleanup_inbox(tick_ms);
        record_cleanup(instance.names.service, deleted.dedupe_rows, CleanupOf::dedupe_records,
                       retention_.account_inbox_words());
        record_cleanup(instance.names.service, deleted.outbox_rows, CleanupOf::outbox,
                       retention_.account_outbox_words());
      } else {
        const CleanupCounts deleted =
            instance.transfer->cleanup_processed(Retention::ttl_monitor_tick(tick_ms));
        record_cleanup(instance.names.service, deleted.dedupe_rows, CleanupOf::dedupe_records,
                       retention_.transfer_processed_words());
        record_cleanup(instance.names.service, deleted.outbox_rows, CleanupOf::outbox,
                       retention_.transfer_outbox_words());
      }
      break;
    }
  }
  cleaning_ = false;
}

void World::record_cleanup(std::string_view service, int64_t deleted, CleanupOf cleaned,
                           const std::string& detail) {
  if (deleted == 0) return;
  TraceEvent event = instance_event(EventKind::cleanup, now_ms(), service, detail);
  event.rows_deleted = deleted;
  event.cleaned = cleaned;
  record(std::move(event));
}

}  // namespace inboxsim
