// The broker seam: what the World and the views ask of a message broker, in protocol-neutral
// terms. A publish routes a message to the work queues bound to its routing key; the broker
// leases each message to one consumer at a time (pump), and the consumer settles the lease
// (ack), returns it (nack) or gives up on it (reject); a closed connection ends its leases; what
// nobody consumes (dead-letter and error queues) is parked until an operator redrives it.
//
// Two brokers implement it: the RabbitMQ model (broker/rabbitmq/broker.h, `broker.kind = rabbitmq`)
// and the JetStream one (broker/jetstream/jetstream_broker.h, `broker.kind = jetstream`), whose
// leases also end by timer: a delivery not settled within its ack wait is leased again, to
// whichever consumer asks next. docs/architecture.md ("The broker seam") says who calls what.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "domain/message.h"
#include "kernel/fingerprint.h"
#include "kernel/footprint.h"
#include "kernel/trace.h"

namespace inboxsim {

struct Config;

// One delivery to one consumer, as the consumer sees it: a lease on a message, with the
// receipt (`channel`, `delivery_tag`) that settles it. RabbitMQ: the channel's incarnation and
// its delivery tag. JetStream: the client connection's incarnation and the consumer sequence.
struct Delivery {
  MessagePtr message;
  size_t consumer = 0;
  uint64_t channel = 0;      // which incarnation of the consumer's connection it belongs to
  int64_t delivery_tag = 0;  // the receipt: unique per consumer and connection, increasing
  bool redelivered = false;
  // The deliveries before this one, as the broker counts them: RabbitMQ's x-delivery-count
  // (quorum queues only: the returns before this delivery), JetStream's NumDelivered minus one
  // (so that the views, which show it under RabbitMQ's name, read the same on both brokers).
  int64_t delivery_count = 0;
  int64_t attempts = 0;  // deliveries before this one, whatever the broker (for reports)
};

// What a queue is for.
enum class QueueRole : uint8_t {
  work,         // consumed by a service
  dead_letter,  // `<queue>.dlq`: where the broker dead-letters (RabbitMQ's DLX, one per queue)
  error,        // `<queue>_error`: where MassTransit moves a message whose handling faulted
};

// A message waiting in a dead-letter or error queue.
struct ParkedMessage {
  MessagePtr message;
  std::string queue;
  // Why the broker dead-lettered it, as RabbitMQ's x-death reason: `delivery_limit` or
  // `rejected`. Empty in an error queue, where MassTransit moved it.
  std::string reason;
};

// One message in a queue as a teaching view shows it (QueueRole says which kind of queue).
struct QueueEntry {
  std::string_view queue;
  uint64_t position = 0;   // enqueue order: the message's row key in the view
  std::string_view state;  // "ready", "returned" (quorum: served first) or "unacked"
  MessagePtr message;
  std::string_view consumer;  // unacked: who holds it
  int64_t delivery_tag = 0;   // unacked: its tag on that consumer's channel
  bool redelivered = false;
  int64_t delivery_count = 0;
  std::string_view reason;  // dead-letter queues: why
};

// The first channel that RabbitMQ's consumer timeout closes (Broker::next_consumer_timeout).
struct ConsumerTimeout {
  int64_t at_ms = 0;         // the channel tick that finds the oldest unacked delivery too old
  size_t consumer = 0;       // whose channel it is
  int64_t delivered_ms = 0;  // when that delivery was made
  int64_t delivery_tag = 0;
};

class MessageBroker {
 public:
  virtual ~MessageBroker() = default;

  // The topology (domain/topology.h): a work queue bound to these routing-key patterns, its
  // error queue, and a consumer on it. Each returns the new queue's or consumer's index.
  virtual size_t declare_queue(std::string_view name, std::vector<std::string> patterns) = 0;
  virtual size_t declare_error_queue(size_t source) = 0;
  virtual size_t add_consumer(std::string_view name, size_t queue) = 0;
  virtual std::optional<size_t> find_queue(std::string_view name) const = 0;
  virtual const std::string& queue_name(size_t queue) const = 0;
  virtual size_t queue_count() const = 0;
  virtual size_t consumer_count() const = 0;

  // What is published: routes a message by its own routing key; returns how many queues it
  // reached (0: unroutable, or dropped by the broker's deduplication).
  virtual size_t publish(const MessagePtr& message, int64_t now_ms) = 0;
  // A message published by hand with its own routing key, through the exchange or (with
  // `default_exchange`) straight to the queue the key names.
  virtual size_t publish(const MessagePtr& message, std::string_view key, bool default_exchange,
                         int64_t now_ms) = 0;

  // What is delivered to whom: appends the leases the broker hands out now to `out`.
  virtual void pump(std::vector<Delivery>& out, int64_t now_ms) = 0;
  // When the broker's next timer is due (a lease running out), if it has any: the World runs
  // the broker then. RabbitMQ has none (its consumer timeout is the World's business).
  virtual std::optional<int64_t> next_due_ms() const = 0;

  // Settling a lease, by its receipt. Each returns the delivery, or nothing when its connection
  // closed meanwhile (the receipt is void).
  virtual std::optional<Delivery> ack(size_t consumer, uint64_t channel, int64_t delivery_tag,
                                      int64_t now_ms) = 0;
  // Returns the message for another delivery.
  virtual std::optional<Delivery> nack(size_t consumer, uint64_t channel, int64_t delivery_tag,
                                       int64_t now_ms) = 0;
  // Gives up on it: no further delivery.
  virtual std::optional<Delivery> reject(size_t consumer, uint64_t channel, int64_t delivery_tag,
                                         int64_t now_ms) = 0;
  // Says the receipt's holder is still working on it, which restarts its redelivery timer.
  // Returns whether the broker still had it pending for that holder. A broker with no such
  // reply (RabbitMQ: the parser refuses consumer.in_progress there) keeps nothing of it.
  virtual bool in_progress(size_t consumer, uint64_t channel, int64_t delivery_tag,
                           int64_t now_ms) = 0;
  // True while the receipt's connection is open (counts as a read for the explorer).
  virtual bool channel_open(size_t consumer, uint64_t channel) const = 0;
  // The same, without counting as a read.
  virtual bool channel_still_open(size_t consumer, uint64_t channel) const = 0;
  // What a settle on a closed connection finds: the message's fate, in words.
  virtual std::string_view closed_connection_words() const = 0;
  // The same for the World's own events: a handler cancelled because its connection closed,
  // an ack that arrived on a closed connection, and what a dead process had not acked.
  virtual std::string_view cancelled_handler_words() const = 0;
  virtual std::string_view late_ack_words() const = 0;
  virtual std::string_view process_death_words() const = 0;
  // Leases end by a timer as well as by a settle, so an ack races the timer (the explorer lets
  // no ack commute). RabbitMQ's do not.
  virtual bool leases_end_by_timer() const = 0;
  // A silent client's connection is closed by heartbeats (RabbitMQ's; JetStream's pull
  // consumers lose nothing to a silent client).
  virtual bool has_heartbeats() const = 0;
  // A message may be redelivered without limit (a classic queue; JetStream without
  // MaxDeliver), so the World stops a story whose message would go round for ever; and what
  // does so, in words.
  virtual bool redelivers_without_limit() const = 0;
  virtual std::string_view unlimited_queue_words() const = 0;

  // Connection loss and recovery.
  virtual void close_connection(size_t consumer, int64_t now_ms, std::string_view reason) = 0;
  virtual void open_connection(size_t consumer, int64_t now_ms) = 0;
  virtual bool connected(size_t consumer) const = 0;
  // RabbitMQ's consumer timeout (broker/rabbitmq/broker.h); nothing on a broker without one.
  virtual std::optional<ConsumerTimeout> next_consumer_timeout(int64_t timeout_ms,
                                                               int64_t tick_ms) const = 0;

  // Parked messages and redrive.
  virtual const std::string& move_to_error_queue(size_t queue, const MessagePtr& message) = 0;
  virtual std::vector<MessagePtr> redrive(size_t queue, int64_t now_ms) = 0;
  virtual std::vector<std::string> parking_queues() const = 0;
  virtual std::vector<ParkedMessage> parked() const = 0;
  virtual const std::map<std::string, int64_t>& parked_totals() const = 0;

  // The queue contents for the views (broker/rabbitmq/broker.h's Broker::contents says the order).
  virtual std::vector<QueueEntry> contents() const = 0;
  virtual void keep_changed_entries() = 0;
  virtual std::vector<std::pair<size_t, uint64_t>> take_changed_entries() = 0;
  virtual std::optional<QueueEntry> entry(size_t queue, uint64_t position) const = 0;
  // Work queues only: messages waiting for a consumer, and leased ones.
  virtual size_t ready_messages() const = 0;
  virtual size_t unacked_messages() const = 0;

  // The explorer's view: the fingerprint of what decides the broker's future, the queues
  // touched since the last call (the footprint), and the assumptions its persistent sets make.
  virtual void fingerprint(Hasher& hasher) const = 0;
  // Tests: the counters `fingerprint` leaves out because nothing reads their values, only their
  // order or their equality with the consumer's current one (ExploreControl::
  // keep_broker_counters).
  virtual void fingerprint_counters(Hasher& hasher) const = 0;
  virtual BrokerTouches take_touched() = 0;
  virtual bool a_consumer_could_have_filled() const = 0;
  virtual bool dispatchable() const = 0;

  // The explorer's ack wait choice (docs/model.md, "Exploration"), for a broker whose leases
  // end by timer: whether a lease of work queue `queue` could run out now (one that is not
  // due for redelivery already), and the oldest such lease running out now, as its timer
  // would end it. RabbitMQ has no such timer: never.
  // REQUIRES (expire_ack_wait): ack_wait_may_expire(queue).
  virtual bool ack_wait_may_expire(size_t queue) const = 0;
  virtual void expire_ack_wait(size_t queue, int64_t now_ms) = 0;
};

// The broker `config.broker_kind` names, with its settings; `record` receives its own events.
std::unique_ptr<MessageBroker> make_broker(const Config& config,
                                           std::function<void(TraceEvent)> record);

}  // namespace inboxsim
