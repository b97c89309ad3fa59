// A fake RabbitMQ with the semantics the inbox pattern depends on (DESIGN §1):
// a topic exchange routing to queues, consumers with a prefetch and per-channel delivery tags,
// the redelivered flag and x-delivery-count, ack / nack with requeue, requeue of every unacked
// delivery when a connection closes, and dead-lettering past the delivery limit.
//
// The broker owns queued and unacked messages. It does not own time: pump() hands back the
// deliveries it dispatched and the World decides when each arrives. Publisher confirms are the
// World's business too, because whether a confirm arrives is a fault decision.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "domain/message.h"
#include "kernel/trace.h"

namespace inboxsim {

// One delivery to one consumer, as the consumer sees it.
struct Delivery {
  MessagePtr message;
  size_t consumer = 0;
  uint64_t channel = 0;      // which incarnation of the consumer's channel it belongs to
  int64_t delivery_tag = 0;  // increasing per channel, from 1
  bool redelivered = false;
  int64_t delivery_count = 0;  // x-delivery-count: how many times it was delivered before
};

struct DeadLetter {
  MessagePtr message;
  std::string_view queue;
  std::string reason;
};

// True when the routing key matches the AMQP topic pattern ('*' one word, '#' zero or more).
bool topic_matches(std::string_view pattern, std::string_view routing_key);

class Broker {
 public:
  // `record` receives the broker's own events (requeue, dead_letter).
  Broker(std::function<void(TraceEvent)> record, int64_t prefetch, int64_t delivery_limit);

  // Declares a queue bound to `banking.events` with these patterns; returns its index.
  size_t declare_queue(std::string_view name, std::vector<std::string> patterns);

  // Adds a consumer on a queue, connected; returns its index.
  size_t add_consumer(std::string_view name, size_t queue);

  // Routes a message through the exchange to every bound queue; returns how many it reached.
  size_t publish(const MessagePtr& message);

  // Dispatches ready messages and appends the deliveries to `out`: queue by queue in the order
  // they were declared, each message to the queue's next consumer in round-robin order (the
  // order consumers were added) that is connected and has prefetch room, as RabbitMQ does.
  void pump(std::vector<Delivery>& out);

  // True while the delivery's channel is open: a delivery or ack on a closed channel is void.
  bool channel_open(size_t consumer, uint64_t channel) const;

  // Settles an unacked delivery and returns it, or nothing if the channel closed meanwhile
  // (the message was already requeued).
  std::optional<Delivery> ack(size_t consumer, uint64_t channel, int64_t delivery_tag);

  // Returns an unacked delivery to its queue (redelivered), or dead-letters it past the limit.
  // Returns nothing if the channel closed meanwhile.
  std::optional<Delivery> nack(size_t consumer, uint64_t channel, int64_t delivery_tag,
                               int64_t now_ms);

  // Closes the consumer's connection: every unacked delivery goes back to the queue near its
  // original position, flagged redelivered.
  void close_connection(size_t consumer, int64_t now_ms, std::string_view reason);
  void open_connection(size_t consumer);
  bool connected(size_t consumer) const;

  size_t consumer_count() const { return consumers_.size(); }

  // True when every queue is empty and nothing is unacked.
  bool idle() const;
  size_t ready_messages() const;
  size_t unacked_messages() const;
  const std::vector<DeadLetter>& dead_letters() const { return dead_letters_; }

 private:
  struct Queued {
    MessagePtr message;
    uint64_t position = 0;  // enqueue order, kept across requeues
    int64_t delivery_count = 0;
    bool redelivered = false;
  };
  struct Queue {
    std::string name;
    std::vector<std::string> patterns;
    std::deque<Queued> ready;       // sorted by position
    std::vector<size_t> consumers;  // in the order they were added
    size_t next_consumer = 0;       // round-robin cursor into `consumers`
  };
  struct Consumer {
    std::string name;
    size_t queue = 0;
    bool connected = true;
    uint64_t channel = 1;
    int64_t next_tag = 1;
    std::map<int64_t, Queued> unacked;  // by delivery tag
  };

  // Returns the next consumer of `queue` in round-robin order that can take a delivery, if any.
  std::optional<size_t> next_ready_consumer(Queue& queue);
  void deliver(size_t consumer_index, std::vector<Delivery>& out);
  void requeue(Consumer& consumer, Queued queued, int64_t now_ms, std::string_view reason);
  void record(EventKind kind, const Queued& queued, std::string_view queue, std::string detail,
              int64_t now_ms);

  std::function<void(TraceEvent)> record_;
  int64_t prefetch_;
  int64_t delivery_limit_;
  uint64_t next_position_ = 1;
  std::vector<Queue> queues_;
  std::vector<Consumer> consumers_;
  std::vector<DeadLetter> dead_letters_;
};

}  // namespace inboxsim
