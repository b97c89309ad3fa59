// The wire between the broker and the consumers: deliveries in flight (each reaches its consumer
// after the network's latency, or a `delay` fault's), and acks and nacks on their way back.
#include <algorithm>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "domain/participants.h"
#include "kernel/assert.h"
#include "world/world.h"
#include "world/world_events.h"

namespace inboxsim {

void World::on_deliver(const job::Deliver& deliver) {
  const Delivery delivery = wire_.arrive(deliver.delivery_id);
  // A delivery still on the wire when its channel closed was requeued then; this copy is void.
  if (!broker_->channel_open(delivery.consumer, delivery.channel)) return;
  const InstanceConsumer& consumer = processes_.consumer(delivery.consumer);
  const Process& instance = processes_.at(consumer.instance);
  INBOXSIM_ASSERT(instance.up);
  record(delivery_event(EventKind::deliver, now_ms(), participant::broker, consumer.participant,
                        delivery));
  if (broker_->redelivers_without_limit() && delivery.attempts + 1 >= kDeliveriesPerMessageMax) {
    halted_reason_ =
        "message " + delivery.message->message_id + " (" +
        std::string(message_type_name(delivery.message->type)) + " " + delivery.message->transfer +
        ") was delivered " + std::to_string(delivery.attempts + 1) + " times from " +
        std::string(consumer.participant) + "'s " + std::string(broker_->unlimited_queue_words()) +
        ": a poison message loops, and the run stopped at its bound";
    return;
  }
  const Message& message = *delivery.message;
  if (take_fault(FaultKind::drop_connection, instance.service, instance.number, message)) {
    reset_connection(delivery.consumer, "connection dropped");
    return;
  }
  start_handler(consumer.instance, delivery, 0);
}

// A handler whose connection closed while it ran (a zombie consumer) acks into the void: the
// client library refuses to ack on a closed channel, and the broker has already requeued the
// message. Returns true (and says so) when that is the case.
bool World::ack_void(const Delivery& delivery, std::string_view verb) {
  if (broker_->channel_open(delivery.consumer, delivery.channel)) return false;
  TraceEvent event = delivery_event(EventKind::ack_void, now_ms(),
                                    processes_.consumer(delivery.consumer).participant,
                                    participant::broker, delivery);
  event.detail = std::string(verb) + " on a closed channel: ignored; " +
                 std::string(broker_->closed_connection_words());
  record(std::move(event));
  return true;
}

void World::send_ack(const ActiveHandler& handler, bool at_once) {
  const Delivery& delivery = handler.delivery;
  if (ack_void(delivery, "ack")) return;
  const Process& instance = processes_.at(handler.instance);
  if (take_fault(FaultKind::drop_ack, instance.service, instance.number, *delivery.message)) {
    TraceEvent event = delivery_event(EventKind::ack_lost, now_ms(),
                                      processes_.consumer(delivery.consumer).participant,
                                      participant::broker, delivery);
    event.detail = "ack lost on the wire";
    record(std::move(event));
    reset_connection(delivery.consumer, "connection reset after a lost ack");
    return;
  }
  const job::Ack ack{delivery.consumer, delivery.channel, delivery.delivery_tag};
  if (at_once) {
    on_ack(ack);
    return;
  }
  schedule(now_ms() + latency_ms(), Job::unowned(ack));
}

// JetStream's +WPI (consumer.in_progress): a handler whose next step had to wait tells the
// server it is still working before it goes on, so its delivery's ack wait starts again. The
// reply reaches the server at once (unlike an ack, it does not travel the network's latency).
void World::send_in_progress(uint64_t id) {
  if (!config_.consumer_in_progress) return;
  const ActiveHandler& handler = handlers_.at(id);
  if (handler.from_table || cancelled_by_close(handler)) return;
  const Delivery& delivery = handler.delivery;
  if (!broker_->in_progress(delivery.consumer, delivery.channel, delivery.delivery_tag,
                            now_ms())) {
    return;
  }
  TraceEvent event = delivery_event(EventKind::in_progress, now_ms(),
                                    processes_.consumer(delivery.consumer).participant,
                                    participant::broker, delivery);
  event.detail = "still working on it, the ack wait (" + std::to_string(config_.broker_ack_wait_ms) +
                 " ms) starts again";
  record(std::move(event));
  schedule_broker_timer();
}

// A nack; on JetStream, once the delivery was made consumer.term_after times, a +TERM instead:
// the server delivers the message no more.
void World::send_nack(const Delivery& delivery, std::string reason) {
  if (ack_void(delivery, "nack")) return;
  const int64_t deliveries = delivery.delivery_count + 1;  // NumDelivered counts this one
  const bool term = config_.consumer_term_after > 0 && deliveries >= config_.consumer_term_after;
  TraceEvent event = delivery_event(term ? EventKind::term : EventKind::nack, now_ms(),
                                    processes_.consumer(delivery.consumer).participant,
                                    participant::broker, delivery);
  event.detail = std::move(reason);
  if (term) {
    event.detail += "; delivered " + std::to_string(deliveries) +
                    " times (consumer.term_after): given up, the server delivers it no more";
  }
  record(std::move(event));
  const job::Nack nack{delivery.consumer, delivery.channel, delivery.delivery_tag, term};
  schedule(now_ms() + latency_ms(), Job::unowned(nack));
}

void World::on_nack(const job::Nack& nack) {
  if (nack.term) {
    broker_->reject(nack.consumer, nack.channel, nack.delivery_tag, now_ms());
  } else {
    broker_->nack(nack.consumer, nack.channel, nack.delivery_tag, now_ms());
  }
  pump();
}

void World::on_ack(const job::Ack& ack) {
  const std::string_view consumer = processes_.consumer(ack.consumer).participant;
  if (const auto settled = broker_->ack(ack.consumer, ack.channel, ack.delivery_tag, now_ms())) {
    record(delivery_event(EventKind::ack, now_ms(), consumer, participant::broker, *settled));
  } else {
    TraceEvent event = instance_event(EventKind::ack_lost, now_ms(), consumer,
                                      "ack for tag " + std::to_string(ack.delivery_tag) +
                                          " arrived on a closed channel; " +
                                          std::string(broker_->late_ack_words()));
    event.target = participant::broker;
    record(std::move(event));
  }
  pump();
}

void World::pump() {
  std::vector<Delivery>& dispatched = wire_.dispatched();
  dispatched.clear();
  broker_->pump(dispatched, now_ms());
  for (Delivery& delivery : dispatched) {
    int64_t delay_ms = latency_ms();
    const Process& instance = processes_.at(processes_.consumer(delivery.consumer).instance);
    if (const auto held =
            take_fault(FaultKind::delay, instance.service, instance.number, *delivery.message)) {
      delay_ms += held->ms;
    }
    const size_t consumer = delivery.consumer;
    const int64_t delivery_id = wire_.send(std::move(delivery));
    schedule(now_ms() + delay_ms, Job::unowned(job::Deliver{consumer, delivery_id}));
  }
  schedule_broker_timer();
}

// The broker's timer is a job like any other, so that a redelivery by timer happens in its
// place among the events (JetStream's AckWait; RabbitMQ has none). A timer whose cause went
// meanwhile (the message was acked) finds nothing to do.
void World::schedule_broker_timer() {
  if (clockless()) {
    sync_ack_wait_choices();
    return;
  }
  const std::optional<int64_t> due = broker_->next_due_ms();
  if (!due) return;
  const int64_t at_ms = std::max(*due, now_ms());
  if (!broker_timers_.insert(at_ms).second) return;
  // The broker finds what is due: the timer names no queue.
  schedule(at_ms, Job::unowned(job::BrokerTimer{}));
}

// Without a clock no timer comes due by itself: "the oldest lease of this queue runs out now"
// is a choice among the pending events, for every handler and network speed at once
// (docs/model.md, "Exploration"). The jobs are kept exactly in step with what can run out, so
// that none is ever taken to do nothing: a lease can start, end or be queued for redelivery
// only in a pump (a fetch, or the pump after an ack or a nack), and pump ends here.
void World::sync_ack_wait_choices() {
  for (size_t queue = 0; queue < broker_->queue_count(); ++queue) {
    const bool wanted = explorer_.ack_wait_may_expire() && broker_->ack_wait_may_expire(queue);
    const bool scheduled = ack_wait_choices_.count(queue) > 0;
    if (wanted == scheduled) continue;
    if (wanted) {
      ack_wait_choices_.insert(queue);
      schedule(now_ms(), Job::unowned(job::BrokerTimer{queue}));
      continue;
    }
    ack_wait_choices_.erase(queue);
    const bool erased = scheduler_.erase_first([&](const Job& pending) {
      const auto* timer = std::get_if<job::BrokerTimer>(&pending.payload);
      return timer != nullptr && timer->consumer == queue;
    });
    INBOXSIM_ASSERT(erased);
  }
}

// A lease nobody will ever settle (its holder crashed, or lost its connection) is redelivered
// when its ack wait runs out, and with nothing else pending that is what happens next; the
// budget bounds only the expiries that come early, among other events. Without this, an order
// whose budget is spent would leave such a message pending for ever: a termination violation
// that no real broker shows.
bool World::expire_when_quiescent() {
  if (!clockless() || !scheduler_.empty()) return false;
  for (size_t queue = 0; queue < broker_->queue_count(); ++queue) {
    if (!broker_->ack_wait_may_expire(queue)) continue;
    INBOXSIM_ASSERT(ack_wait_choices_.empty());
    ack_wait_choices_.insert(queue);
    schedule(now_ms(), Job::unowned(job::BrokerTimer{queue}));
    return true;
  }
  return false;
}

void World::on_broker_timer(const job::BrokerTimer& timer) {
  if (clockless()) {
    ack_wait_choices_.erase(timer.consumer);
    // An expiry within the budget counts; past it, only one that came when nothing else was
    // pending (expire_when_quiescent) is taken.
    if (explorer_.ack_wait_may_expire()) explorer_.ack_wait_expired();
    broker_->expire_ack_wait(timer.consumer, now_ms());
    pump();
    return;
  }
  broker_timers_.erase(now_ms());
  pump();
}

}  // namespace inboxsim
