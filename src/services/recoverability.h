// Recoverability: what the consumers of the two services do with a delivery whose handler
// faulted, and whether a closed channel cancels a running handler. This is the behaviour of the
// libraries the services stand for, not of the world's machinery: account-service's MassTransit
// consumer retries in process (UseMessageRetry, account.retry) and then moves the message to its
// _error queue; with the Marten inbox, Wolverine's listener keeps its default failure rules;
// transfer-service's amqplib handler nacks with requeue. World asks, then does what it is told.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "domain/config.h"

namespace inboxsim {

// What a faulted delivery becomes.
struct FaultDecision {
  enum class Kind : uint8_t {
    nack,         // nacked with requeue: the broker delivers it again
    retry,        // handled again in process after `wait_ms`
    error_queue,  // moved to the endpoint's _error queue, then acked
  };
  Kind kind = Kind::nack;
  int64_t wait_ms = 0;  // retry: the wait before the next attempt
  std::string words;    // retry: the trace's words for it ("retry 1 of 3 in 50 ms (...)")
};

class Recoverability {
 public:
  explicit Recoverability(const Config& config);

  // Attempt `attempt` (0 for the first) of handling a delivery faulted; `account` when the
  // consumer is account-service's, `cancelled` when the fault was a cancellation of the consume
  // context.
  FaultDecision on_fault(bool account, size_t attempt, bool cancelled) const;
  // Whether the closing of its channel cancels a running handler of account-service's consumer
  // at its next await (MassTransit does; Wolverine's listener and amqplib do not).
  bool cancelled_by_close() const { return cancelled_by_close_; }

 private:
  std::vector<int64_t> waits_;  // the wait before each retry, in order
  bool wolverine_default_ = false;
  bool cancelled_by_close_ = false;
};

}  // namespace inboxsim
