// The JetStream model. Each rule names the nats-server 2.9.10 function it follows; docs/model.md
// ("JetStream") quotes them.
#include "broker/jetstream/jetstream.h"

#include <algorithm>
#include <array>
#include <utility>

#include "kernel/assert.h"
#include "kernel/enum_names.h"

namespace inboxsim {

namespace {

// server/jetstream.go isValidName, for stream and durable names alike.
bool valid_name(std::string_view name) {
  return !name.empty() && name.find_first_of(" \t\r\n\f.*>") == std::string_view::npos;
}

bool valid_subject(std::string_view subject) {
  if (subject.empty()) return false;
  const std::vector<std::string_view> tokens = nats_subject_tokens(subject);
  for (size_t index = 0; index < tokens.size(); ++index) {
    if (tokens[index].empty()) return false;
    if (tokens[index] == ">" && index + 1 != tokens.size()) return false;
  }
  return true;
}

}  // namespace

std::vector<std::string_view> nats_subject_tokens(std::string_view subject) {
  std::vector<std::string_view> tokens;
  size_t start = 0;
  while (true) {
    const size_t dot = subject.find('.', start);
    tokens.push_back(subject.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) return tokens;
    start = dot + 1;
  }
}

bool nats_subject_matches(std::string_view pattern, std::string_view subject) {
  const std::vector<std::string_view> wanted = nats_subject_tokens(pattern);
  const std::vector<std::string_view> given = nats_subject_tokens(subject);
  for (size_t index = 0; index < wanted.size(); ++index) {
    if (wanted[index] == ">") return given.size() > index;
    if (index >= given.size()) return false;
    if (wanted[index] != "*" && wanted[index] != given[index]) return false;
  }
  return wanted.size() == given.size();
}

bool nats_subjects_overlap(std::string_view left, std::string_view right) {
  const std::vector<std::string_view> a = nats_subject_tokens(left);
  const std::vector<std::string_view> b = nats_subject_tokens(right);
  for (size_t index = 0; index < a.size() && index < b.size(); ++index) {
    if (a[index] == ">" || b[index] == ">") return true;
    if (a[index] != "*" && b[index] != "*" && a[index] != b[index]) return false;
  }
  return a.size() == b.size();
}

namespace {
constexpr std::array<std::string_view, 3> kAdvisoryKindNames = {"max_deliveries", "nak",
                                                                "terminated"};
static_assert(names_every(kAdvisoryKindNames, JetStreamAdvisoryKind::terminated));
}  // namespace

std::string_view name_of(JetStreamAdvisoryKind kind) { return name_of(kAdvisoryKindNames, kind); }

// server/stream.go checkStreamCfg and addStreamWithAssignment: the checks a client can trip over.
std::optional<size_t> JetStream::add_stream(JetStreamStreamConfig config, std::string& error) {
  if (!valid_name(config.name)) {
    error = "a stream name without '.', '*', '>' or spaces";
    return std::nullopt;
  }
  if (find_stream(config.name)) {
    error = "stream " + config.name + " exists already";
    return std::nullopt;
  }
  if (config.subjects.empty()) {
    error = "at least one subject";
    return std::nullopt;
  }
  for (const std::string& subject : config.subjects) {
    if (!valid_subject(subject)) {
      error = "\"" + subject + "\" is no subject";
      return std::nullopt;
    }
    for (const Stream& other : streams_) {
      for (const std::string& taken : other.config.subjects) {
        if (nats_subjects_overlap(subject, taken)) {
          error = "subjects overlap with an existing stream (" + subject + " and " +
                  other.config.name + "'s " + taken + ")";
          return std::nullopt;
        }
      }
    }
  }
  if (config.duplicates_ms < kJetStreamDuplicatesMinMs) {
    error = "duplicates window needs to be >= 100ms";
    return std::nullopt;
  }
  streams_.push_back(Stream{std::move(config), {}, {}, {}});
  return streams_.size() - 1;
}

std::optional<size_t> JetStream::add_consumer(size_t stream, JetStreamConsumerConfig config,
                                              std::string& error) {
  INBOXSIM_ASSERT(stream < streams_.size());
  if (!valid_name(config.durable)) {
    error = "a durable name without '.', '*', '>' or spaces";
    return std::nullopt;
  }
  if (find_consumer(stream, config.durable)) {
    error = "consumer " + config.durable + " exists already";
    return std::nullopt;
  }
  if (config.ack_wait_ms <= 0 || config.max_ack_pending <= 0) {
    error = "a positive ack wait and max ack pending";
    return std::nullopt;
  }
  // server/consumer.go setConsumerConfigDefaults: 0 means unlimited, as -1 does.
  if (config.max_deliver == 0) config.max_deliver = kJetStreamMaxDeliverUnlimited;
  if (config.max_deliver < kJetStreamMaxDeliverUnlimited) {
    error = "max deliver of -1 (unlimited) or more";
    return std::nullopt;
  }
  if (!config.filter_subject.empty() && !valid_subject(config.filter_subject)) {
    error = "\"" + config.filter_subject + "\" is no subject";
    return std::nullopt;
  }
  Consumer added;
  added.config = std::move(config);
  added.stream = stream;
  consumers_.push_back(std::move(added));
  return consumers_.size() - 1;
}

std::optional<size_t> JetStream::find_stream(std::string_view name) const {
  for (size_t index = 0; index < streams_.size(); ++index) {
    if (streams_[index].config.name == name) return index;
  }
  return std::nullopt;
}

std::optional<size_t> JetStream::find_consumer(size_t stream, std::string_view durable) const {
  for (size_t index = 0; index < consumers_.size(); ++index) {
    if (consumers_[index].stream == stream && consumers_[index].config.durable == durable) {
      return index;
    }
  }
  return std::nullopt;
}

const JetStreamStreamConfig& JetStream::stream_config(size_t stream) const {
  INBOXSIM_ASSERT(stream < streams_.size());
  return streams_[stream].config;
}

const JetStreamConsumerConfig& JetStream::consumer_config(size_t consumer) const {
  INBOXSIM_ASSERT(consumer < consumers_.size());
  return consumers_[consumer].config;
}

size_t JetStream::consumer_stream(size_t consumer) const {
  INBOXSIM_ASSERT(consumer < consumers_.size());
  return consumers_[consumer].stream;
}

// server/stream.go processJetStreamMsg: a Nats-Msg-Id found in the stream's map (checkMsgId)
// answers the first message's sequence with "duplicate": true and stores nothing; a new one is
// stored with the time of this publication (storeMsgIdLocked).
std::optional<JetStreamPubAck> JetStream::publish(std::string_view subject,
                                                  const MessagePtr& message,
                                                  std::string_view msg_id, int64_t now_ms) {
  advance(now_ms);
  for (size_t index = 0; index < streams_.size(); ++index) {
    Stream& stream = streams_[index];
    const bool bound = std::any_of(
        stream.config.subjects.begin(), stream.config.subjects.end(),
        [&](const std::string& pattern) { return nats_subject_matches(pattern, subject); });
    if (!bound) continue;
    if (!msg_id.empty()) {
      const auto seen = stream.ids.find(std::string(msg_id));
      if (seen != stream.ids.end()) return JetStreamPubAck{index, seen->second.sequence, true};
    }
    INBOXSIM_ASSERT(stream.messages.size() < kJetStreamStoredMax);
    const uint64_t sequence = stream.messages.size() + 1;
    stream.messages.push_back(Stored{sequence, std::string(subject), message});
    if (!msg_id.empty()) {
      SeenId seen{std::string(msg_id), sequence, now_ms};
      stream.ids.emplace(seen.id, seen);
      stream.ids_in_order.push_back(std::move(seen));
    }
    return JetStreamPubAck{index, sequence, false};
  }
  return std::nullopt;
}

// server/consumer.go loopAndGatherMsgs and getNextMsg: while the pull request wants more,
// redeliveries first, then new messages unless MaxAckPending is reached.
std::vector<JetStreamDelivery> JetStream::fetch(size_t consumer, int64_t batch, int64_t now_ms) {
  INBOXSIM_ASSERT(consumer < consumers_.size());
  INBOXSIM_ASSERT(batch >= 1);
  INBOXSIM_ASSERT(batch <= kJetStreamBatchMax);
  advance(now_ms);
  std::vector<JetStreamDelivery> out;
  while (static_cast<int64_t>(out.size()) < batch) {
    std::optional<JetStreamDelivery> next = next_redelivery(consumer, now_ms);
    if (!next) next = next_new(consumer, now_ms);
    if (!next) break;
    out.push_back(std::move(*next));
  }
  return out;
}

// getNextMsg: a redelivery's count is incDeliveryCount's; one past MaxDeliver sends the
// advisory (only the first time) and removes the message from pending; it is never delivered
// again and stays in the stream. deliverMsg and trackPending: a new consumer sequence, the
// AckWait clock restarts, the pending entry keeps its first consumer sequence.
std::optional<JetStreamDelivery> JetStream::next_redelivery(size_t consumer_index, int64_t now_ms) {
  Consumer& consumer = consumers_[consumer_index];
  while (!consumer.redeliver.empty()) {
    const uint64_t sequence = consumer.redeliver.front();
    consumer.redeliver.pop_front();
    const int64_t count = ++consumer.redelivery_count[sequence] + 1;
    if (consumer.config.max_deliver > 0 && count > consumer.config.max_deliver) {
      if (count == consumer.config.max_deliver + 1) {
        advise(JetStreamAdvisoryKind::max_deliveries, consumer_index, sequence, count - 1, now_ms);
      }
      consumer.pending.erase(sequence);
      continue;
    }
    const auto pending = consumer.pending.find(sequence);
    INBOXSIM_ASSERT(pending != consumer.pending.end());
    pending->second.timestamp_ms = now_ms;
    pending->second.wait_start = ++consumer.wait_starts;
    JetStreamDelivery delivery;
    delivery.message = streams_[consumer.stream].messages.at(sequence - 1).message;
    delivery.consumer = consumer_index;
    delivery.stream_sequence = sequence;
    delivery.consumer_sequence = ++consumer.delivered;
    delivery.delivery_count = count;
    delivery.pending = undelivered(consumer);
    return delivery;
  }
  return std::nullopt;
}

std::optional<JetStreamDelivery> JetStream::next_new(size_t consumer_index, int64_t now_ms) {
  Consumer& consumer = consumers_[consumer_index];
  if (static_cast<int64_t>(consumer.pending.size()) >= consumer.config.max_ack_pending) {
    return std::nullopt;  // errMaxAckPending: the request waits
  }
  const Stream& stream = streams_[consumer.stream];
  while (consumer.next_stream_sequence <= stream.messages.size()) {
    const Stored& stored = stream.messages[consumer.next_stream_sequence - 1];
    ++consumer.next_stream_sequence;
    if (!consumer.config.filter_subject.empty() &&
        !nats_subject_matches(consumer.config.filter_subject, stored.subject)) {
      continue;
    }
    JetStreamDelivery delivery;
    delivery.message = stored.message;
    delivery.consumer = consumer_index;
    delivery.stream_sequence = stored.sequence;
    delivery.consumer_sequence = ++consumer.delivered;
    delivery.delivery_count = 1;
    delivery.pending = undelivered(consumer);
    consumer.pending[stored.sequence] =
        Pending{delivery.consumer_sequence, now_ms, ++consumer.wait_starts};
    return delivery;
  }
  return std::nullopt;
}

uint64_t JetStream::undelivered(const Consumer& consumer) const {
  const Stream& stream = streams_[consumer.stream];
  uint64_t count = 0;
  for (uint64_t sequence = consumer.next_stream_sequence; sequence <= stream.messages.size();
       ++sequence) {
    const Stored& stored = stream.messages[sequence - 1];
    if (consumer.config.filter_subject.empty() ||
        nats_subject_matches(consumer.config.filter_subject, stored.subject)) {
      ++count;
    }
  }
  return count;
}

// processAckMsg (AckExplicit): the pending entry is found by stream sequence alone, whichever
// delivery the ack came from; the redelivery count and any queued redelivery go "regardless".
bool JetStream::settle(Consumer& consumer, uint64_t sequence) {
  const bool was_pending = consumer.pending.erase(sequence) > 0;
  consumer.redelivery_count.erase(sequence);
  drop_from_redelivery(consumer, sequence);
  return was_pending;
}

bool JetStream::ack(const JetStreamDelivery& delivery, int64_t now_ms) {
  INBOXSIM_ASSERT(delivery.consumer < consumers_.size());
  advance(now_ms);
  return settle(consumers_[delivery.consumer], delivery.stream_sequence);
}

// processNak: ignored unless the message is still pending; then an advisory, and either a
// delay (the pending timestamp set to now - AckWait + delay, off the redelivery queue) or the
// redelivery queue at once.
bool JetStream::nak(const JetStreamDelivery& delivery, int64_t delay_ms, int64_t now_ms) {
  INBOXSIM_ASSERT(delivery.consumer < consumers_.size());
  advance(now_ms);
  Consumer& consumer = consumers_[delivery.consumer];
  if (delivery.consumer_sequence > consumer.delivered) return false;
  const auto pending = consumer.pending.find(delivery.stream_sequence);
  if (pending == consumer.pending.end()) return false;
  advise(JetStreamAdvisoryKind::nak, delivery.consumer, delivery.stream_sequence,
         delivery.delivery_count, now_ms);
  if (delay_ms > 0) {
    drop_from_redelivery(consumer, delivery.stream_sequence);
    pending->second.timestamp_ms = now_ms - consumer.config.ack_wait_ms + delay_ms;
    pending->second.wait_start = ++consumer.wait_starts;
    return true;
  }
  if (!queued_for_redelivery(consumer, delivery.stream_sequence)) {
    consumer.redeliver.push_back(delivery.stream_sequence);
  }
  return true;
}

// processTerm: processAckMsg, then the advisory, sent whether or not the message was pending.
bool JetStream::term(const JetStreamDelivery& delivery, int64_t now_ms) {
  INBOXSIM_ASSERT(delivery.consumer < consumers_.size());
  advance(now_ms);
  const bool was_pending = settle(consumers_[delivery.consumer], delivery.stream_sequence);
  advise(JetStreamAdvisoryKind::terminated, delivery.consumer, delivery.stream_sequence,
         delivery.delivery_count, now_ms);
  return was_pending;
}

// progressUpdate: the pending timestamp becomes now, so AckWait starts over (a message already
// queued for redelivery stays queued).
bool JetStream::in_progress(const JetStreamDelivery& delivery, int64_t now_ms) {
  INBOXSIM_ASSERT(delivery.consumer < consumers_.size());
  advance(now_ms);
  Consumer& consumer = consumers_[delivery.consumer];
  const auto pending = consumer.pending.find(delivery.stream_sequence);
  if (pending == consumer.pending.end()) return false;
  pending->second.timestamp_ms = now_ms;
  pending->second.wait_start = ++consumer.wait_starts;
  return true;
}

bool JetStream::queued_for_redelivery(const Consumer& consumer, uint64_t sequence) const {
  return std::find(consumer.redeliver.begin(), consumer.redeliver.end(), sequence) !=
         consumer.redeliver.end();
}

void JetStream::drop_from_redelivery(Consumer& consumer, uint64_t sequence) {
  const auto found = std::find(consumer.redeliver.begin(), consumer.redeliver.end(), sequence);
  if (found != consumer.redeliver.end()) consumer.redeliver.erase(found);
}

void JetStream::advance(int64_t now_ms) {
  INBOXSIM_ASSERT(now_ms >= now_ms_);
  // The expiries in the order their timers would fire, each at its own instant.
  for (std::optional<int64_t> due = next_expiry_ms(now_ms); due; due = next_expiry_ms(now_ms)) {
    expire_at(*due);
  }
  forget_ids(now_ms);
  now_ms_ = now_ms;
}

std::optional<int64_t> JetStream::next_expiry_ms(int64_t until_ms) const {
  std::optional<int64_t> first;
  for (const Consumer& consumer : consumers_) {
    for (const auto& [sequence, pending] : consumer.pending) {
      if (queued_for_redelivery(consumer, sequence)) continue;
      const int64_t due = pending.timestamp_ms + consumer.config.ack_wait_ms;
      if (due <= until_ms && (!first || due < *first)) first = due;
    }
  }
  return first;
}

// checkPending: every pending message whose AckWait has run out (elapsed >= AckWait) and is not
// queued yet joins the redelivery queue, in stream order; its timestamp moves to the check.
void JetStream::expire_at(int64_t at_ms) {
  for (Consumer& consumer : consumers_) {
    for (auto& [sequence, pending] : consumer.pending) {  // std::map: stream order
      if (queued_for_redelivery(consumer, sequence)) continue;
      if (pending.timestamp_ms + consumer.config.ack_wait_ms > at_ms) continue;
      consumer.redeliver.push_back(sequence);
      pending.timestamp_ms = at_ms;
    }
  }
}

// purgeMsgIds: an id is forgotten once now - stored >= the window. The server does it on a
// timer (at least 50 ms apart), so it may remember an id a little longer; never less.
void JetStream::forget_ids(int64_t now_ms) {
  for (Stream& stream : streams_) {
    while (!stream.ids_in_order.empty() &&
           now_ms - stream.ids_in_order.front().stored_ms >= stream.config.duplicates_ms) {
      stream.ids.erase(stream.ids_in_order.front().id);
      stream.ids_in_order.pop_front();
    }
  }
}

std::optional<int64_t> JetStream::next_due_ms() const {
  std::optional<int64_t> first = next_expiry_ms(INT64_MAX);
  for (const Stream& stream : streams_) {
    if (stream.ids_in_order.empty()) continue;
    const int64_t due = stream.ids_in_order.front().stored_ms + stream.config.duplicates_ms;
    if (!first || due < *first) first = due;
  }
  return first;
}

JetStreamConsumerInfo JetStream::info(size_t consumer_index) const {
  INBOXSIM_ASSERT(consumer_index < consumers_.size());
  const Consumer& consumer = consumers_[consumer_index];
  JetStreamConsumerInfo out;
  out.num_pending = undelivered(consumer);
  out.num_ack_pending = static_cast<int64_t>(consumer.pending.size());
  out.delivered_consumer_sequence = consumer.delivered;
  out.delivered_stream_sequence = consumer.next_stream_sequence - 1;
  return out;
}

const MessagePtr& JetStream::message_at(size_t stream, uint64_t sequence) const {
  INBOXSIM_ASSERT(stream < streams_.size());
  INBOXSIM_ASSERT(sequence >= 1 && sequence <= streams_[stream].messages.size());
  return streams_[stream].messages[sequence - 1].message;
}

std::vector<JetStream::PendingEntry> JetStream::pending_entries(size_t consumer_index) const {
  INBOXSIM_ASSERT(consumer_index < consumers_.size());
  const Consumer& consumer = consumers_[consumer_index];
  std::vector<PendingEntry> out;
  for (const auto& [sequence, pending] : consumer.pending) {
    const auto count = consumer.redelivery_count.find(sequence);
    const int64_t redeliveries = count == consumer.redelivery_count.end() ? 0 : count->second;
    out.push_back(
        PendingEntry{sequence, redeliveries + 1, queued_for_redelivery(consumer, sequence)});
  }
  return out;
}

std::vector<uint64_t> JetStream::undelivered_sequences(size_t consumer_index) const {
  INBOXSIM_ASSERT(consumer_index < consumers_.size());
  const Consumer& consumer = consumers_[consumer_index];
  const Stream& stream = streams_[consumer.stream];
  std::vector<uint64_t> out;
  for (uint64_t sequence = consumer.next_stream_sequence; sequence <= stream.messages.size();
       ++sequence) {
    const Stored& stored = stream.messages[sequence - 1];
    if (consumer.config.filter_subject.empty() ||
        nats_subject_matches(consumer.config.filter_subject, stored.subject)) {
      out.push_back(sequence);
    }
  }
  return out;
}

std::vector<JetStreamAdvisory> JetStream::take_advisories() {
  return std::exchange(advisories_, {});
}

void JetStream::advise(JetStreamAdvisoryKind kind, size_t consumer, uint64_t sequence,
                       int64_t deliveries, int64_t now_ms) {
  advisories_.push_back(JetStreamAdvisory{kind, consumer, sequence, deliveries, now_ms});
}

std::vector<uint64_t> JetStream::expirable_in_order(const Consumer& consumer) const {
  std::vector<std::pair<std::pair<int64_t, uint64_t>, uint64_t>> waits;
  for (const auto& [sequence, pending] : consumer.pending) {
    if (queued_for_redelivery(consumer, sequence)) continue;
    waits.push_back({{pending.timestamp_ms, pending.wait_start}, sequence});
  }
  std::sort(waits.begin(), waits.end());
  std::vector<uint64_t> out;
  out.reserve(waits.size());
  for (const auto& wait : waits) out.push_back(wait.second);
  return out;
}

bool JetStream::ack_wait_may_expire(size_t consumer_index) const {
  INBOXSIM_ASSERT(consumer_index < consumers_.size());
  const Consumer& consumer = consumers_[consumer_index];
  return std::any_of(consumer.pending.begin(), consumer.pending.end(), [&](const auto& entry) {
    return !queued_for_redelivery(consumer, entry.first);
  });
}

// checkPending for one message, as expire_at does it: onto the redelivery queue, its timestamp
// moved to the check.
uint64_t JetStream::expire_oldest(size_t consumer_index, int64_t now_ms) {
  INBOXSIM_ASSERT(ack_wait_may_expire(consumer_index));
  advance(now_ms);
  Consumer& consumer = consumers_[consumer_index];
  const std::vector<uint64_t> waits = expirable_in_order(consumer);
  INBOXSIM_ASSERT(!waits.empty());  // advance queues expiries; it never settles anything
  const uint64_t sequence = waits.front();
  consumer.redeliver.push_back(sequence);
  consumer.pending.at(sequence).timestamp_ms = now_ms;
  return sequence;
}

// The AckWaits' order goes in as an order (which pending message expires first, second, ...),
// not as the counters that make it, so that two histories with the same future meet.
void JetStream::fingerprint(Hasher& hasher) const {
  hasher.add_signed(now_ms_);
  for (const Stream& stream : streams_) {
    hasher.add(static_cast<uint64_t>(stream.messages.size()));
    for (const Stored& stored : stream.messages) {
      hasher.add(stored.subject).add(stored.message->message_id);
      hasher.add(static_cast<uint64_t>(stored.message->type)).add(stored.message->transfer);
    }
    hasher.add(static_cast<uint64_t>(stream.ids_in_order.size()));
    for (const SeenId& seen : stream.ids_in_order) {
      hasher.add(seen.id).add(seen.sequence).add_signed(seen.stored_ms);
    }
  }
  for (const Consumer& consumer : consumers_) {
    hasher.add(consumer.next_stream_sequence).add(consumer.delivered);
    hasher.add(static_cast<uint64_t>(consumer.pending.size()));
    for (const auto& [sequence, pending] : consumer.pending) {
      const auto count = consumer.redelivery_count.find(sequence);
      hasher.add(sequence).add(pending.consumer_sequence);
      hasher.add_signed(count == consumer.redelivery_count.end() ? 0 : count->second);
    }
    const std::vector<uint64_t> waits = expirable_in_order(consumer);
    hasher.add(static_cast<uint64_t>(waits.size()));
    for (const uint64_t sequence : waits) {
      hasher.add(sequence).add_signed(consumer.pending.at(sequence).timestamp_ms);
    }
    hasher.add(static_cast<uint64_t>(consumer.redeliver.size()));
    for (const uint64_t sequence : consumer.redeliver) hasher.add(sequence);
  }
}

}  // namespace inboxsim
