// The handler runtime: a delivery's handler runs as a coroutine in steps (each a job of its
// own), waits at row locks, and ends acked, nacked, faulted or crashed; a faulted one goes where
// the consumer's recoverability (services/recoverability.h) says.
#include <string>
#include <utility>
#include <vector>

#include "domain/participants.h"
#include "kernel/assert.h"
#include "world/world.h"
#include "world/world_events.h"

namespace inboxsim {

// Starts attempt `attempt` of handling a delivery. The `nack` fault faults the attempt before
// the handler gets anywhere, as a busy database would, or a message the handler cannot process
// (a poison message: the fault's cause says which the story means).
void World::start_handler(size_t instance_index, const Delivery& delivery, size_t attempt,
                          bool from_table) {
  const Process& instance = processes_.at(instance_index);
  const uint64_t id = handlers_.new_id();
  ActiveHandler handler;
  handler.instance = instance_index;
  handler.delivery = delivery;
  handler.attempt = attempt;
  handler.from_table = from_table;
  if (const std::optional<FaultSpec> fault =
          take_fault(FaultKind::nack, instance.service, instance.number, *delivery.message)) {
    handler_faulted(std::move(handler),
                    ConsumerFault{fault->cause == FailureCause::poison
                                      ? "the handler throws on this message (poison)"
                                      : "transient failure (database busy)",
                                  FaultCause::injected});
    return;
  }
  switch (processes_.consumer(delivery.consumer).role) {
    case ConsumerRole::account:
      handler.task = from_table ? instance.account->handle_stored(delivery.message)
                                : instance.account->handle(delivery.message);
      break;
    case ConsumerRole::saga:
      handler.task = instance.transfer->handle(TransferConsumer::saga, delivery.message);
      break;
    case ConsumerRole::notifications:
      handler.task = instance.transfer->handle(TransferConsumer::notifications, delivery.message);
      break;
  }
  handlers_.add(id, std::move(handler));
  run_handler(id);
}

// Whether a handler is account-service's and its consumer's library cancels it now that its
// channel has closed (Recoverability::cancelled_by_close).
bool World::cancelled_by_close(const ActiveHandler& handler) const {
  return processes_.consumer(handler.delivery.consumer).role == ConsumerRole::account &&
         recoverability_.cancelled_by_close() &&
         !broker_->channel_open(handler.delivery.consumer, handler.delivery.channel);
}

// A cancelled handler rolls back (no transaction spans a step, so nothing is open), gives up
// its row locks, is not retried, and moves nothing to the _error queue: the rescue pipe ignores
// OperationCanceledException, and the broker requeued the delivery when the channel closed.
void World::cancel_handler(uint64_t id) {
  ActiveHandler handler = handlers_.take(id);
  release_locks(handler.instance, id);
  const Delivery& delivery = handler.delivery;
  TraceEvent event =
      event_about(EventKind::consumer_fault, now_ms(),
                  processes_.consumer(delivery.consumer).participant, *delivery.message);
  event.detail =
      "cancelled: its channel closed, so MassTransit cancelled the consume context; rolled back, "
      "locks released, not retried, nothing moved to the _error queue (" +
      std::string(broker_->cancelled_handler_words()) + ")";
  event.cause = FaultCause::cancelled;
  record(std::move(event));
}

// Runs a handler until its next suspension; a handler that ended is settled at once.
void World::run_handler(uint64_t id) {
  if (cancelled_by_close(handlers_.at(id))) {
    cancel_handler(id);
    return;
  }
  if (handlers_.resume(id)) finish_handler(id);
}

void World::finish_handler(uint64_t id) {
  ActiveHandler handler = handlers_.take(id);
  Outcome outcome = Outcome::ack;
  try {
    outcome = handler.task.result();
  } catch (const ServiceCrash&) {
    release_locks(handler.instance, id);
    crashed(handler.instance);
    return;
  } catch (const ConsumerFault& fault) {
    release_locks(handler.instance, id);
    handler_faulted(std::move(handler), fault);
    return;
  }
  // A handler that ends normally has committed every pass and released its locks already.
  release_locks(handler.instance, id);
  if (outcome == Outcome::ack) {
    if (!handler.from_table) send_ack(handler);
  } else {
    INBOXSIM_ASSERT(!handler.from_table);
    send_nack(handler.delivery, "handler asked for a retry");
  }
}

// A handler faulted (its transaction rolled back): its consumer's recoverability says whether
// the delivery is nacked, handled again after a wait, or moved to the error queue.
void World::handler_faulted(ActiveHandler handler, const ConsumerFault& fault) {
  const std::string_view reason = fault.reason;
  const Delivery& delivery = handler.delivery;
  const bool account = processes_.consumer(delivery.consumer).role == ConsumerRole::account;
  TraceEvent event =
      event_about(EventKind::consumer_fault, now_ms(),
                  processes_.consumer(delivery.consumer).participant, *delivery.message);
  event.detail = std::string(reason) + "; rolled back" + (account ? "" : ", will nack");
  event.cause = fault.cause;
  record(std::move(event));
  FaultDecision decision = recoverability_.on_fault(account, handler.attempt, fault.cancelled);
  switch (decision.kind) {
    case FaultDecision::Kind::nack:
      INBOXSIM_ASSERT(!handler.from_table);
      send_nack(delivery, std::string(reason));
      return;
    case FaultDecision::Kind::error_queue: move_to_error_queue(handler, reason); return;
    case FaultDecision::Kind::retry: break;
  }
  TraceEvent retry =
      delivery_event(EventKind::retry, now_ms(), processes_.consumer(delivery.consumer).participant,
                     participant::broker, delivery);
  retry.target = {};
  retry.detail = std::move(decision.words);
  record(std::move(retry));
  const uint64_t id = handlers_.new_id();
  const Job job = Job::of_instance(handler.instance, job::Retry{id});
  ++handler.attempt;
  handler.task = Task<Outcome>();
  handler.resume = 0;
  handlers_.add(id, std::move(handler));
  schedule(now_ms() + decision.wait_ms, job);
}

void World::on_retry(uint64_t id) {
  const ActiveHandler* found = handlers_.find(id);
  if (found == nullptr) return;  // the instance died while it waited
  // RetryFilter's Task.Delay waits on the consume context's token (RetryFilter.cs).
  if (cancelled_by_close(*found)) {
    cancel_handler(id);
    return;
  }
  const ActiveHandler waiting = handlers_.take(id);
  start_handler(waiting.instance, waiting.delivery, waiting.attempt, waiting.from_table);
}

// MassTransit's error transport: the faulted message goes to <queue>_error, then the delivery
// is acked (the ack may still be lost, or void on a closed channel, like any ack). A handler of
// the wolverine inbox's table has no delivery left to ack: the envelope leaves the incoming
// table for dead-letter storage (here the error queue) instead.
void World::move_to_error_queue(const ActiveHandler& handler, std::string_view reason) {
  const Delivery& delivery = handler.delivery;
  if (handler.from_table) {
    guarded(handler.instance,
            [&] { processes_.at(handler.instance).account->dead_letter(*delivery.message); });
  }
  const std::string& queue = broker_->move_to_error_queue(account_error_queue_, delivery.message);
  TraceEvent event = delivery_event(EventKind::error_queued, now_ms(),
                                    processes_.consumer(delivery.consumer).participant,
                                    participant::broker, delivery);
  event.detail = "moved to " + queue + " after " + std::to_string(handler.attempt + 1) +
                 " attempt(s) (" + std::string(reason) +
                 (handler.from_table ? "); the envelope leaves wolverine_incoming_envelopes"
                                     : "); the delivery is acked");
  record(std::move(event));
  if (!handler.from_table) send_ack(handler);
}

Suspend World::between_steps(size_t index, CrashPointSet points, const Message& message,
                             uint64_t resume, std::string next) {
  const Process& instance = processes_.at(index);
  ActiveHandler& handler = handlers_.running_handler();
  handler.resume = resume;
  handler.next_step = std::move(next);
  for (size_t point = 0; point < kCrashPointCount; ++point) {
    if (points.contains(static_cast<CrashPoint>(point))) {
      crash_point(index, static_cast<CrashPoint>(point), &message);
    }
  }
  for (size_t point = 0; point < kCrashPointCount; ++point) {
    const auto at = static_cast<CrashPoint>(point);
    if (!points.contains(at)) continue;
    if (const auto fired =
            take_fault_at(FaultKind::pause, instance.service, instance.number, at, &message)) {
      pause(index, fired->ms, at, message);
      break;
    }
  }
  const int64_t work = work_ms();
  const int64_t start_ms = instance.paused(now_ms()) ? instance.paused_until_ms : now_ms();
  // In an exploration every step is an event of its own: others may happen in between. All but
  // the step right after a row lock's grant, with no crash point: taking a lock is a right
  // mover (Lipton's reduction), since no other event can change what the step reads under the
  // lock, so the explorer takes the grant and the step after it as one event. An order that
  // puts another event between them reaches the same states as the one that puts it before
  // the grant, or, for another taker of the lock, after the step (docs/model.md).
  const bool fused = std::exchange(handler.right_after_lock, false) && points.empty();
  if (fused && clockless() && explorer_.control().fuse_lock_steps) return Suspend{false};
  if (start_ms + work == now_ms() && !clockless()) return Suspend{false};
  schedule(start_ms + work, Job::of_instance(index, job::Resume{handlers_.running()}));
  return Suspend{true};
}

Suspend World::lock_row(size_t index, const std::string& key, uint64_t resume,
                        std::string next) {
  ActiveHandler& handler = handlers_.running_handler();
  handler.resume = resume;
  handler.next_step = std::move(next);
  handler.right_after_lock = true;
  const Process& instance = processes_.at(index);
  RowLocks& locks = locks_of(instance.service);
  touch_row_lock(instance.service, key);
  const std::optional<uint64_t> holder = locks.owner(key);
  if (locks.acquire(key, handlers_.running())) return Suspend{false};
  const ActiveHandler* owner = handlers_.find(*holder);
  const Delivery& waiting = handlers_.running_handler().delivery;
  const std::string_view held_by = owner == nullptr
                                       ? std::string_view("another handler")
                                       : processes_.consumer(owner->delivery.consumer).participant;
  TraceEvent event =
      event_about(EventKind::lock_wait, now_ms(), processes_.consumer(waiting.consumer).participant,
                  *waiting.message);
  event.detail = "waits for the row lock on " + key + ", held by " + std::string(held_by);
  record(std::move(event));
  return Suspend{true};
}

Suspend World::sleep(size_t index, int64_t ms, uint64_t resume, std::string next) {
  INBOXSIM_ASSERT(ms > 0);
  ActiveHandler& handler = handlers_.running_handler();
  handler.resume = resume;
  handler.next_step = std::move(next);
  handler.right_after_lock = false;  // a wait is an event's boundary whatever came before
  schedule(now_ms() + ms, Job::of_instance(index, job::Resume{handlers_.running()}));
  return Suspend{true};
}

void World::unlock_row(size_t index, const std::string& key) {
  INBOXSIM_ASSERT(handlers_.running() != 0);
  RowLocks& locks = locks_of(processes_.at(index).service);
  touch_row_lock(processes_.at(index).service, key);
  if (const std::optional<uint64_t> next = locks.release(key, handlers_.running())) {
    grant_lock(key, *next);
  }
}

// Releases the locks a handler still holds (it rolled back or its process died) and withdraws
// it from every lock it waits for.
void World::release_locks(size_t index, uint64_t handler) {
  RowLocks& locks = locks_of(processes_.at(index).service);
  if (locks.empty()) return;
  touch_row_locks_of(processes_.at(index).service, handler);
  for (const RowLocks::Grant& grant : locks.release_all(handler)) {
    grant_lock(grant.key, grant.handler);
  }
}

// The waiter that now owns `key` goes on with its step.
void World::grant_lock(const std::string& key, uint64_t handler) {
  const ActiveHandler& waiter = handlers_.at(handler);
  const Delivery& delivery = waiter.delivery;
  TraceEvent event =
      event_about(EventKind::lock_granted, now_ms(),
                  processes_.consumer(delivery.consumer).participant, *delivery.message);
  event.detail = "got the row lock on " + key;
  record(std::move(event));
  schedule(now_ms(), Job::of_instance(waiter.instance, job::Resume{handler}));
}

}  // namespace inboxsim
