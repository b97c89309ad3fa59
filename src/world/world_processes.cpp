// The processes: an instance's restarts, pauses (and the broker's heartbeat that notices them),
// crashes at a crash point, and its connections closing and reopening.
#include <string>
#include <utility>
#include <vector>

#include "domain/participants.h"
#include "kernel/assert.h"
#include "world/world.h"
#include "world/world_events.h"

namespace inboxsim {

void World::on_restart(size_t index) {
  processes_.restart(index, now_ms());
  const Process& instance = processes_.at(index);
  record(instance_event(EventKind::restart, now_ms(), instance.names.service,
                        "restarted with its committed data"));
  for (const size_t consumer : instance.consumers) {
    if (!broker_->connected(consumer)) broker_->open_connection(consumer, now_ms());
  }
  guarded(index, [&] {
    if (instance.account) {
      instance.account->restart();
      // A new node's durability agent starts its timer.
      if (account_inbox_kind(config_.account_inbox).store_and_ack) schedule_durability_poll(index);
    } else {
      instance.transfer->restart();
    }
  });
  pump();
}

void World::on_reconnect(size_t index, const job::Reconnect& reconnect) {
  const Process& instance = processes_.at(index);
  if (!instance.up) return;
  bool opened = false;
  for (const size_t consumer : instance.consumers) {
    if (reconnect.consumer && consumer != *reconnect.consumer) continue;
    if (broker_->connected(consumer)) continue;
    broker_->open_connection(consumer, now_ms());
    opened = true;
  }
  if (!opened) return;
  processes_.connected(index, now_ms());
  pump();
}

// The broker closes a connection whose heartbeat checks saw nothing twice
// (Processes::heartbeat_close_ms). The process is alive, only paused: its handlers will run on.
void World::on_heartbeat_timeout(const Job& job) {
  const Process& instance = processes_.at(job.instance);
  if (instance.incarnation != job.incarnation || !instance.paused(now_ms())) return;
  if (now_ms() != processes_.heartbeat_close_ms(job.instance)) return;  // an earlier pause
  close_instance_connections(
      job.instance, "two heartbeat checks in a row (every " +
                        std::to_string(config_.broker_heartbeat_ms) + " ms) saw nothing for " +
                        std::to_string(now_ms() - instance.pause_started_ms) +
                        " ms: the broker closed the connection; unacked deliveries go back to "
                        "the queue");
}

// RabbitMQ's consumer timeout (rabbit_channel:evaluate_consumer_timeout, v4.0.9): a channel's
// tick finds its oldest unacked delivery older than consumer_timeout and closes the channel
// with PRECONDITION_FAILED; the broker requeues every delivery it had unacked, and the client
// opens a new channel. An exploration has no clock, so no timeout.
bool World::consumer_timeout_due(int64_t until_ms) {
  if (config_.broker_consumer_timeout_ms <= 0 || clockless() || !halted_reason_.empty()) {
    return false;
  }
  const auto due =
      broker_->next_consumer_timeout(config_.broker_consumer_timeout_ms, kChannelTickMs);
  if (!due || due->at_ms > until_ms) return false;
  scheduler_.advance_to(due->at_ms);
  maybe_cleanup();
  reset_connection(due->consumer,
                   "PRECONDITION_FAILED: delivery acknowledgement (tag " +
                       std::to_string(due->delivery_tag) + ", delivered at " +
                       std::to_string(due->delivered_ms) + " ms) timed out, consumer_timeout " +
                       std::to_string(config_.broker_consumer_timeout_ms) +
                       " ms: the broker closed the channel; every unacked delivery on it goes "
                       "back to the queue");
  return true;
}

void World::on_pause_end(size_t index) {
  const Process& instance = processes_.at(index);
  if (!instance.up || instance.paused(now_ms())) return;
  record(instance_event(EventKind::resumed, now_ms(), instance.names.service,
                        "goes on where it stopped"));
  bool closed = false;
  for (const size_t consumer : instance.consumers) closed = closed || !broker_->connected(consumer);
  if (!closed) return;
  // The client library finds its connection gone and recovers it; its handlers run on.
  schedule(now_ms() + kReconnectMs, Job::of_instance(index, job::Reconnect{}));
}

void World::pause(size_t index, int64_t ms, CrashPoint point, const Message& message) {
  if (footprinting()) touch_instance(index);
  const int64_t until_ms = processes_.pause(index, now_ms(), ms);
  const Process& instance = processes_.at(index);
  TraceEvent event = event_about(EventKind::paused, now_ms(), instance.names.service, message);
  event.duration_ms = ms;
  event.detail = "paused for " + std::to_string(ms) + " ms at " +
                 std::string(crash_point_name(point)) + " (a GC pause, a stalled disk)";
  record(std::move(event));
  schedule(until_ms, Job::of_instance(index, job::PauseEnd{}));
  // RabbitMQ's heartbeat (JetStream's pull consumers lose nothing to a silent client).
  if (config_.broker_heartbeat_ms > 0 && broker_->has_heartbeats()) {
    // A pause that ends before the close resumes the heartbeats in time (pause_end runs first
    // when the two fall on the same millisecond: it was scheduled first).
    const int64_t close_ms = processes_.heartbeat_close_ms(index);
    if (close_ms < until_ms) {
      schedule(close_ms, Job::of_instance(index, job::HeartbeatTimeout{}, instance.incarnation));
    }
  }
}

void World::crash_point(size_t index, CrashPoint point, const Message* message) {
  const Process& instance = processes_.at(index);
  const auto fired =
      take_fault_at(FaultKind::crash, instance.service, instance.number, point, message);
  if (!fired) return;
  if (footprinting()) touch_instance(index);
  processes_.restart_after(index, fired->restart_after_ms);
  TraceEvent event;
  if (message != nullptr) event = event_about(EventKind::crash, now_ms(), {}, *message);
  event.time_ms = now_ms();
  event.kind = EventKind::crash;
  event.service = instance.names.service;
  event.crash_point = point;
  event.detail = std::string(crash_point_name(point));
  record(std::move(event));
  throw ServiceCrash{instance.service, point};
}

// The process died: its handlers die with it (their open transactions roll back, their row
// locks go), its connections close (the broker requeues what they had unacked), its memory is
// gone; it comes back later with its committed data.
void World::crashed(size_t index) {
  if (footprinting()) {
    touch_instance(index);
    touch_incarnation(index);
    touch_publish_channel(index);
    touch_loop(index, Loop::relay);
    touch_loop(index, Loop::sweep);
    touch_loop(index, Loop::durability);
    touch_loop(index, Loop::relay_awaiting);
  }
  // Its publishing channel dies with it (Processes::crash): nothing it awaited will be confirmed.
  const Processes::Crash crash = processes_.crash(index);
  const Process& instance = processes_.at(index);
  confirms_.forget(index);
  const std::vector<uint64_t> dying = handlers_.of_instance(index);
  // None of them may be handed a lock another of them releases.
  for (const uint64_t id : dying) touch_row_locks_of(instance.service, id);
  for (const uint64_t id : dying) locks_of(instance.service).withdraw(id);
  for (const uint64_t id : dying) {
    release_locks(index, id);
    handlers_.erase(id);
  }
  if (instance.transfer) instance.transfer->crash();
  close_instance_connections(index, "process died; " + std::string(broker_->process_death_words()));
  schedule(now_ms() + crash.restart_after_ms,
           Job::of_instance(index, job::Restart{}, crash.incarnation));
}

void World::close_instance_connections(size_t index, const std::string& reason) {
  for (const size_t consumer : processes_.at(index).consumers) {
    if (!broker_->connected(consumer)) continue;
    TraceEvent event = instance_event(EventKind::connection_closed, now_ms(),
                                      processes_.consumer(consumer).participant, reason);
    event.target = participant::broker;
    record(std::move(event));
    broker_->close_connection(consumer, now_ms(), "connection closed");
  }
  // What went back to the queue is for the other instances to take now.
  pump();
}

void World::reset_connection(size_t consumer, std::string reason) {
  TraceEvent event = instance_event(EventKind::connection_closed, now_ms(),
                                    processes_.consumer(consumer).participant, std::move(reason));
  event.target = participant::broker;
  record(std::move(event));
  broker_->close_connection(consumer, now_ms(), "connection closed");
  pump();
  schedule(now_ms() + kReconnectMs,
           Job::of_instance(processes_.consumer(consumer).instance, job::Reconnect{consumer}));
}

}  // namespace inboxsim
