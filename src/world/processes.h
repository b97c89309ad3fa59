// The processes: every instance of both services (docs/contract.md §8.1), in instance order, and
// what each one's life keeps: whether it is up and which incarnation it is, its pause, when its
// broker connection last opened (the heartbeat's phase), how long its next restart takes, its
// relay's publishing channel, which of its loops have a turn pending; whose each broker consumer
// is; and whose turn a client's request is (a load balancer's round robin). World decides when a
// process crashes, pauses, restarts or reconnects and does what follows (the trace, the broker,
// the handlers, the jobs); each change here is one call that returns what World needs of it. The
// instances' service objects live here too: World builds them (it is their host) and calls them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "domain/config.h"
#include "domain/crash.h"
#include "domain/scenario.h"
#include "domain/topology.h"
#include "kernel/assert.h"
#include "services/account_service.h"
#include "services/host.h"
#include "services/transfer_service.h"

namespace inboxsim {

// An instance's periodic loops, each with its flag (a turn pending): the relay's poll, the
// account outbox's sweep, the wolverine durability agent's poll. relay_awaiting is no loop: the
// relay's memory of the rows that await a confirm, which the explorer's footprints name beside
// the loops (World::touch_loop), has no flag.
enum class InstanceLoop : uint8_t { relay, sweep, durability, relay_awaiting };

// One process of a service: its liveness, its consumers, its service object on its own
// connection, and the host through which that object reaches the world. Processes changes it;
// everyone else reads it.
struct Process {
  ServiceId service = ServiceId::account;
  int64_t number = 1;
  InstanceNames names;
  bool up = true;
  uint64_t incarnation = 1;
  int64_t restart_after_ms = kRestartAfterMsDefault;  // its last crash fault's
  int64_t paused_until_ms = -1;                       // paused while now < paused_until_ms
  int64_t pause_started_ms = 0;
  int64_t connected_ms = 0;      // when its broker connection last opened: the heartbeat's phase
  uint64_t publish_channel = 1;  // the relay's publishing channel; a closed one voids confirms
  bool relay_poll_scheduled = false;
  bool sweep_scheduled = false;
  bool durability_poll_scheduled = false;
  std::vector<size_t> consumers;  // broker consumer indices
  std::unique_ptr<ServiceHost> host;
  std::unique_ptr<AccountService> account;
  std::unique_ptr<TransferService> transfer;

  bool paused(int64_t now_ms) const { return now_ms < paused_until_ms; }
  // The flag of `loop` (REQUIRES: a loop, not relay_awaiting), of a Process or a const one.
  template <typename Self>
  static auto& flag_of(Self& process, InstanceLoop loop) {
    switch (loop) {
      case InstanceLoop::relay: return process.relay_poll_scheduled;
      case InstanceLoop::sweep: return process.sweep_scheduled;
      case InstanceLoop::durability: return process.durability_poll_scheduled;
      case InstanceLoop::relay_awaiting: break;
    }
    INBOXSIM_ASSERT(false);
  }
  bool loop_pending(InstanceLoop loop) const { return flag_of(*this, loop); }
};

// Which consumer of which instance a broker consumer is.
struct InstanceConsumer {
  size_t instance = 0;
  QueueConsumer role = QueueConsumer::account;
  std::string_view participant;
};

class Processes {
 public:
  explicit Processes(const Config& config);

  // ---- wiring ----
  // A new instance, last in instance order, for the wiring to give its host and service object.
  Process& add(ServiceId service, int64_t number, InstanceNames names);
  // Broker consumer `consumer` is instance `index`'s consumer in `role`, named `participant`.
  // REQUIRES: it is the next broker consumer (the broker numbers them from 0).
  void add_consumer(size_t index, size_t consumer, QueueConsumer role,
                    std::string_view participant) {
    INBOXSIM_ASSERT(consumer == consumers_.size());
    consumers_.push_back(InstanceConsumer{index, role, participant});
    processes_[index].consumers.push_back(consumer);
  }

  // ---- reading ----
  size_t size() const { return processes_.size(); }
  const Process& at(size_t index) const { return processes_[index]; }
  std::vector<Process>::const_iterator begin() const { return processes_.begin(); }
  std::vector<Process>::const_iterator end() const { return processes_.end(); }
  // The service's first instance (the one that opens the accounts and runs a dropped index).
  const Process& first(ServiceId service) const;
  // Whose broker consumer `index` is; consumer_count() of them, every instance's.
  const InstanceConsumer& consumer(size_t index) const { return consumers_[index]; }
  size_t consumer_count() const { return consumers_.size(); }
  // An instance of `service` that is up and not paused at `now_ms`, taking turns (a load
  // balancer's round robin, which moves past it); none when every one is down or paused.
  std::optional<size_t> available(ServiceId service, int64_t now_ms);
  // Where the round robin looks first (part of the world's state: the fingerprint reads it).
  size_t next_request() const { return next_request_; }
  // When the broker's heartbeat closes the connection of instance `index`, paused now
  // (docs/contract.md §9.0). REQUIRES: the heartbeat is on.
  int64_t heartbeat_close_ms(size_t index) const;

  // ---- life and death ----
  // A crash fault fired: the instance restarts `ms` after the crash it is about to have.
  void restart_after(size_t index, int64_t ms) { processes_[index].restart_after_ms = ms; }
  // What a restart after a crash needs: whose it is and when it is due.
  struct Crash {
    uint64_t incarnation = 0;  // the new one, which the restart's job carries
    int64_t restart_after_ms = 0;
  };
  // The process died: a new incarnation, no pause, no loop pending, its publishing channel gone.
  // REQUIRES: it is up.
  Crash crash(size_t index);
  // It is back (with its committed data) and its connections open at `now_ms`.
  // REQUIRES: it is down.
  void restart(size_t index, int64_t now_ms);
  // Its broker connection opened again at `now_ms` (a new heartbeat phase).
  void connected(size_t index, int64_t now_ms) { processes_[index].connected_ms = now_ms; }
  // Pauses it from `now_ms` for `ms`; returns when the pause ends.
  int64_t pause(size_t index, int64_t now_ms, int64_t ms) {
    Process& process = processes_[index];
    process.pause_started_ms = now_ms;
    process.paused_until_ms = now_ms + ms;
    return process.paused_until_ms;
  }
  // Its relay's publishing channel closed; a new one takes its place (confirms on the old one
  // are never seen).
  void close_publish_channel(size_t index) { ++processes_[index].publish_channel; }

  // ---- loops ----
  // A turn of `loop` is scheduled; returns the incarnation its job carries.
  // REQUIRES: no turn is pending and the instance is up.
  uint64_t loop_scheduled(size_t index, InstanceLoop loop) {
    Process& process = processes_[index];
    INBOXSIM_ASSERT(!process.loop_pending(loop));
    INBOXSIM_ASSERT(process.up);
    Process::flag_of(process, loop) = true;
    return process.incarnation;
  }
  // A turn of `loop` scheduled for `incarnation` came due: whether it is this incarnation's (a
  // turn of an earlier one is void); if it is, no turn is pending any more.
  bool loop_turn(size_t index, InstanceLoop loop, uint64_t incarnation) {
    Process& process = processes_[index];
    if (process.incarnation != incarnation) return false;
    Process::flag_of(process, loop) = false;
    return true;
  }
  // The turn that came due goes again later: a turn is pending once more.
  void loop_again(size_t index, InstanceLoop loop) {
    Process::flag_of(processes_[index], loop) = true;
  }

 private:
  std::vector<Process> processes_;  // in instance order; reserved, so never moved
  std::vector<InstanceConsumer> consumers_;  // by broker consumer index
  size_t next_request_ = 0;         // where the round robin looks first
  int64_t heartbeat_ms_ = 0;        // broker.heartbeat_ms
};

}  // namespace inboxsim
