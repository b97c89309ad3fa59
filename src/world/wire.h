// The wire between the broker and its consumers: the deliveries on their way, each under the
// id its deliver job carries. World decides when one arrives (the network's latency, a `delay`
// fault) and what it starts; the wire only holds them.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "broker/message_broker.h"
#include "kernel/assert.h"

namespace inboxsim {

class Wire {
 public:
  // Puts a delivery on the wire; returns its id.
  int64_t send(Delivery delivery) {
    const int64_t id = next_id_++;
    in_flight_.emplace(id, std::move(delivery));
    return id;
  }
  // Takes delivery `id` off the wire as it reaches its consumer.
  // REQUIRES: it is on the wire.
  Delivery arrive(int64_t id) {
    const auto found = in_flight_.find(id);
    INBOXSIM_ASSERT(found != in_flight_.end());
    Delivery delivery = std::move(found->second);
    in_flight_.erase(found);
    return delivery;
  }
  // REQUIRES: delivery `id` is on the wire.
  const Delivery& at(int64_t id) const {
    const auto found = in_flight_.find(id);
    INBOXSIM_ASSERT(found != in_flight_.end());
    return found->second;
  }
  const std::map<int64_t, Delivery>& in_flight() const { return in_flight_; }
  // Where the broker's pump puts what it dispatches (kept to reuse its storage).
  std::vector<Delivery>& dispatched() { return dispatched_; }

 private:
  std::map<int64_t, Delivery> in_flight_;  // by id, in the order they were sent
  int64_t next_id_ = 1;
  std::vector<Delivery> dispatched_;
};

}  // namespace inboxsim
