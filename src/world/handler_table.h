// The handler table: every handler started and not yet ended (running, waiting for its next
// step or a row lock, or waiting to be retried), by id in start order, and the one running now.
// World's handler runtime decides what each does; the table only holds them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "broker/message_broker.h"
#include "kernel/assert.h"
#include "kernel/task.h"
#include "services/host.h"

namespace inboxsim {

// A delivery being handled: the handler runs in steps until it acks or nacks. A faulted
// account-service handler waiting for its retry stays in the table, with no task, until it
// starts again.
struct ActiveHandler {
  size_t instance = 0;
  Delivery delivery;
  Task<Outcome> task;
  size_t attempt = 0;     // 0 for the first, then one per retry
  uint64_t resume = 0;    // where it waits and what it still needs (ServiceHost::between_steps)
  std::string next_step;  // what it does when it goes on (ServiceHost::between_steps)
  // It took (or waits for) a row lock since its last step boundary: in an exploration without
  // a clock, the boundary that follows is no event of its own (World::between_steps).
  bool right_after_lock = false;
  // The wolverine inbox: the envelope is in the incoming table and the broker was acked (by
  // this handler's ack_now, or long ago: the durability agent recovered it); the handler's end
  // acks nothing, and its next attempt runs from the table.
  bool from_table = false;
};

class HandlerTable {
 public:
  using Map = std::map<uint64_t, ActiveHandler>;

  // A new handler's id: ids rise from 1 and are never reused (an attempt that faults before it
  // starts takes one too).
  uint64_t new_id() { return next_id_++; }
  // REQUIRES: `id` is new_id()'s and not in the table.
  void add(uint64_t id, ActiveHandler handler) {
    const bool added = by_id_.emplace(id, std::move(handler)).second;
    INBOXSIM_ASSERT(added);
  }
  bool contains(uint64_t id) const { return by_id_.count(id) != 0; }
  // Null when `id` has ended (or its instance died).
  const ActiveHandler* find(uint64_t id) const {
    const auto found = by_id_.find(id);
    return found == by_id_.end() ? nullptr : &found->second;
  }
  ActiveHandler* find(uint64_t id) {
    const auto found = by_id_.find(id);
    return found == by_id_.end() ? nullptr : &found->second;
  }
  // REQUIRES: `id` is in the table.
  ActiveHandler& at(uint64_t id) {
    ActiveHandler* handler = find(id);
    INBOXSIM_ASSERT(handler != nullptr);
    return *handler;
  }
  const ActiveHandler& at(uint64_t id) const {
    const ActiveHandler* handler = find(id);
    INBOXSIM_ASSERT(handler != nullptr);
    return *handler;
  }
  // Takes a handler out of the table: it ended, was cancelled, or starts again under a new id.
  // REQUIRES: `id` is in the table.
  ActiveHandler take(uint64_t id) {
    const auto found = by_id_.find(id);
    INBOXSIM_ASSERT(found != by_id_.end());
    ActiveHandler handler = std::move(found->second);
    by_id_.erase(found);
    return handler;
  }
  // The ids of an instance's handlers, in start order.
  std::vector<uint64_t> of_instance(size_t instance) const {
    std::vector<uint64_t> ids;
    for (const auto& [id, handler] : by_id_) {
      if (handler.instance == instance) ids.push_back(id);
    }
    return ids;
  }
  void erase(uint64_t id) { by_id_.erase(id); }
  Map::const_iterator begin() const { return by_id_.begin(); }
  Map::const_iterator end() const { return by_id_.end(); }

  // The handler running now (between resume's start and its return), 0 outside handlers.
  uint64_t running() const { return running_; }
  // REQUIRES: a handler is running.
  ActiveHandler& running_handler() {
    INBOXSIM_ASSERT(running_ != 0);
    return at(running_);
  }
  // Runs handler `id` until its next suspension; returns whether it ended.
  // REQUIRES: `id` is in the table and no handler is running.
  bool resume(uint64_t id) {
    INBOXSIM_ASSERT(running_ == 0);
    running_ = id;
    const bool ended = at(id).task.resume();
    running_ = 0;
    return ended;
  }

 private:
  Map by_id_;
  uint64_t next_id_ = 1;
  uint64_t running_ = 0;
};

}  // namespace inboxsim
