// The JetStream model (broker/jetstream/jetstream.h) behind the broker seam
// (broker/message_broker.h): what `broker.kind = jetstream` runs. docs/model.md ("JetStream in the
// world") maps each part to the server.
//
// - Streams: one per publishing service (domain/topology.h, kStreams), with the service's
//   subjects; a message's routing key is its subject and its message id its Nats-Msg-Id, so a
//   re-publication inside the stream's Duplicates window is not stored.
// - A work queue of the topology is a durable pull consumer on the stream its bindings fall in,
//   with explicit acks, AckWait, MaxDeliver, and MaxAckPending = broker.prefetch. A queue bound
//   to several subjects (the notifications queue) is a consumer filtered on the subject that
//   covers them all (nats-server 2.9 takes one filter subject); the client acks what else that
//   filter lets through at once, unhandled, as a subscription's callback would.
// - A consumer of the World (an instance's consumer) is a client of that durable consumer:
//   it pulls one message at a time while it holds fewer than the prefetch, the clients of a
//   queue taking turns. A delivery's receipt is (client connection, consumer sequence).
// - ack, nack and reject are the ack subject's +ACK, -NAK and +TERM. A closed connection ends
//   nothing on the server: the message stays pending until its AckWait runs out.
// - The server's timer is the World's: next_due_ms() says when the next AckWait runs out, and
//   pump() at that time hands the redelivery to whichever client pulls next.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "broker/jetstream/jetstream.h"
#include "broker/message_broker.h"
#include "kernel/trace.h"

namespace inboxsim {

struct JetStreamWorldConfig {
  int64_t prefetch = 16;  // MaxAckPending of each durable consumer, and each client's limit
  int64_t ack_wait_ms = kJetStreamAckWaitDefaultMs;
  int64_t max_deliver = kJetStreamMaxDeliverUnlimited;
  int64_t dedupe_window_ms = kJetStreamDuplicatesDefaultMs;
  int64_t nak_delay_ms = 0;  // the delay every nak asks for (consumer.nak_delay_ms)
};

class JetStreamBroker final : public MessageBroker {
 public:
  // `record` receives the broker's own events: an AckWait that ran out, a message past
  // MaxDeliver, a publish the dedupe window dropped.
  JetStreamBroker(std::function<void(TraceEvent)> record, JetStreamWorldConfig config);

  size_t declare_queue(std::string_view name, std::vector<std::string> patterns) override;
  size_t declare_error_queue(size_t source) override;
  size_t add_consumer(std::string_view name, size_t queue) override;
  std::optional<size_t> find_queue(std::string_view name) const override;
  const std::string& queue_name(size_t queue) const override { return queues_[queue].name; }
  size_t queue_count() const override { return queues_.size(); }
  size_t consumer_count() const override { return clients_.size(); }

  size_t publish(const MessagePtr& message, int64_t now_ms) override;
  // JetStream has no exchange: a publish by hand goes to the subject `key` (the parser refuses
  // the default exchange on this broker).
  size_t publish(const MessagePtr& message, std::string_view key, bool default_exchange,
                 int64_t now_ms) override;

  void pump(std::vector<Delivery>& out, int64_t now_ms) override;
  std::optional<int64_t> next_due_ms() const override { return js_.next_ack_wait_expiry_ms(); }

  std::optional<Delivery> ack(size_t consumer, uint64_t channel, int64_t delivery_tag,
                              int64_t now_ms) override;
  std::optional<Delivery> nack(size_t consumer, uint64_t channel, int64_t delivery_tag,
                               int64_t now_ms) override;
  std::optional<Delivery> reject(size_t consumer, uint64_t channel, int64_t delivery_tag,
                                 int64_t now_ms) override;
  // +WPI: the AckWait of the client's delivery starts again from now.
  bool in_progress(size_t consumer, uint64_t channel, int64_t delivery_tag,
                   int64_t now_ms) override;
  bool channel_open(size_t consumer, uint64_t channel) const override {
    return channel_still_open(consumer, channel);
  }
  bool channel_still_open(size_t consumer, uint64_t channel) const override {
    return clients_[consumer].connected && clients_[consumer].connection == channel;
  }
  std::string_view closed_connection_words() const override {
    return "the message stays pending on the consumer until its ack wait runs out";
  }
  std::string_view cancelled_handler_words() const override { return closed_connection_words(); }
  std::string_view late_ack_words() const override { return closed_connection_words(); }
  std::string_view process_death_words() const override {
    return "what it had not acked stays pending until its ack wait runs out";
  }
  bool leases_end_by_timer() const override { return true; }
  bool has_heartbeats() const override { return false; }
  bool redelivers_without_limit() const override { return config_.max_deliver <= 0; }
  std::string_view unlimited_queue_words() const override {
    return "JetStream consumer, with no MaxDeliver";
  }

  void close_connection(size_t consumer, int64_t now_ms, std::string_view reason) override;
  void open_connection(size_t consumer, int64_t now_ms) override;
  bool connected(size_t consumer) const override { return clients_[consumer].connected; }
  std::optional<ConsumerTimeout> next_consumer_timeout(int64_t, int64_t) const override {
    return std::nullopt;  // JetStream has no consumer timeout: AckWait is its rule
  }

  const std::string& move_to_error_queue(size_t queue, const MessagePtr& message) override;
  std::vector<MessagePtr> redrive(size_t queue, int64_t now_ms) override;
  std::vector<std::string> parking_queues() const override;
  std::vector<ParkedMessage> parked() const override;
  const std::map<std::string, int64_t>& parked_totals() const override { return parked_totals_; }

  std::vector<QueueEntry> contents() const override;
  void keep_changed_entries() override { journal_kept_ = true; }
  std::vector<std::pair<size_t, uint64_t>> take_changed_entries() override;
  std::optional<QueueEntry> entry(size_t queue, uint64_t position) const override;
  size_t ready_messages() const override;
  size_t unacked_messages() const override;

  // The explorer's view. The fingerprint covers the model's whole state (JetStream::fingerprint)
  // and what each client holds. Every event touches every queue, so sleep sets and DPOR order
  // every event with every other (sound, and no reduction); a consumer may always have filled
  // its prefetch, so persistent sets are off.
  void fingerprint(Hasher& hasher) const override;
  // Its connection numbers stay in `fingerprint`: nothing is left out.
  void fingerprint_counters(Hasher&) const override {}
  BrokerTouches take_touched() override { return BrokerTouches{~uint64_t{0}, 0, 0}; }
  bool a_consumer_could_have_filled() const override { return true; }
  bool dispatchable() const override { return false; }

  // The model itself, for the tests.
  const JetStream& jetstream() const { return js_; }

  // The explorer's ack wait choice: an error queue has no AckWait.
  bool ack_wait_may_expire(size_t queue) const override;
  void expire_ack_wait(size_t queue, int64_t now_ms) override;

 private:
  struct Queue {
    std::string name;
    bool error = false;
    size_t source = 0;                  // error queues: the work queue they belong to
    size_t durable = 0;                 // work queues: the JetStream consumer
    std::vector<std::string> patterns;  // the topology's bindings (AMQP topic patterns)
    std::vector<std::pair<uint64_t, MessagePtr>> parked;  // error queues: (position, message)
    std::vector<size_t> clients;  // work queues: in the order they were added
    size_t turn = 0;              // whose turn it is to pull first
  };
  struct Held {
    JetStreamDelivery delivery;
    int64_t delivered_ms = 0;
  };
  struct Client {
    std::string name;
    size_t queue = 0;
    bool connected = true;
    uint64_t connection = 1;
    std::map<int64_t, Held> held;  // by consumer sequence
  };

  // One pull of one message by `client`, or nothing.
  std::optional<Delivery> pull(size_t client, int64_t now_ms);
  std::optional<Held> take_held(size_t consumer, uint64_t channel, int64_t delivery_tag);
  static Delivery as_delivery(const JetStreamDelivery& delivery, size_t client,
                              uint64_t connection);
  void record_advisories();
  void record(EventKind kind, const MessagePtr& message, std::string_view queue, std::string detail,
              int64_t now_ms);
  bool bound(const Queue& queue, std::string_view subject) const;
  std::vector<QueueEntry> entries_of(size_t queue) const;

  std::function<void(TraceEvent)> record_;
  JetStreamWorldConfig config_;
  JetStream js_;
  std::vector<Queue> queues_;
  std::vector<Client> clients_;
  std::map<std::string, int64_t> parked_totals_;
  uint64_t next_parked_position_ = 1;
  bool journal_kept_ = false;
  std::set<std::pair<size_t, uint64_t>> shown_;
  std::set<std::pair<size_t, uint64_t>> nakked_;  // (durable, stream sequence) due again by nak  //
                                                  // the rows of the last take_changed_entries
};

}  // namespace inboxsim
