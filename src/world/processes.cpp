#include "world/processes.h"

#include <algorithm>
#include <utility>

#include "domain/participants.h"

namespace inboxsim {

Processes::Processes(const Config& config) : heartbeat_ms_(config.broker_heartbeat_ms) {
  INBOXSIM_ASSERT(config.account_instances >= 1 && config.account_instances <= kInstancesMax);
  INBOXSIM_ASSERT(config.transfer_instances >= 1 && config.transfer_instances <= kInstancesMax);
  // Every instance's connection is opened before any runs, so the vector never moves them.
  processes_.reserve(static_cast<size_t>(config.account_instances + config.transfer_instances));
}

Process& Processes::add(ServiceId service, int64_t number, InstanceNames names) {
  INBOXSIM_ASSERT(processes_.size() < processes_.capacity());
  Process& process = processes_.emplace_back();
  process.service = service;
  process.number = number;
  process.names = names;
  return process;
}

const Process& Processes::first(ServiceId service) const {
  for (const Process& process : processes_) {
    if (process.service == service) return process;
  }
  INBOXSIM_ASSERT(false);
}

std::optional<size_t> Processes::available(ServiceId service, int64_t now_ms) {
  const size_t count = processes_.size();
  for (size_t tried = 0; tried < count; ++tried) {
    const size_t index = (next_request_ + tried) % count;
    const Process& process = processes_[index];
    if (process.service != service || !process.up || process.paused(now_ms)) continue;
    next_request_ = (index + 1) % count;
    return index;
  }
  return std::nullopt;
}

// RabbitMQ's heartbeat receiver (rabbit_heartbeat:start_heartbeat_receiver, v4.0.9) checks the
// socket for incoming data every heartbeat interval T, counted from when the connection opened,
// and gives up at the second check in a row that saw nothing: between 2T and 3T after the last
// data. The paused process sends nothing from its pause's start, and a check at that very
// millisecond still sees its last frame: the close comes 2T after the first check at or after
// the pause began.
int64_t Processes::heartbeat_close_ms(size_t index) const {
  const Process& process = processes_[index];
  const int64_t interval = heartbeat_ms_;
  INBOXSIM_ASSERT(interval > 0);
  const int64_t since_open = process.pause_started_ms - process.connected_ms;
  const int64_t checks = std::max<int64_t>(1, (since_open + interval - 1) / interval);
  return process.connected_ms + (checks + 2) * interval;
}

Processes::Crash Processes::crash(size_t index) {
  Process& process = processes_[index];
  INBOXSIM_ASSERT(process.up);
  process.up = false;
  ++process.incarnation;
  process.paused_until_ms = -1;
  process.relay_poll_scheduled = false;
  process.sweep_scheduled = false;
  process.durability_poll_scheduled = false;
  // The relay's publishing channel dies with the process: a confirm still on its way belongs
  // to a channel that no longer exists (it must not take the place of the new channel's
  // confirm), and the new incarnation publishes again.
  ++process.publish_channel;
  return Crash{process.incarnation, process.restart_after_ms};
}

void Processes::restart(size_t index, int64_t now_ms) {
  Process& process = processes_[index];
  INBOXSIM_ASSERT(!process.up);
  process.up = true;
  process.connected_ms = now_ms;
}

}  // namespace inboxsim
