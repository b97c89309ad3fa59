// The wolverine inbox's durability agent (account.inbox = wolverine): every account-service
// instance runs one on a timer (account.durability_poll_ms, Wolverine's
// DurabilitySettings.ScheduledJobPollingTime, 5 s). A poll releases the Incoming envelopes of
// nodes that are gone and claims the unowned ones for its node, which then handles each from the
// table. A node is gone when its process is down, when it has restarted (a new start is a new
// node number), or when it has been paused longer than Wolverine's StaleNodeTimeout (1 min): its
// health check is stale, although it may still be running a handler (Wolverine #585).
//
// The timer is modelled only while the table holds an Incoming envelope: a poll with nothing to
// recover changes nothing, and a timer that never stops would keep a story from ending. The
// first poll is a period after the store (or the restart) that started it.
#include <string>
#include <utility>
#include <vector>

#include "kernel/assert.h"
#include "world/world.h"
#include "world/world_events.h"

namespace inboxsim {

void World::on_durability_poll(const Job& job) {
  if (!processes_.loop_turn(job.instance, Loop::durability, job.incarnation)) return;
  const Process& instance = processes_.at(job.instance);
  if (footprinting()) {
    // Which nodes are live reads every account-service process.
    for (size_t index = 0; index < processes_.size(); ++index) {
      if (processes_.at(index).service == ServiceId::account) touch_instance(index, Access::read);
    }
  }
  const std::vector<int64_t> live = live_nodes();
  guarded(job.instance, [&] {
    const AccountService::Recovery recovery = instance.account->recover_envelopes(live);
    for (const MessagePtr& message : recovery.recovered) start_table_handler(job.instance, message);
    if (recovery.incoming_left) schedule_durability_poll(job.instance);
  });
}

// Every account-service node's agent polls the one table: each is asked to run.
void World::schedule_durability_polls() {
  for (size_t index = 0; index < processes_.size(); ++index) {
    if (processes_.at(index).service == ServiceId::account) schedule_durability_poll(index);
  }
}

void World::schedule_durability_poll(size_t index) {
  if (footprinting()) {
    touch_instance(index, Access::read);
    touch_loop(index, Loop::durability);
  }
  const Process& instance = processes_.at(index);
  if (config_.account_durability_poll_ms == 0) return;  // DurabilityAgentEnabled = false
  if (instance.loop_pending(Loop::durability) || !instance.up) return;
  schedule_loop(index, job::DurabilityPoll{}, Loop::durability, config_.account_durability_poll_ms);
}

// The node numbers of the account-service processes that are up and whose health check is
// fresh: a pause as long as the stale-node timeout makes a node look dead.
std::vector<int64_t> World::live_nodes() const {
  std::vector<int64_t> live;
  for (const Process& instance : processes_) {
    if (instance.service != ServiceId::account || !instance.up) continue;
    if (instance.paused(now_ms()) && now_ms() - instance.pause_started_ms >= kStaleNodeTimeoutMs) {
      continue;
    }
    live.push_back(instance.account->node_number());
  }
  return live;
}

// A recovered envelope goes to the node's local queue and its handler: no broker delivery, so
// the handler's delivery names only the instance's account consumer.
void World::start_table_handler(size_t index, const MessagePtr& message) {
  Delivery delivery;
  delivery.message = message;
  INBOXSIM_ASSERT(!processes_.at(index).consumers.empty());
  delivery.consumer = processes_.at(index).consumers.front();
  start_handler(index, delivery, 0, /*from_table=*/true);
}

// The durable receiver acks the broker as soon as the envelope is stored; the handler goes on.
// The ack reaches the broker at once (a lost ack, a closed channel still apply), so a crash at
// after_ack is a crash after the broker has the ack; a crash before it is after_store.
void World::ack_now(size_t index) {
  ActiveHandler& handler = handlers_.running_handler();
  INBOXSIM_ASSERT(handler.instance == index);
  INBOXSIM_ASSERT(!handler.from_table);
  send_ack(handler, /*at_once=*/true);
  handler.from_table = true;
}

}  // namespace inboxsim
