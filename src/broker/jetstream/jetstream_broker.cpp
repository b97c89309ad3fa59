// broker.kind = jetstream: the topology on JetStream streams and durable pull consumers
// (broker/jetstream/jetstream_broker.h says how each part maps).
#include "broker/jetstream/jetstream_broker.h"

#include <algorithm>
#include <string>
#include <utility>

#include "broker/rabbitmq/broker.h"
#include "domain/messages.h"
#include "domain/participants.h"
#include "domain/topology.h"
#include "kernel/assert.h"

namespace inboxsim {

namespace {

// An AMQP topic pattern as a NATS subject: '#' (zero or more words) becomes '>' (one or more
// tokens), which is the same for every routing key the bank publishes (each has three words).
std::string nats_subject(std::string_view pattern) {
  std::string subject(pattern);
  for (char& c : subject) {
    if (c == '#') c = '>';
  }
  return subject;
}

// The one filter subject (nats-server 2.9 takes one) that covers every subject: token by token
// the common ones, '*' where they differ; '>' where their lengths differ.
std::string covering_filter(const std::vector<std::string>& subjects) {
  std::vector<std::string_view> filter = nats_subject_tokens(subjects.front());
  for (const std::string& subject : subjects) {
    const std::vector<std::string_view> tokens = nats_subject_tokens(subject);
    if (tokens.size() != filter.size()) {
      filter.resize(1);
      filter.push_back(">");
      break;
    }
    for (size_t index = 0; index < tokens.size(); ++index) {
      if (tokens[index] != filter[index]) filter[index] = "*";
    }
  }
  std::string out;
  for (const std::string_view token : filter) out += (out.empty() ? "" : ".") + std::string(token);
  return out;
}

// A durable name may hold no '.' (server/jetstream.go isValidName).
std::string durable_name(std::string_view queue) {
  std::string name(queue);
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
}

}  // namespace

JetStreamBroker::JetStreamBroker(std::function<void(TraceEvent)> record,
                                 JetStreamWorldConfig config)
    : record_(std::move(record)), config_(config) {
  for (const StreamSpec& spec : kStreams) {
    std::string error;
    const auto added = js_.add_stream(
        JetStreamStreamConfig{
            std::string(spec.name), {std::string(spec.subject)}, config_.dedupe_window_ms},
        error);
    INBOXSIM_ASSERT(added.has_value());
  }
}

size_t JetStreamBroker::declare_queue(std::string_view name, std::vector<std::string> patterns) {
  INBOXSIM_ASSERT(!patterns.empty());
  std::vector<std::string> subjects;
  for (const std::string& pattern : patterns) subjects.push_back(nats_subject(pattern));
  std::optional<size_t> stream;
  for (size_t index = 0; index < kStreams.size() && !stream; ++index) {
    if (nats_subjects_overlap(kStreams[index].subject, subjects.front())) stream = index;
  }
  INBOXSIM_ASSERT(stream.has_value());
  JetStreamConsumerConfig consumer;
  consumer.durable = durable_name(name);
  // The whole stream needs no filter; else the one subject that covers the bindings.
  const std::string filter = covering_filter(subjects);
  if (filter != kStreams[*stream].subject) consumer.filter_subject = filter;
  consumer.ack_wait_ms = config_.ack_wait_ms;
  consumer.max_deliver = config_.max_deliver;
  consumer.max_ack_pending = config_.prefetch;
  std::string error;
  const auto durable = js_.add_consumer(*stream, std::move(consumer), error);
  INBOXSIM_ASSERT(durable.has_value());
  Queue queue;
  queue.name = std::string(name);
  queue.durable = *durable;
  queue.patterns = std::move(patterns);
  queues_.push_back(std::move(queue));
  return queues_.size() - 1;
}

size_t JetStreamBroker::declare_error_queue(size_t source) {
  INBOXSIM_ASSERT(source < queues_.size() && !queues_[source].error);
  Queue queue;
  queue.name = error_queue_name(queues_[source].name);
  queue.error = true;
  queue.source = source;
  queues_.push_back(std::move(queue));
  return queues_.size() - 1;
}

size_t JetStreamBroker::add_consumer(std::string_view name, size_t queue) {
  INBOXSIM_ASSERT(queue < queues_.size() && !queues_[queue].error);
  clients_.push_back(Client{std::string(name), queue, true, 1, {}});
  queues_[queue].clients.push_back(clients_.size() - 1);
  return clients_.size() - 1;
}

std::optional<size_t> JetStreamBroker::find_queue(std::string_view name) const {
  for (size_t index = 0; index < queues_.size(); ++index) {
    if (queues_[index].name == name) return index;
  }
  return std::nullopt;
}

size_t JetStreamBroker::publish(const MessagePtr& message, int64_t now_ms) {
  return publish(message, routing_key(message->type), false, now_ms);
}

size_t JetStreamBroker::publish(const MessagePtr& message, std::string_view key,
                                bool default_exchange, int64_t now_ms) {
  if (default_exchange) return 0;  // no such exchange: unroutable (the parser refuses it)
  const auto ack = js_.publish(key, message, message->message_id, now_ms);
  if (!ack) return 0;  // no stream has the subject: no responders
  if (ack->duplicate) {
    const JetStreamStreamConfig& stream = js_.stream_config(ack->stream);
    record(EventKind::dropped, message, stream.name,
           "a publish with Nats-Msg-Id " + message->message_id + " inside the stream's " +
               std::to_string(stream.duplicates_ms) +
               " ms Duplicates window, counted from the first (sequence " +
               std::to_string(ack->sequence) +
               "): not stored; the publish ack says duplicate, so the publisher takes it as sent",
           now_ms);
    return 0;
  }
  size_t reached = 0;
  for (const Queue& queue : queues_) {
    if (!queue.error && js_.consumer_stream(queue.durable) == ack->stream && bound(queue, key)) {
      ++reached;
    }
  }
  return reached;
}

bool JetStreamBroker::bound(const Queue& queue, std::string_view subject) const {
  return std::any_of(queue.patterns.begin(), queue.patterns.end(),
                     [&](const std::string& pattern) { return topic_matches(pattern, subject); });
}

// The clients of each queue take turns pulling one message each, while they hold fewer than
// the prefetch, until a round gives nobody anything; the next pump starts with the client after
// the last one served.
void JetStreamBroker::pump(std::vector<Delivery>& out, int64_t now_ms) {
  // The server's timers run whether or not a client pulls: with every client of a consumer
  // gone (its instances crashed) or full, an AckWait still runs out and an id still leaves its
  // window. Without this, the World's timer found the same instant due again and again.
  js_.advance(now_ms);
  for (Queue& queue : queues_) {
    if (queue.error || queue.clients.empty()) continue;
    bool served = true;
    while (served) {
      served = false;
      for (size_t step = 0; step < queue.clients.size(); ++step) {
        const size_t turn = (queue.turn + step) % queue.clients.size();
        std::optional<Delivery> delivery = pull(queue.clients[turn], now_ms);
        if (!delivery) continue;
        out.push_back(std::move(*delivery));
        queue.turn = (turn + 1) % queue.clients.size();
        served = true;
        break;
      }
    }
  }
  record_advisories();
}

std::optional<Delivery> JetStreamBroker::pull(size_t client_index, int64_t now_ms) {
  Client& client = clients_[client_index];
  const Queue& queue = queues_[client.queue];
  while (client.connected && static_cast<int64_t>(client.held.size()) < config_.prefetch) {
    std::vector<JetStreamDelivery> got = js_.fetch(queue.durable, 1, now_ms);
    if (got.empty()) return std::nullopt;
    JetStreamDelivery& delivery = got.front();
    // The filter covers more than the bindings: the client acks the rest unhandled.
    if (!bound(queue, routing_key(delivery.message->type))) {
      js_.ack(delivery, now_ms);
      continue;
    }
    if (delivery.delivery_count > 1) {
      const bool nakked = nakked_.erase({delivery.consumer, delivery.stream_sequence}) > 0;
      record(
          EventKind::requeue, delivery.message, queue.name,
          (nakked ? "nakked" +
                        (config_.nak_delay_ms > 0
                             ? " with a delay of " + std::to_string(config_.nak_delay_ms) + " ms"
                             : std::string())
                  : "no ack within the ack wait (" + std::to_string(config_.ack_wait_ms) + " ms)") +
              ": delivered again, as delivery " + std::to_string(delivery.delivery_count) +
              ", to " + client.name +
              (nakked ? std::string() : ", while whoever had it may still be handling it"),
          now_ms);
    }
    Delivery out = as_delivery(delivery, client_index, client.connection);
    client.held.emplace(static_cast<int64_t>(delivery.consumer_sequence),
                        Held{std::move(delivery), now_ms});
    return out;
  }
  return std::nullopt;
}

Delivery JetStreamBroker::as_delivery(const JetStreamDelivery& delivery, size_t client,
                                      uint64_t connection) {
  Delivery out;
  out.message = delivery.message;
  out.consumer = client;
  out.channel = connection;
  out.delivery_tag = static_cast<int64_t>(delivery.consumer_sequence);
  out.redelivered = delivery.delivery_count > 1;
  out.delivery_count = delivery.delivery_count - 1;  // NumDelivered counts this one too
  out.attempts = delivery.delivery_count - 1;
  return out;
}

// MaxDeliver: the server stops delivering the message and says so in an advisory; it stays in
// the stream, and no queue holds it for an operator.
void JetStreamBroker::record_advisories() {
  for (const JetStreamAdvisory& advisory : js_.take_advisories()) {
    if (advisory.kind != JetStreamAdvisoryKind::max_deliveries) continue;
    const size_t stream = js_.consumer_stream(advisory.consumer);
    std::string queue = js_.consumer_config(advisory.consumer).durable;
    for (const Queue& candidate : queues_) {
      if (!candidate.error && candidate.durable == advisory.consumer) queue = candidate.name;
    }
    record(EventKind::dropped, js_.message_at(stream, advisory.stream_sequence), queue,
           "delivered " + std::to_string(advisory.deliveries) + " times, MaxDeliver " +
               std::to_string(config_.max_deliver) +
               ": the consumer delivers it no more (a max-deliveries advisory; it stays in the "
               "stream, and JetStream has no dead-letter queue)",
           advisory.at_ms);
  }
}

std::optional<JetStreamBroker::Held> JetStreamBroker::take_held(size_t consumer, uint64_t channel,
                                                                int64_t delivery_tag) {
  if (!channel_still_open(consumer, channel)) return std::nullopt;
  Client& client = clients_[consumer];
  const auto found = client.held.find(delivery_tag);
  INBOXSIM_ASSERT(found != client.held.end());
  Held held = std::move(found->second);
  client.held.erase(found);
  return held;
}

// +ACK names the message by its stream sequence: an ack after the AckWait ran out (a late ack)
// still settles the message, for every client holding a copy (docs/model.md, script 02).
std::optional<Delivery> JetStreamBroker::ack(size_t consumer, uint64_t channel,
                                             int64_t delivery_tag, int64_t now_ms) {
  const std::optional<Held> held = take_held(consumer, channel, delivery_tag);
  if (!held) return std::nullopt;
  js_.ack(held->delivery, now_ms);
  return as_delivery(held->delivery, consumer, channel);
}

// -NAK, with the client's delay (consumer.nak_delay_ms): without one the message is due for
// redelivery at the next pull, with one not before the delay has passed.
std::optional<Delivery> JetStreamBroker::nack(size_t consumer, uint64_t channel,
                                              int64_t delivery_tag, int64_t now_ms) {
  const std::optional<Held> held = take_held(consumer, channel, delivery_tag);
  if (!held) return std::nullopt;
  if (js_.nak(held->delivery, config_.nak_delay_ms, now_ms)) {
    nakked_.emplace(held->delivery.consumer, held->delivery.stream_sequence);
  }
  js_.take_advisories();  // the nak advisory: the trace has the nack already
  return as_delivery(held->delivery, consumer, channel);
}

// +TERM: settled, never delivered again (with a terminated advisory).
std::optional<Delivery> JetStreamBroker::reject(size_t consumer, uint64_t channel,
                                                int64_t delivery_tag, int64_t now_ms) {
  const std::optional<Held> held = take_held(consumer, channel, delivery_tag);
  if (!held) return std::nullopt;
  js_.term(held->delivery, now_ms);
  js_.take_advisories();
  return as_delivery(held->delivery, consumer, channel);
}

// +WPI names the message by its stream sequence, like +ACK; the client keeps the delivery.
bool JetStreamBroker::in_progress(size_t consumer, uint64_t channel, int64_t delivery_tag,
                                  int64_t now_ms) {
  if (!channel_still_open(consumer, channel)) return false;
  const auto found = clients_[consumer].held.find(delivery_tag);
  if (found == clients_[consumer].held.end()) return false;
  return js_.in_progress(found->second.delivery, now_ms);
}

// A pull consumer's pending deliveries are the server's: a client that goes leaves them
// pending until their AckWait runs out.
void JetStreamBroker::close_connection(size_t consumer, int64_t, std::string_view) {
  clients_[consumer].connected = false;
  clients_[consumer].held.clear();
}

void JetStreamBroker::open_connection(size_t consumer, int64_t) {
  Client& client = clients_[consumer];
  INBOXSIM_ASSERT(client.held.empty());
  client.connected = true;
  ++client.connection;
}

const std::string& JetStreamBroker::move_to_error_queue(size_t queue, const MessagePtr& message) {
  INBOXSIM_ASSERT(queue < queues_.size() && queues_[queue].error);
  queues_[queue].parked.emplace_back(next_parked_position_++, message);
  ++parked_totals_[queues_[queue].name];
  return queues_[queue].name;
}

// An operator's replay publishes each message again on its subject, with no Nats-Msg-Id (a
// replay is meant to be delivered, whatever the dedupe window remembers).
std::vector<MessagePtr> JetStreamBroker::redrive(size_t queue, int64_t now_ms) {
  INBOXSIM_ASSERT(queue < queues_.size() && queues_[queue].error);
  std::vector<MessagePtr> moved;
  for (auto& [position, message] : queues_[queue].parked) {
    js_.publish(routing_key(message->type), message, "", now_ms);
    moved.push_back(message);
  }
  queues_[queue].parked.clear();
  return moved;
}

std::vector<std::string> JetStreamBroker::parking_queues() const {
  std::vector<std::string> names;
  for (const Queue& queue : queues_) {
    if (queue.error) names.push_back(queue.name);
  }
  return names;
}

std::vector<ParkedMessage> JetStreamBroker::parked() const {
  std::vector<ParkedMessage> out;
  for (const Queue& queue : queues_) {
    for (const auto& [position, message] : queue.parked) out.push_back({message, queue.name, {}});
  }
  return out;
}

// A work queue's rows: what the consumer has not delivered yet ("ready"), then what is
// pending on it, "unacked" while a client holds it and "returned" once it waits for its
// redelivery, each under its stream sequence; an error queue's parked messages.
std::vector<QueueEntry> JetStreamBroker::entries_of(size_t queue_index) const {
  const Queue& queue = queues_[queue_index];
  std::vector<QueueEntry> out;
  // A message waiting to be delivered (or, in an error queue, to be redriven).
  const auto ready = [&](uint64_t position, const MessagePtr& message) {
    QueueEntry entry;
    entry.queue = queue.name;
    entry.position = position;
    entry.state = "ready";
    entry.message = message;
    out.push_back(entry);
  };
  if (queue.error) {
    for (const auto& [position, message] : queue.parked) ready(position, message);
    return out;
  }
  const size_t stream = js_.consumer_stream(queue.durable);
  for (const uint64_t sequence : js_.undelivered_sequences(queue.durable)) {
    const MessagePtr& message = js_.message_at(stream, sequence);
    if (bound(queue, routing_key(message->type))) ready(sequence, message);
  }
  for (const JetStream::PendingEntry& pending : js_.pending_entries(queue.durable)) {
    QueueEntry entry;
    entry.queue = queue.name;
    entry.position = pending.stream_sequence;
    entry.state = pending.redelivery_due ? "returned" : "unacked";
    entry.message = js_.message_at(stream, pending.stream_sequence);
    entry.redelivered = pending.deliveries > 1;
    entry.delivery_count = pending.deliveries - 1;  // as Delivery::delivery_count
    // The last client to get it, if it still holds it.
    for (const size_t client : queue.clients) {
      for (const auto& [tag, held] : clients_[client].held) {
        if (held.delivery.stream_sequence != pending.stream_sequence) continue;
        entry.consumer = clients_[client].name;
        entry.delivery_tag = tag;
      }
    }
    out.push_back(entry);
  }
  return out;
}

std::vector<QueueEntry> JetStreamBroker::contents() const {
  std::vector<QueueEntry> out;
  for (size_t queue = 0; queue < queues_.size(); ++queue) {
    for (QueueEntry& entry : entries_of(queue)) out.push_back(std::move(entry));
  }
  return out;
}

// Every row shown now or at the last call: a view then compares each (the model keeps no
// journal of its own; a jetstream story is short).
std::vector<std::pair<size_t, uint64_t>> JetStreamBroker::take_changed_entries() {
  std::set<std::pair<size_t, uint64_t>> now;
  for (size_t queue = 0; queue < queues_.size(); ++queue) {
    for (const QueueEntry& entry : entries_of(queue)) now.emplace(queue, entry.position);
  }
  std::set<std::pair<size_t, uint64_t>> changed = shown_;
  changed.insert(now.begin(), now.end());
  shown_ = std::move(now);
  if (!journal_kept_) return {};
  return {changed.begin(), changed.end()};
}

std::optional<QueueEntry> JetStreamBroker::entry(size_t queue, uint64_t position) const {
  for (const QueueEntry& entry : entries_of(queue)) {
    if (entry.position == position) return entry;
  }
  return std::nullopt;
}

size_t JetStreamBroker::ready_messages() const {
  size_t count = 0;
  for (const Queue& queue : queues_) {
    if (!queue.error) count += js_.info(queue.durable).num_pending;
  }
  return count;
}

size_t JetStreamBroker::unacked_messages() const {
  size_t count = 0;
  for (const Queue& queue : queues_) {
    if (!queue.error) count += static_cast<size_t>(js_.info(queue.durable).num_ack_pending);
  }
  return count;
}

void JetStreamBroker::fingerprint(Hasher& hasher) const {
  js_.fingerprint(hasher);
  for (const Queue& queue : queues_) {
    hasher.add(queue.name).add(static_cast<uint64_t>(queue.turn));
    hasher.add(static_cast<uint64_t>(queue.parked.size()));
    for (const auto& [position, message] : queue.parked) hasher.add(message->message_id);
  }
  for (const Client& client : clients_) {
    hasher.add(client.connected).add(client.connection);
    hasher.add(static_cast<uint64_t>(client.held.size()));
    for (const auto& [tag, held] : client.held) {
      hasher.add_signed(tag).add(held.delivery.stream_sequence);
      hasher.add_signed(held.delivery.delivery_count).add_signed(held.delivered_ms);
    }
  }
  hasher.add(static_cast<uint64_t>(nakked_.size()));
  for (const auto& [durable, sequence] : nakked_) {
    hasher.add(static_cast<uint64_t>(durable)).add(sequence);
  }
}

void JetStreamBroker::record(EventKind kind, const MessagePtr& message, std::string_view queue,
                             std::string detail, int64_t now_ms) {
  TraceEvent event;
  event.time_ms = now_ms;
  event.kind = kind;
  event.service = participant::broker;
  event.message_id = message->message_id;
  event.type = message_type_name(message->type);
  event.transfer = message->transfer;
  event.detail = std::string(queue) + ": " + detail;
  record_(std::move(event));
}

bool JetStreamBroker::ack_wait_may_expire(size_t queue) const {
  INBOXSIM_ASSERT(queue < queues_.size());
  return !queues_[queue].error && js_.ack_wait_may_expire(queues_[queue].durable);
}

// The redelivery it queues is handed out (with its trace event) by the next pump, as after a
// run's AckWait expiry.
void JetStreamBroker::expire_ack_wait(size_t queue, int64_t now_ms) {
  INBOXSIM_ASSERT(ack_wait_may_expire(queue));
  js_.expire_oldest(queues_[queue].durable, now_ms);
}

}  // namespace inboxsim
