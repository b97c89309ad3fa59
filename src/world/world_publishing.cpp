// Publishing: a service's publish with its publisher confirm, the transfer relay's confirms and
// nacks by outbox row, the duplicate fault's copies, and the relay's and the account outbox
// sweep's polling loops.
#include <string>
#include <utility>
#include <vector>

#include "domain/participants.h"
#include "kernel/assert.h"
#include "world/world.h"
#include "world/world_events.h"

namespace inboxsim {

void World::on_confirm(const Job& job, const job::Confirm& confirm) {
  const MessagePtr* found = confirms_.find(job.instance, confirm.outbox_seq);
  if (found == nullptr) return;
  const Process& instance = processes_.at(job.instance);
  // A confirm on a channel that has closed since is never seen.
  if (instance.publish_channel != confirm.channel) return;
  const MessagePtr message = *found;
  confirms_.settle(job.instance, confirm.outbox_seq);
  if (instance.incarnation != job.incarnation) return;
  TraceEvent event = event_about(EventKind::confirm, now_ms(), participant::broker, *message);
  event.target = instance.names.relay;
  event.detail = "outbox row " + std::to_string(confirm.outbox_seq);
  record(std::move(event));
  // Marking the row sent is left out of the footprint where only this relay polls the outbox:
  // its poll reads the row as awaited before the confirm and not at all after it (docs/model.md,
  // "The relay's confirms"). Another instance's relay would publish the row again if it polled
  // first, so with two the mark stays in, unless relays claim their rows: then the other relay
  // skips the row as this one's claim before the confirm and as sent after it. With a clock, a
  // cleanup could delete the row.
  const bool mark_commutes = clockless() && (config_.transfer_instances == 1 ||
                                             config_.relay_claim == RelayClaim::skip_locked);
  const SqlFootprint::Quiet quiet(mark_commutes ? sql_footprint_.get() : nullptr);
  guarded(job.instance, [&] { instance.transfer->relay_confirmed(confirm.outbox_seq); });
}

void World::on_relay_poll(const Job& job) {
  if (!processes_.loop_turn(job.instance, Loop::relay, job.incarnation)) return;
  const Process& instance = processes_.at(job.instance);
  auto read = static_cast<size_t>(TransferService::kRelayBatchRows);  // a poll that died: as full
  guarded(job.instance, [&] { read = instance.transfer->relay_poll(); });
  if (footprinting()) {
    // A poll that read fewer rows than a batch less one reads no full batch whether a confirm
    // comes before it or after (the confirm takes one awaited row out of what it reads): the
    // two commute, and the poll's use of the relay's memory is a change, as the confirm's is.
    const bool room = read + 1 < static_cast<size_t>(TransferService::kRelayBatchRows);
    touch_loop(job.instance, Loop::relay_awaiting, room ? Access::change : Access::write);
  }
}

void World::on_account_sweep(const Job& job) {
  if (!processes_.loop_turn(job.instance, Loop::sweep, job.incarnation)) return;
  const Process& instance = processes_.at(job.instance);
  guarded(job.instance, [&] {
    if (!instance.account->sweep_outbox()) {
      // A publish not confirmed: the delivery loop tries again once reconnected.
      processes_.loop_again(job.instance, Loop::sweep);
      schedule(now_ms() + kReconnectMs, job);
    }
  });
}

void World::publish(ServiceId publisher_service, std::string_view publisher,
                    const MessagePtr& message, bool copy) {
  TraceEvent event = event_about(EventKind::publish, now_ms(), publisher, *message);
  event.target = participant::broker;
  event.detail = std::string(routing_key(message->type));
  record(std::move(event));
  const bool by_operator = copy || publisher == participant::operator_;
  if (footprinting()) {
    touch(resource_of(ResourceClass::publication, 0, message->message_id));
  }
  const bool first = publications_.record(message, by_operator);
  if (!first && !by_operator) coverage_.reach(Probe::republish_same_id);
  broker_->publish(message, now_ms());
  if (first && !by_operator) {
    while (const std::optional<FaultSpec> fault =
               take_fault(FaultKind::duplicate, publisher_service, 0, *message)) {
      fire_duplicate(message, fault->copied_by);
    }
  }
  pump();
}

// The copy's publisher in the trace is whoever the story says made it; the narration and the
// diagrams name it from there.
void World::fire_duplicate(const MessagePtr& message, CopySource source) {
  std::string_view publisher = participant::operator_;
  if (source == CopySource::broker) publisher = participant::broker;
  if (source == CopySource::network) publisher = participant::network;
  publish(ServiceId::account, publisher, std::make_shared<Message>(*message), true);
}

// A publish the broker refuses (basic.nack, confirms.md): it is not routed, so it is no
// message of the run's; it still counts as a send.
void World::publish_refused(std::string_view publisher, const Message& message) {
  TraceEvent event = event_about(EventKind::publish_nacked, now_ms(), participant::broker, message);
  event.target = publisher;
  event.detail = "basic.nack: the broker did not take the message";
  record(std::move(event));
  publications_.record_refused(message);
}

PublishResult World::publish_and_confirm(size_t index, const MessagePtr& message) {
  const Process& instance = processes_.at(index);
  if (take_fault(FaultKind::publish_nack, instance.service, instance.number, *message)) {
    publish_refused(instance.names.service, *message);
    return PublishResult::nacked;
  }
  publish(instance.service, instance.names.service, message);
  if (take_fault(FaultKind::lose_confirm, instance.service, instance.number, *message)) {
    TraceEvent event =
        event_about(EventKind::confirm_lost, now_ms(), participant::broker, *message);
    event.target = instance.names.service;
    event.detail =
        "the publishing channel closed before the confirm arrived; the message did reach the "
        "broker";
    record(std::move(event));
    return PublishResult::lost;
  }
  return PublishResult::confirmed;
}

void World::relay_publish(size_t index, const MessagePtr& message, int64_t outbox_seq) {
  // The row joins the relay's memory of what awaits a confirm: a change of the memory, and the
  // row's own entry, which its confirm takes out.
  if (footprinting()) {
    touch_loop(index, Loop::relay_awaiting, Access::change);
    touch_awaited(index, outbox_seq);
  }
  const Process& instance = processes_.at(index);
  confirms_.relayed(outbox_seq);
  // The channel and the incarnation the publish goes out on, whatever happens meanwhile.
  const uint64_t channel = instance.publish_channel;
  const uint64_t incarnation = instance.incarnation;
  if (take_fault(FaultKind::publish_nack, ServiceId::transfer, instance.number, *message)) {
    publish_refused(instance.names.relay, *message);
    schedule(now_ms() + latency_ms(),
             Job::of_instance(index, job::PublishNack{channel, outbox_seq}, incarnation));
    return;
  }
  publish(ServiceId::transfer, instance.names.relay, message);
  if (take_fault(FaultKind::lose_confirm, ServiceId::transfer, instance.number, *message)) {
    relay_channel_closed(index, *message);
    return;
  }
  confirms_.await(index, outbox_seq, message);
  schedule(now_ms() + latency_ms(),
           Job::of_instance(index, job::Confirm{channel, outbox_seq}, incarnation));
}

// RabbitMQ loses a publisher confirm only with its channel (confirms.md): every publish the
// relay awaited a confirm for is in doubt, and it publishes them again, same message ids, once
// it has reconnected.
void World::relay_channel_closed(size_t index, const Message& message) {
  if (footprinting()) {
    touch_publish_channel(index);
    touch_loop(index, Loop::relay);
    touch_loop(index, Loop::relay_awaiting);
  }
  const Process& instance = processes_.at(index);
  TraceEvent event = event_about(EventKind::confirm_lost, now_ms(), participant::broker, message);
  event.target = instance.names.relay;
  event.detail =
      "the relay's channel closed before the confirm arrived; the message did reach the broker, "
      "and the relay will publish every unconfirmed row again after reconnecting";
  record(std::move(event));
  processes_.close_publish_channel(index);
  confirms_.forget(index);
  instance.transfer->relay_channel_closed();
  if (!instance.loop_pending(Loop::relay)) {
    schedule_loop(index, job::RelayPoll{}, Loop::relay, kReconnectMs);
  }
}

void World::on_publish_nack(const Job& job, const job::PublishNack& nack) {
  const Process& instance = processes_.at(job.instance);
  if (instance.incarnation != job.incarnation || instance.publish_channel != nack.channel) return;
  guarded(job.instance, [&] { instance.transfer->relay_publish_nacked(nack.outbox_seq); });
}

// The callers check first: their delay is a random draw, which must not be made for nothing.
void World::schedule_loop(size_t index, job::Payload payload, Loop loop, int64_t delay_ms) {
  const uint64_t incarnation = processes_.loop_scheduled(index, loop);
  schedule(now_ms() + delay_ms, Job::of_instance(index, payload, incarnation));
}

void World::schedule_relay_poll(size_t index) {
  if (footprinting()) {
    touch_instance(index, Access::read);
    touch_loop(index, Loop::relay);
  }
  const Process& instance = processes_.at(index);
  if (instance.loop_pending(Loop::relay) || !instance.up) return;
  schedule_loop(index, job::RelayPoll{}, Loop::relay,
                clockless() ? 0 : rng_.between(kRelayPollMsMin, kRelayPollMsMax));
}

void World::schedule_account_outbox_sweep(size_t index) {
  if (footprinting()) {
    touch_instance(index, Access::read);
    touch_loop(index, Loop::sweep);
  }
  const Process& instance = processes_.at(index);
  if (instance.loop_pending(Loop::sweep) || !instance.up) return;
  schedule_loop(index, job::AccountSweep{}, Loop::sweep, latency_ms());
}

}  // namespace inboxsim
