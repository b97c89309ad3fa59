#include "broker/rabbitmq/broker.h"

#include <algorithm>

#include "domain/participants.h"
#include "domain/topology.h"
#include "kernel/assert.h"

namespace inboxsim {

namespace {

// Splits off the first dot-separated word of `text`.
std::string_view first_word(std::string_view text) { return text.substr(0, text.find('.')); }

std::string_view rest_after_word(std::string_view text) {
  const size_t dot = text.find('.');
  return dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
}

bool words_match(std::string_view pattern, std::string_view key, bool key_has_words) {
  if (pattern.empty()) return !key_has_words;
  const std::string_view word = first_word(pattern);
  const std::string_view pattern_rest = rest_after_word(pattern);
  const bool pattern_has_rest = pattern.find('.') != std::string_view::npos;
  if (word == "#") {
    // '#' matches zero words, or one word and then '#' again.
    if (words_match(pattern_has_rest ? pattern_rest : std::string_view{}, key, key_has_words)) {
      return true;
    }
    if (!key_has_words) return false;
    const bool key_has_rest = key.find('.') != std::string_view::npos;
    return words_match(pattern, rest_after_word(key), key_has_rest);
  }
  if (!key_has_words) return false;
  const std::string_view key_word = first_word(key);
  if (word != "*" && word != key_word) return false;
  const bool key_has_rest = key.find('.') != std::string_view::npos;
  if (!pattern_has_rest) return !key_has_rest;
  return words_match(pattern_rest, rest_after_word(key), key_has_rest);
}

}  // namespace

bool topic_matches(std::string_view pattern, std::string_view routing_key) {
  return words_match(pattern, routing_key, !routing_key.empty());
}

Broker::Broker(std::function<void(TraceEvent)> record, int64_t prefetch, int64_t delivery_limit,
               bool quorum, bool dead_letter_exchange)
    : record_(std::move(record)),
      prefetch_(prefetch),
      delivery_limit_(delivery_limit),
      quorum_(quorum),
      dead_letter_exchange_(dead_letter_exchange) {
  INBOXSIM_ASSERT(prefetch > 0);
  INBOXSIM_ASSERT(delivery_limit > 0);
}

size_t Broker::declare_queue(std::string_view name, std::vector<std::string> patterns) {
  Queue queue;
  queue.name = std::string(name);
  queue.patterns = std::move(patterns);
  queues_.push_back(std::move(queue));
  const size_t index = queues_.size() - 1;
  Queue dead_letter;
  dead_letter.name = dead_letter_queue_name(name);
  dead_letter.role = QueueRole::dead_letter;
  dead_letter.source = index;
  queues_.push_back(std::move(dead_letter));
  queues_[index].dead_letter = queues_.size() - 1;
  return index;
}

size_t Broker::declare_error_queue(size_t source) {
  INBOXSIM_ASSERT(source < queues_.size());
  INBOXSIM_ASSERT(queues_[source].role == QueueRole::work);
  Queue error;
  error.name = error_queue_name(queues_[source].name);
  error.role = QueueRole::error;
  error.source = source;
  queues_.push_back(std::move(error));
  return queues_.size() - 1;
}

std::optional<size_t> Broker::find_queue(std::string_view name) const {
  for (size_t index = 0; index < queues_.size(); ++index) {
    if (queues_[index].name == name) return index;
  }
  return std::nullopt;
}

const std::string& Broker::queue_name(size_t queue) const {
  INBOXSIM_ASSERT(queue < queues_.size());
  return queues_[queue].name;
}

void Broker::park(size_t queue, MessagePtr message, std::string reason) {
  Queue& parking = queues_[queue];
  INBOXSIM_ASSERT(parking.role != QueueRole::work);
  touch(queue);
  parking.ready.push_back(
      Queued{std::move(message), next_position_++, 0, 0, false, std::move(reason)});
  note_changed(queue, parking.ready.back().position);
  ++parked_totals_[parking.name];
}

const std::string& Broker::move_to_error_queue(size_t queue, const MessagePtr& message) {
  INBOXSIM_ASSERT(queue < queues_.size());
  INBOXSIM_ASSERT(queues_[queue].role == QueueRole::error);
  park(queue, message, "");
  return queues_[queue].name;
}

std::vector<MessagePtr> Broker::redrive(size_t queue) {
  INBOXSIM_ASSERT(queue < queues_.size());
  Queue& parking = queues_[queue];
  INBOXSIM_ASSERT(parking.role != QueueRole::work);
  std::vector<MessagePtr> moved;
  std::deque<Queued> messages;
  messages.swap(parking.ready);
  touch(queue);
  touch(parking.source);
  Queue& source = queues_[parking.source];
  moved.reserve(messages.size());
  // Taken off the front as they move, so a long story's error queue is not held twice.
  while (!messages.empty()) {
    Queued& queued = messages.front();
    moved.push_back(queued.message);
    note_changed(queue, queued.position);
    source.ready.push_back(Queued{std::move(queued.message), next_position_++, 0, 0, false, ""});
    note_changed(parking.source, source.ready.back().position);
    messages.pop_front();
  }
  return moved;
}

std::vector<std::string> Broker::parking_queues() const {
  std::vector<std::string> names;
  for (const Queue& queue : queues_) {
    if (queue.role != QueueRole::work) names.push_back(queue.name);
  }
  return names;
}

std::vector<ParkedMessage> Broker::parked() const {
  std::vector<ParkedMessage> out;
  for (const Queue& queue : queues_) {
    if (queue.role == QueueRole::work) continue;
    for (const Queued& queued : queue.ready)
      out.push_back(ParkedMessage{queued.message, queue.name, queued.dead_letter_reason});
  }
  return out;
}

QueueEntry Broker::entry_of(const Queue& queue, const Queued& queued, std::string_view state) {
  QueueEntry entry;
  entry.queue = queue.name;
  entry.position = queued.position;
  entry.state = state;
  entry.message = queued.message;
  entry.redelivered = queued.redelivered;
  entry.delivery_count = queued.delivery_count;
  entry.reason = queued.dead_letter_reason;
  return entry;
}

std::vector<QueueEntry> Broker::contents() const {
  std::vector<QueueEntry> out;
  for (size_t index = 0; index < queues_.size(); ++index) {
    const Queue& queue = queues_[index];
    for (const Queued& queued : queue.returned) out.push_back(entry_of(queue, queued, "returned"));
    for (const Queued& queued : queue.ready) out.push_back(entry_of(queue, queued, "ready"));
    for (const Consumer& consumer : consumers_) {
      if (consumer.queue != index) continue;
      for (const auto& [tag, queued] : consumer.unacked) {
        out.push_back(entry_of(queue, queued, "unacked"));
        out.back().consumer = consumer.name;
        out.back().delivery_tag = tag;
      }
    }
  }
  return out;
}

std::vector<std::pair<size_t, uint64_t>> Broker::take_changed_entries() {
  std::vector<std::pair<size_t, uint64_t>> changed = std::exchange(journal_, {});
  std::sort(changed.begin(), changed.end());
  changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  return changed;
}

std::optional<QueueEntry> Broker::entry(size_t index, uint64_t position) const {
  INBOXSIM_ASSERT(index < queues_.size());
  const Queue& queue = queues_[index];
  for (const Queued& queued : queue.returned) {
    if (queued.position == position) return entry_of(queue, queued, "returned");
  }
  // `ready` is sorted by position: messages join at its end with a new, higher position, and
  // a classic queue puts a returned one back at its place.
  const auto ready = std::lower_bound(
      queue.ready.begin(), queue.ready.end(), position,
      [](const Queued& existing, uint64_t wanted) { return existing.position < wanted; });
  if (ready != queue.ready.end() && ready->position == position) {
    return entry_of(queue, *ready, "ready");
  }
  for (const Consumer& consumer : consumers_) {
    if (consumer.queue != index) continue;
    for (const auto& [tag, queued] : consumer.unacked) {
      if (queued.position != position) continue;
      QueueEntry entry = entry_of(queue, queued, "unacked");
      entry.consumer = consumer.name;
      entry.delivery_tag = tag;
      return entry;
    }
  }
  return std::nullopt;
}

size_t Broker::add_consumer(std::string_view name, size_t queue) {
  INBOXSIM_ASSERT(queue < queues_.size());
  Consumer consumer;
  consumer.name = std::string(name);
  consumer.queue = queue;
  consumers_.push_back(std::move(consumer));
  join_line(consumers_.size() - 1);
  return consumers_.size() - 1;
}

void Broker::join_line(size_t consumer_index) {
  Consumer& consumer = consumers_[consumer_index];
  if (consumer.in_line || !consumer.connected || !has_room(consumer)) return;
  consumer.in_line = true;
  queues_[consumer.queue].line.push_back(consumer_index);
}

size_t Broker::publish(const MessagePtr& message) {
  INBOXSIM_ASSERT(message != nullptr);
  return publish(message, routing_key(message->type), false);
}

size_t Broker::publish(const MessagePtr& message, std::string_view key, bool default_exchange) {
  INBOXSIM_ASSERT(message != nullptr);
  size_t routed = 0;
  for (Queue& queue : queues_) {
    const bool bound =
        default_exchange ? queue.name == key
                         : std::any_of(queue.patterns.begin(), queue.patterns.end(),
                                       [&](const std::string& p) { return topic_matches(p, key); });
    if (!bound) continue;
    touch(static_cast<size_t>(&queue - queues_.data()));
    queue.ready.push_back(Queued{message, next_position_++, 0, 0, false, ""});
    note_changed(static_cast<size_t>(&queue - queues_.data()), queue.ready.back().position);
    ++routed;
  }
  return routed;
}

void Broker::pump(std::vector<Delivery>& out, int64_t now_ms) {
  for (Queue& queue : queues_) {
    if (queue.role != QueueRole::work) continue;
    // Each delivery takes one waiting message, so the loop is bounded by the queue's length.
    while (!queue.returned.empty() || !queue.ready.empty()) {
      const std::optional<size_t> consumer = next_ready_consumer(queue);
      if (!consumer) break;
      touch(static_cast<size_t>(&queue - queues_.data()));
      deliver(*consumer, out, now_ms);
    }
  }
}

std::optional<ConsumerTimeout> Broker::next_consumer_timeout(int64_t timeout_ms,
                                                             int64_t tick_ms) const {
  INBOXSIM_ASSERT(timeout_ms > 0 && tick_ms > 0);
  std::optional<ConsumerTimeout> first;
  for (size_t index = 0; index < consumers_.size(); ++index) {
    const Consumer& consumer = consumers_[index];
    if (!consumer.connected || consumer.unacked.empty()) continue;
    // Tags grow with time on a channel: the lowest unacked tag is the oldest delivery.
    const auto& [tag, oldest] = *consumer.unacked.begin();
    // The first tick T = opened + k * tick (k >= 1) with delivered < T - timeout.
    const int64_t late = oldest.delivered_ms + timeout_ms + 1;  // the earliest T that qualifies
    const int64_t since_open = std::max<int64_t>(late - consumer.opened_ms, 1);
    const int64_t ticks = (since_open + tick_ms - 1) / tick_ms;
    const int64_t at = consumer.opened_ms + ticks * tick_ms;
    if (!first || at < first->at_ms) first = ConsumerTimeout{at, index, oldest.delivered_ms, tag};
  }
  return first;
}

bool Broker::dispatchable() const {
  for (const Queue& queue : queues_) {
    if (queue.role != QueueRole::work) continue;
    if (queue.ready.empty() && queue.returned.empty()) continue;
    for (const size_t index : queue.line) {
      const Consumer& consumer = consumers_[index];
      if (consumer.connected && has_room(consumer)) return true;
    }
  }
  return false;
}

// Each pass takes a consumer out of the line, so the loop is bounded by the line's length.
std::optional<size_t> Broker::next_ready_consumer(Queue& queue) {
  while (!queue.line.empty()) {
    const size_t index = queue.line.front();
    queue.line.pop_front();
    Consumer& consumer = consumers_[index];
    consumer.in_line = false;
    // A classic queue finds out only now that a consumer is full, and drops it from the
    // rotation until it has room again; a quorum queue's line never holds a full one.
    if (consumer.connected && has_room(consumer)) return index;
  }
  return std::nullopt;
}

void Broker::deliver(size_t consumer_index, std::vector<Delivery>& out, int64_t now_ms) {
  Consumer& consumer = consumers_[consumer_index];
  Queue& queue = queues_[consumer.queue];
  std::deque<Queued>& source = queue.returned.empty() ? queue.ready : queue.returned;
  Queued queued = std::move(source.front());
  source.pop_front();
  queued.delivered_ms = now_ms;
  const uint64_t position = queued.position;
  const int64_t tag = consumer.next_tag++;
  ++queue.deliveries;
  out.push_back(as_delivery(queued, consumer_index, consumer.channel, tag));
  consumer.unacked.emplace(tag, std::move(queued));
  note_changed(consumer.queue, position);
  // Back to the end of the line: a quorum queue's consumer only while it has room left, a
  // classic queue's until a delivery finds it full.
  if (!quorum_ || has_room(consumer)) {
    consumer.in_line = true;
    queue.line.push_back(consumer_index);
  }
}

bool Broker::channel_open(size_t consumer, uint64_t channel) const {
  INBOXSIM_ASSERT(consumer < consumers_.size());
  read_channel(consumer);
  return channel_still_open(consumer, channel);
}

Delivery Broker::as_delivery(const Queued& queued, size_t consumer, uint64_t channel,
                             int64_t delivery_tag) {
  return Delivery{queued.message,        consumer,       channel, delivery_tag, queued.redelivered,
                  queued.delivery_count, queued.attempts};
}

std::optional<Broker::Queued> Broker::take_unacked(size_t consumer, uint64_t channel,
                                                   int64_t delivery_tag, bool touches_queue) {
  if (!channel_open(consumer, channel)) return std::nullopt;
  Consumer& c = consumers_[consumer];
  if (touches_queue) touch(c.queue);
  auto found = c.unacked.find(delivery_tag);
  // A settlement for a tag this channel never had unacked would be a channel error in
  // RabbitMQ; our consumers settle each delivery exactly once, so it cannot happen.
  INBOXSIM_ASSERT(found != c.unacked.end());
  Queued queued = std::move(found->second);
  c.unacked.erase(found);
  note_changed(c.queue, queued.position);
  join_line(consumer);
  return queued;
}

std::optional<Delivery> Broker::ack(size_t consumer, uint64_t channel, int64_t delivery_tag) {
  // An ack gives its consumer room. That decides who gets a message only where it had none (a
  // quorum queue's line holds no full consumer; a classic queue drops one when a delivery
  // finds it full): otherwise it changes only the consumer's unacked list, as a delivery to it
  // does, and either order of the two leaves the same list and line. What else reads the list
  // closes the channel, which the ack reads (docs/model.md, "Reduction: sleep sets").
  const bool full = !has_room(consumers_[consumer]);
  const std::optional<Queued> queued = take_unacked(consumer, channel, delivery_tag, full);
  if (!queued) return std::nullopt;
  return as_delivery(*queued, consumer, channel, delivery_tag);
}

std::optional<Delivery> Broker::nack(size_t consumer, uint64_t channel, int64_t delivery_tag,
                                     int64_t now_ms) {
  std::optional<Queued> queued = take_unacked(consumer, channel, delivery_tag, true);
  if (!queued) return std::nullopt;
  const Delivery settled = as_delivery(*queued, consumer, channel, delivery_tag);
  requeue(consumers_[consumer], std::move(*queued), now_ms, "nack");
  return settled;
}

std::optional<Delivery> Broker::reject(size_t consumer, uint64_t channel, int64_t delivery_tag,
                                       int64_t now_ms) {
  std::optional<Queued> queued = take_unacked(consumer, channel, delivery_tag, true);
  if (!queued) return std::nullopt;
  const Delivery settled = as_delivery(*queued, consumer, channel, delivery_tag);
  dead_letter(queues_[consumers_[consumer].queue], *queued, "rejected", now_ms);
  return settled;
}

void Broker::close_connection(size_t consumer, int64_t now_ms, std::string_view reason) {
  INBOXSIM_ASSERT(consumer < consumers_.size());
  Consumer& c = consumers_[consumer];
  touch(c.queue);
  write_channel(consumer);
  if (!c.connected) return;
  c.connected = false;
  ++c.channel;
  c.next_tag = 1;
  // Its consumer is gone; a reconnected one registers anew, at the end of the line.
  std::erase(queues_[c.queue].line, consumer);
  c.in_line = false;
  std::map<int64_t, Queued> unacked;
  unacked.swap(c.unacked);
  // All of them are off the channel before the first requeue is recorded.
  for (const auto& [tag, queued] : unacked) note_changed(c.queue, queued.position);
  for (auto& [tag, queued] : unacked) {
    requeue(c, std::move(queued), now_ms, reason);
  }
}

void Broker::open_connection(size_t consumer, int64_t now_ms) {
  INBOXSIM_ASSERT(consumer < consumers_.size());
  Consumer& c = consumers_[consumer];
  INBOXSIM_ASSERT(c.unacked.empty());
  touch(c.queue);
  write_channel(consumer);
  c.connected = true;
  c.opened_ms = now_ms;
  join_line(consumer);
}

bool Broker::connected(size_t consumer) const {
  INBOXSIM_ASSERT(consumer < consumers_.size());
  read_channel(consumer);
  return consumers_[consumer].connected;
}

size_t Broker::ready_messages() const {
  size_t count = 0;
  for (const Queue& queue : queues_) {
    if (queue.role == QueueRole::work) count += queue.ready.size() + queue.returned.size();
  }
  return count;
}

size_t Broker::unacked_messages() const {
  size_t count = 0;
  for (const Consumer& consumer : consumers_) count += consumer.unacked.size();
  return count;
}

void Broker::requeue(Consumer& consumer, Queued queued, int64_t now_ms, std::string_view reason) {
  Queue& queue = queues_[consumer.queue];
  ++queued.attempts;
  queued.redelivered = true;
  // A quorum queue counts every return in x-delivery-count and dead-letters a message returned
  // more times than the limit (quorum-queues.md, "Poison Message Handling"); a classic queue
  // has neither the count nor the limit.
  if (quorum_ && ++queued.delivery_count > delivery_limit_) {
    dead_letter(queue, queued, "delivery_limit", now_ms);
    return;
  }
  record(EventKind::requeue, queued, queue.name, std::string(reason), now_ms);
  // A quorum queue serves returned messages first, in the order they came back (rabbit_fifo's
  // `returns`); a classic queue puts each back at its original position.
  // The views' note comes after the move: the requeue event above is recorded while the
  // message is off its consumer and not yet back (the recorder looks it up when it reads the
  // notes).
  const uint64_t position = queued.position;
  if (quorum_) {
    queue.returned.push_back(std::move(queued));
  } else {
    const auto at = std::lower_bound(
        queue.ready.begin(), queue.ready.end(), queued.position,
        [](const Queued& existing, uint64_t wanted) { return existing.position < wanted; });
    queue.ready.insert(at, std::move(queued));
  }
  note_changed(consumer.queue, position);
}

void Broker::dead_letter(Queue& queue, const Queued& queued, std::string reason, int64_t now_ms) {
  // With no dead-letter exchange a quorum queue discards it (rabbit_fifo:return_one ->
  // rabbit_fifo_dlx:discard with an undefined handler: only a counter moves).
  if (!dead_letter_exchange_) {
    record(EventKind::dropped, queued, queue.name,
           reason + ": the queue has no dead-letter exchange, so the broker deletes the message",
           now_ms);
    return;
  }
  const size_t target = queue.dead_letter;
  record(EventKind::dead_letter, queued, queue.name, reason + ", moved to " + queues_[target].name,
         now_ms);
  park(target, queued.message, std::move(reason));
}

void Broker::record(EventKind kind, const Queued& queued, std::string_view queue,
                    std::string detail, int64_t now_ms) {
  TraceEvent event;
  event.time_ms = now_ms;
  event.kind = kind;
  event.service = participant::broker;
  event.message_id = queued.message->message_id;
  event.type = message_type_name(queued.message->type);
  event.transfer = queued.message->transfer;
  event.delivery_count = queued.delivery_count;
  event.detail = std::string(queue) + ": " + detail;
  record_(std::move(event));
}

bool Broker::a_consumer_could_have_filled() const {
  return std::any_of(queues_.begin(), queues_.end(),
                     [&](const Queue& queue) { return queue.deliveries >= prefetch_; });
}

void Broker::fingerprint(Hasher& hasher) const {
  // A message's position only orders it among the messages of its own queue (a classic queue
  // requeues by it), so it goes in as its rank there: two orders that published to two queues
  // in turn, or the other way round, meet.
  std::vector<std::vector<uint64_t>> positions(queues_.size());
  for (size_t index = 0; index < queues_.size(); ++index) {
    for (const Queued& queued : queues_[index].ready) positions[index].push_back(queued.position);
    for (const Queued& queued : queues_[index].returned) {
      positions[index].push_back(queued.position);
    }
  }
  for (const Consumer& consumer : consumers_) {
    for (const auto& [tag, queued] : consumer.unacked) {
      positions[consumer.queue].push_back(queued.position);
    }
  }
  for (std::vector<uint64_t>& list : positions) std::sort(list.begin(), list.end());
  size_t queue_of = 0;
  const auto add_queued = [&](const Queued& queued) {
    fingerprint_message(hasher, *queued.message);
    const std::vector<uint64_t>& list = positions[queue_of];
    const auto rank = std::lower_bound(list.begin(), list.end(), queued.position) - list.begin();
    hasher.add(static_cast<uint64_t>(rank)).add_signed(queued.delivery_count);
    hasher.add_signed(queued.attempts);
    hasher.add(queued.redelivered).add(queued.dead_letter_reason);
  };
  // next_position_ is left out too (fingerprint_counters): a new message's position is above
  // every other, whatever its number.
  for (const Queue& queue : queues_) {
    queue_of = static_cast<size_t>(&queue - queues_.data());
    hasher.add(static_cast<uint64_t>(queue.ready.size()));
    for (const Queued& queued : queue.ready) add_queued(queued);
    hasher.add(static_cast<uint64_t>(queue.returned.size()));
    for (const Queued& queued : queue.returned) add_queued(queued);
    hasher.add(static_cast<uint64_t>(queue.line.size()));
    for (const size_t consumer : queue.line) hasher.add(static_cast<uint64_t>(consumer));
  }
  for (const Consumer& consumer : consumers_) {
    queue_of = consumer.queue;
    // The channel's number and the next tag are left out (fingerprint_counters):
    // World::fingerprint_channel says why.
    hasher.add(consumer.connected).add(consumer.in_line);
    hasher.add(static_cast<uint64_t>(consumer.unacked.size()));
    for (const auto& [tag, queued] : consumer.unacked) {
      hasher.add_signed(tag);
      add_queued(queued);
    }
  }
}

void Broker::fingerprint_counters(Hasher& hasher) const {
  hasher.add(next_position_);
  for (const Consumer& consumer : consumers_) {
    hasher.add(consumer.channel).add_signed(consumer.next_tag);
  }
}

}  // namespace inboxsim
