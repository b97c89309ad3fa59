// The playground's side of a world (docs/contract.md §9): the hand actions a schedule takes
// between two events, what can happen next in words, and what the page shows of the instances
// and the indexes.
#include <SQLiteCpp/SQLiteCpp.h>

#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "domain/participants.h"
#include "kernel/assert.h"
#include "world/world.h"
#include "world/world_events.h"

namespace inboxsim {

// ---- the playground ----------------------------------------------------------------------------

bool World::take_due_actions() {
  const size_t position = explorer_.position();
  bool took = false;
  while (explorer_.action_due(position) && halted_reason_.empty() && !explorer_.stopped()) {
    const Step& step = explorer_.take_action(position, trace_.events().size());
    took = true;
    story_point();
    switch (step.kind) {
      case StepKind::publish: publish_by_hand(step); break;
      case StepKind::drop_index: drop_index(step.index); break;
      case StepKind::restore_index: restore_index(step.index); break;
      case StepKind::redrive: redrive(step.queue); break;
      case StepKind::advance: advance(step.ms); break;
      case StepKind::transfer:
      case StepKind::fault:
      case StepKind::run: INBOXSIM_ASSERT(false);  // the parser takes no such hand action
    }
  }
  return took;
}

void World::restore_index(IndexName index) {
  const bool on_account = index != IndexName::transfer_processed_messages;
  const Process& instance = processes_.first(on_account ? ServiceId::account : ServiceId::transfer);
  std::string detail(index_name(index));
  const auto found = dropped_.find(index);
  if (found == dropped_.end()) {
    detail += ": not dropped, nothing to restore";
  } else {
    try {
      for (const std::string& sql : found->second) {
        if (on_account) {
          instance.account->create_index(sql);
        } else {
          instance.transfer->create_index(sql);
        }
      }
      dropped_.erase(found);
      detail += ": restored";
    } catch (const SQLite::Exception& error) {
      // Postgres refuses CREATE UNIQUE INDEX over duplicate keys the same way.
      detail += ": cannot be restored, the rows written meanwhile break it (" +
                std::string(error.what()) + "); it stays dropped";
    }
  }
  record(instance_event(EventKind::index_restored, now_ms(), instance.names.service,
                        std::move(detail)));
}

void World::publish_by_hand(const Step& step) {
  auto message = std::make_shared<Message>(step.message);
  TraceEvent event = event_about(EventKind::publish, now_ms(), participant::operator_, *message);
  event.target = participant::broker;
  event.by_hand = true;
  event.detail = "by hand to " +
                 (step.exchange.empty() ? std::string("the default exchange") : step.exchange) +
                 ", routing key " + step.routing_key;
  record(std::move(event));
  publications_.record(message, true);
  const size_t routed = broker_->publish(message, step.routing_key, step.exchange.empty(), now_ms());
  if (routed == 0) {
    mark_step("(the routing key " + step.routing_key +
              " reaches no queue: the broker drops the message, as RabbitMQ drops an unroutable "
              "one published without `mandatory`)");
  }
  pump();
}

std::vector<World::InstanceState> World::instance_states() const {
  std::vector<InstanceState> out;
  for (const Process& instance : processes_) {
    out.push_back(InstanceState{instance.names.service, instance.up, instance.paused(now_ms())});
  }
  return out;
}

std::vector<IndexName> World::dropped_indexes() const {
  std::vector<IndexName> out;
  for (const auto& [index, sql] : dropped_) out.push_back(index);
  return out;
}

std::vector<PendingEvent> World::pending_events() const {
  std::vector<PendingEvent> out;
  const std::vector<Job> jobs = scheduler_.pending();
  const size_t count = choosable();
  for (size_t option = 0; option < count && option < jobs.size(); ++option) {
    out.push_back(describe_job(jobs[option]));
  }
  return out;
}

namespace {

// The words of a pending event that is about no message: what its participant does.
std::string label_of_loop(std::string_view kind, const std::string& participant) {
  if (kind == "relay_poll") return participant + " polls the outbox";
  if (kind == "outbox_sweep") return participant + " runs its outbox delivery loop";
  if (kind == "restart") return participant + " restarts";
  if (kind == "reconnect") return participant + " reopens its connection";
  if (kind == "heartbeat_timeout") {
    return "the broker gives up on " + participant + "'s silent connection";
  }
  if (kind == "durability_poll") {
    return participant + "'s durability agent polls wolverine_incoming_envelopes";
  }
  INBOXSIM_ASSERT(kind == "pause_end");
  return participant + " goes on after its pause";
}

// The message a consumer holds unacked under `delivery_tag`, if any.
MessagePtr unacked_message(const std::vector<QueueEntry>& contents, std::string_view consumer,
                           int64_t delivery_tag) {
  MessagePtr message;
  for (const QueueEntry& entry : contents) {
    if (entry.state == "unacked" && entry.consumer == consumer &&
        entry.delivery_tag == delivery_tag) {
      message = entry.message;
    }
  }
  return message;
}

}  // namespace

PendingEvent World::describe_job(const Job& job) const {
  const Process& instance = processes_.at(job.instance);
  PendingEvent event;
  event.participant = instance.names.service;
  std::visit(
      job::Overloaded{
          [&](const job::Deliver& deliver) { describe_delivery(deliver, event); },
          [&](const job::Ack& ack) {
            describe_ack("ack", ack.consumer, ack.delivery_tag, false, event);
          },
          [&](const job::Nack& nack) {
            describe_ack("nack", nack.consumer, nack.delivery_tag, nack.term, event);
          },
          [&](const job::Confirm& confirm) {
            describe_confirm(job, true, confirm.outbox_seq, event);
          },
          [&](const job::PublishNack& nack) {
            describe_confirm(job, false, nack.outbox_seq, event);
          },
          [&](const job::Resume& resume) { describe_handler_step(true, resume.handler, event); },
          [&](const job::Retry& retry) { describe_handler_step(false, retry.handler, event); },
          [&](const job::RelayPoll&) {
            event.kind = "relay_poll";
            event.participant = instance.names.relay;
          },
          [&](const job::AccountSweep&) { event.kind = "outbox_sweep"; },
          [&](const job::Restart&) { event.kind = "restart"; },
          [&](const job::Reconnect&) { event.kind = "reconnect"; },
          [&](const job::HeartbeatTimeout&) { event.kind = "heartbeat_timeout"; },
          [&](const job::PauseEnd&) { event.kind = "pause_end"; },
          [&](const job::DurabilityPoll&) { event.kind = "durability_poll"; },
          [&](const job::BrokerTimer& timer) { describe_ack_wait_expiry(timer, event); },
      },
      job.payload);
  if (event.label.empty()) event.label = label_of_loop(event.kind, event.participant);
  if (void_forever(job)) event.label += " (void: its target is gone, it changes nothing)";
  return event;
}

// A delivery on its way to its consumer.
void World::describe_delivery(const job::Deliver& deliver, PendingEvent& event) const {
  event.kind = "deliver";
  const Delivery& delivery = wire_.at(deliver.delivery_id);
  event.message = delivery.message;
  event.participant = processes_.consumer(delivery.consumer).participant;
  event.label = std::string(delivery.redelivered ? "redelivery" : "delivery") + " of " +
                message_words(delivery.message.get()) + " reaches " + event.participant;
}

// A consumer's ack or nack (or term) on its way to the broker.
void World::describe_ack(std::string kind, size_t consumer, int64_t delivery_tag, bool term,
                         PendingEvent& event) const {
  event.kind = std::move(kind);
  event.participant = processes_.consumer(consumer).participant;
  event.message = unacked_message(broker_->contents(), event.participant, delivery_tag);
  event.label = "the " + (term ? std::string("term (+TERM)") : event.kind) + " of " +
                (event.message ? message_words(event.message.get())
                               : "delivery tag " + std::to_string(delivery_tag)) +
                " from " + event.participant + " reaches the broker";
}

// The broker's publisher confirm (or nack) of an outbox row on its way to the instance's relay,
// or to its service when it has none.
void World::describe_confirm(const Job& job, bool confirm, int64_t outbox_seq,
                             PendingEvent& event) const {
  const Process& instance = processes_.at(job.instance);
  event.kind = confirm ? "confirm" : "publish_nack";
  event.participant = instance.names.relay.empty() ? instance.names.service : instance.names.relay;
  if (const MessagePtr* found = confirms_.find(job.instance, outbox_seq)) event.message = *found;
  event.label = std::string(confirm ? "the publisher confirm" : "the broker's nack") + " of " +
                (event.message ? message_words(event.message.get())
                               : "outbox row " + std::to_string(outbox_seq)) +
                " reaches " + event.participant;
}

// A handler's next step, or its next attempt after a failure.
void World::describe_handler_step(bool resume, uint64_t handler, PendingEvent& event) const {
  event.kind = resume ? "step" : "retry";
  const ActiveHandler* found = handlers_.find(handler);
  if (found != nullptr) {
    event.message = found->delivery.message;
    event.participant = processes_.consumer(found->delivery.consumer).participant;
  }
  event.label =
      resume && found != nullptr
          ? event.participant + ", handling " + message_words(event.message.get()) + ": " +
                found->next_step
          : event.participant + " retries its handler of " + message_words(event.message.get());
}

// The broker's ack wait running out: without a clock, the oldest lease of one work queue.
void World::describe_ack_wait_expiry(const job::BrokerTimer& timer, PendingEvent& event) const {
  event.kind = "ack_wait_expiry";
  event.participant = std::string(participant::broker);
  event.label = clockless()
                    ? "the ack wait of the oldest unacked delivery from " +
                          broker_->queue_name(timer.consumer) +
                          " runs out now: it goes again to the next consumer to pull, "
                          "while whoever has it may still be handling it"
                    : std::string("the broker's ack wait runs out: what no one acked in "
                                  "time goes to the next consumer to pull");
}

}  // namespace inboxsim
