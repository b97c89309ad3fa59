#include "services/recoverability.h"

namespace inboxsim {

namespace {

// Wolverine's listener (account.inbox = marten) with no account.retry keeps its default failure
// rules: three attempts, then the error queue (JasperFx/wolverine 6.29.2,
// ErrorHandling/FailureRuleCollection.cs, MaximumAttempts ?? 3). Its attempts requeue; here they
// run again in process, as account.retry does.
const std::vector<int64_t> kWolverineAttemptWaitsMs = {0, 0};

}  // namespace

Recoverability::Recoverability(const Config& config)
    : wolverine_default_(account_inbox_kind(config.account_inbox).framework ==
                             InboxFramework::wolverine &&
                         config.account_retry.kind == RetryPolicy::Kind::none),
      // RabbitMqBasicConsumer's HandleChannelShutdown cancels every pending receive context
      // (ConsumerAgent.CancelPendingConsumers), so the handler stops at its next await.
      // Wolverine's listener does not cancel a running handler.
      cancelled_by_close_(account_inbox_kind(config.account_inbox).framework ==
                          InboxFramework::masstransit) {
  waits_ = wolverine_default_ ? kWolverineAttemptWaitsMs : config.account_retry.intervals_ms;
}

// transfer-service's handler nacks, and the broker requeues. account-service runs MassTransit's
// UseMessageRetry (account.retry): the delivery is handled again in process after each wait,
// and once the retries are spent the message is moved to account-service_error and acked: the
// broker never sees it again.
FaultDecision Recoverability::on_fault(bool account, size_t attempt, bool cancelled) const {
  FaultDecision decision;
  if (!account) return decision;
  const std::vector<int64_t>& waits = waits_;
  if (attempt >= waits.size()) {
    // The rescue pipe ignores OperationCanceledException (ReceivePipeConfiguration.cs): no
    // _error queue; the receive lock nacks the delivery with requeue.
    decision.kind = cancelled ? FaultDecision::Kind::nack : FaultDecision::Kind::error_queue;
    return decision;
  }
  decision.kind = FaultDecision::Kind::retry;
  decision.wait_ms = waits[attempt];
  decision.words = "retry " + std::to_string(attempt + 1) + " of " + std::to_string(waits.size()) +
                   " in " + std::to_string(decision.wait_ms) +
                   (wolverine_default_
                        ? " ms (Wolverine's default failure rules: 3 attempts)"
                        : " ms (UseMessageRetry, in process: the broker still holds the delivery)");
  return decision;
}

}  // namespace inboxsim
