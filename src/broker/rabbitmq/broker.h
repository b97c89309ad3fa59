// A fake RabbitMQ with the semantics the inbox pattern depends on (docs/contract.md §1):
// a topic exchange routing to queues, consumers with a prefetch and per-channel delivery tags,
// the redelivered flag and x-delivery-count, ack / nack with requeue, requeue of every unacked
// delivery when a connection closes, and (quorum queues) dead-lettering past the delivery limit
// into the queue's dead-letter queue. Dead-letter queues, and the error queues MassTransit moves
// faulted messages to, are real queues that nobody consumes: an operator can redrive them.
// Each claim is checked against a real RabbitMQ by the conformance scripts (tests/conformance).
//
// Where the two queue types differ, the Broker follows each (docs/model.md, "The broker"):
// a classic queue puts a returned message back at its original position, a quorum queue serves
// returned messages first, in the order they came back (rabbit_fifo's `returns`); a quorum
// queue's consumers wait for messages in the order they got prefetch room (its service queue),
// a classic queue's take turns and drop out of the rotation only when a delivery finds them
// full (rabbit_queue_consumers).
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
#include <utility>
#include <vector>

#include "broker/message_broker.h"
#include "domain/message.h"
#include "kernel/assert.h"
#include "kernel/fingerprint.h"
#include "kernel/trace.h"

namespace inboxsim {

// True when the routing key matches the AMQP topic pattern ('*' one word, '#' zero or more).
bool topic_matches(std::string_view pattern, std::string_view routing_key);

// The RabbitMQ model behind the broker seam (broker/message_broker.h). Its own calls keep
// RabbitMQ's signatures (the conformance scripts and the unit tests use them); the seam's
// overrides forward to them.
class Broker final : public MessageBroker {
 public:
  // `record` receives the broker's own events (requeue, dead_letter, dropped). A quorum queue
  // counts returns and dead-letters a message returned more than `delivery_limit` times; a
  // classic queue does neither. Without a `dead_letter_exchange`, a message the broker would
  // dead-letter is dropped instead (RabbitMQ 4.0: rabbit_fifo_dlx:discard with no handler).
  Broker(std::function<void(TraceEvent)> record, int64_t prefetch, int64_t delivery_limit,
         bool quorum, bool dead_letter_exchange = true);

  // Declares a work queue bound to `banking.events` with these patterns, and its dead-letter
  // queue `<name>.dlq`; returns the work queue's index.
  size_t declare_queue(std::string_view name, std::vector<std::string> patterns) override;

  // Declares `<name of source>_error`, where faulted messages of `source` are moved.
  size_t declare_error_queue(size_t source) override;

  // The queue named `name`, if any.
  std::optional<size_t> find_queue(std::string_view name) const override;
  const std::string& queue_name(size_t queue) const override;
  size_t queue_count() const override { return queues_.size(); }

  // Moves a message into error queue `queue` (MassTransit's error transport). Returns its name.
  // REQUIRES: `queue` is an error queue.
  const std::string& move_to_error_queue(size_t queue, const MessagePtr& message) override;

  // Moves every message of a dead-letter or error queue back to the queue it came from, as new
  // messages (not redelivered, counts reset), in order. Returns them.
  // REQUIRES: `queue` is a dead-letter or error queue.
  std::vector<MessagePtr> redrive(size_t queue);
  std::vector<MessagePtr> redrive(size_t queue, int64_t /*now_ms*/) override {
    return redrive(queue);
  }

  // The names of every dead-letter and error queue, in the order they were declared.
  std::vector<std::string> parking_queues() const override;

  // Messages waiting in dead-letter and error queues, queue by queue.
  std::vector<ParkedMessage> parked() const override;
  // How many messages went into each dead-letter and error queue over the run (by name).
  const std::map<std::string, int64_t>& parked_totals() const override { return parked_totals_; }

  // Every queue's messages, queue by queue in the order they were declared: ready and returned
  // ones in the order they wait, then each consumer's unacked ones by tag. The views read it
  // between events; the entries point into the broker and last until its next change.
  std::vector<QueueEntry> contents() const override;
  // The views' journal of queue rows, so that a recorder need not compare every queue after
  // every event (which made a long story's report quadratic). Once kept, every change to a
  // message's place in a queue notes (queue, position); take_changed_entries() returns the
  // notes since the last call, sorted and without repeats, and clears them. Off by default:
  // a run without a view pays one test per change.
  void keep_changed_entries() override { journal_kept_ = true; }
  std::vector<std::pair<size_t, uint64_t>> take_changed_entries() override;
  // The message at `position` of queue `queue` as contents() shows it, or nothing when it is
  // no longer there. Costs a binary search of the ready messages, plus the returned and unacked
  // ones (a few: bounded by the prefetch).
  std::optional<QueueEntry> entry(size_t queue, uint64_t position) const override;
  // Adds a consumer on a queue, connected; returns its index.
  size_t add_consumer(std::string_view name, size_t queue) override;

  // Routes a message through the exchange to every bound queue; returns how many it reached.
  size_t publish(const MessagePtr& message);
  size_t publish(const MessagePtr& message, int64_t /*now_ms*/) override {
    return publish(message);
  }
  // The same with the publisher's own routing key (a message published by hand): through the
  // exchange, or with `default_exchange` straight to the queue the key names (RabbitMQ's
  // default exchange binds every queue by its name). Unroutable: it reaches no queue.
  size_t publish(const MessagePtr& message, std::string_view key, bool default_exchange);
  size_t publish(const MessagePtr& message, std::string_view key, bool default_exchange,
                 int64_t /*now_ms*/) override {
    return publish(message, key, default_exchange);
  }

  // Dispatches ready messages and appends the deliveries to `out`: queue by queue in the order
  // they were declared, each message to the first consumer of the queue's line that is
  // connected and has prefetch room. Consumers join the line in the order they are added (so
  // they take turns, #1 first) and again, at its end, when they get room back or reconnect.
  // `now_ms` is when they leave the broker (for the consumer timeout).
  void pump(std::vector<Delivery>& out, int64_t now_ms = 0) override;
  // RabbitMQ ends no lease by timer (the consumer timeout closes a channel: the World's job).
  std::optional<int64_t> next_due_ms() const override { return std::nullopt; }

  // RabbitMQ's consumer timeout (rabbit_channel, 4.0.9): every `tick_ms` from its opening, a
  // channel looks at its oldest unacked delivery and closes (PRECONDITION_FAILED) if it was
  // delivered more than `timeout_ms` before. Returns the first such close to come, over every
  // open channel holding an unacked delivery (the earliest; on a tie, the lowest consumer), or
  // nothing. It depends on the clock only through the times given to pump and open_connection.
  std::optional<ConsumerTimeout> next_consumer_timeout(int64_t timeout_ms,
                                                       int64_t tick_ms) const override;

  // True while the delivery's channel is open: a delivery or ack on a closed channel is void.
  bool channel_open(size_t consumer, uint64_t channel) const override;
  std::string_view closed_connection_words() const override {
    return "the broker requeued the message when the connection closed";
  }
  std::string_view cancelled_handler_words() const override {
    return "the broker requeued the message";
  }
  std::string_view late_ack_words() const override { return "the message was already requeued"; }
  std::string_view process_death_words() const override {
    return "unacked deliveries go back to the queue";
  }
  bool leases_end_by_timer() const override { return false; }
  bool has_heartbeats() const override { return true; }
  bool redelivers_without_limit() const override { return !quorum_; }
  std::string_view unlimited_queue_words() const override {
    return "classic queue, which has no delivery limit";
  }

  // Settles an unacked delivery and returns it, or nothing if the channel closed meanwhile
  // (the message was already requeued).
  std::optional<Delivery> ack(size_t consumer, uint64_t channel, int64_t delivery_tag);
  std::optional<Delivery> ack(size_t consumer, uint64_t channel, int64_t delivery_tag,
                              int64_t /*now_ms*/) override {
    return ack(consumer, channel, delivery_tag);
  }

  // Returns an unacked delivery to its queue (redelivered), or dead-letters it past the limit.
  // Returns nothing if the channel closed meanwhile.
  std::optional<Delivery> nack(size_t consumer, uint64_t channel, int64_t delivery_tag,
                               int64_t now_ms) override;

  // basic.reject (or basic.nack) without requeue: dead-letters the delivery into the queue's
  // dead-letter queue with reason `rejected`, whatever the queue type (dlx.md). Returns
  // nothing if the channel closed meanwhile.
  std::optional<Delivery> reject(size_t consumer, uint64_t channel, int64_t delivery_tag,
                                 int64_t now_ms) override;
  // AMQP has no reply that extends a delivery's time.
  bool in_progress(size_t, uint64_t, int64_t, int64_t) override { return false; }

  // Closes the consumer's connection: every unacked delivery goes back to the queue, in the
  // order it was delivered, flagged redelivered (where: see the opening paragraph); the
  // consumer leaves the queue's line.
  void close_connection(size_t consumer, int64_t now_ms, std::string_view reason) override;
  // Reconnects the consumer: it consumes again, at the end of its queue's line.
  // REQUIRES: it holds no unacked delivery.
  void open_connection(size_t consumer, int64_t now_ms = 0) override;
  bool connected(size_t consumer) const override;
  // The same as channel_open, without counting as a read (the explorer asking, not an event):
  // a channel once closed never opens again (a reconnect opens a new one).
  bool channel_still_open(size_t consumer, uint64_t channel) const override {
    return consumers_[consumer].connected && consumers_[consumer].channel == channel;
  }

  size_t consumer_count() const override { return consumers_.size(); }

  // The queues (by index, as bits) whose messages or consumers were read or changed since the
  // last call, and the consumers whose channel was read or changed, which clears them: the
  // explorer's footprint of an event.
  BrokerTouches take_touched() override { return std::exchange(touched_, BrokerTouches{}); }
  // True once some queue has made as many deliveries as the prefetch. Until then no consumer
  // can have been full, so an ack never decided who got a message (docs/model.md,
  // "Exploration": the explorer's persistent sets rely on it and check it).
  bool a_consumer_could_have_filled() const override;

  // True when some work queue has a ready message and a consumer that could take it: never
  // after pump() (the explorer relies on it, and checks it).
  bool dispatchable() const override;

  // RabbitMQ's leases end by no timer of the broker (its consumer timeout closes a channel).
  bool ack_wait_may_expire(size_t) const override { return false; }
  void expire_ack_wait(size_t, int64_t) override { INBOXSIM_ASSERT(false); }

  // Every queue's messages in order (by rank), every consumer's connection and unacked
  // deliveries, the round-robin cursors: what decides the broker's future, for the explorer.
  // Its counters (channel numbers, next tags, the next position) are fingerprint_counters.
  void fingerprint(Hasher& hasher) const override;
  void fingerprint_counters(Hasher& hasher) const override;

  // Work queues only (ready and returned): what waits in dead-letter and error queues is
  // parked, not pending.
  size_t ready_messages() const override;
  size_t unacked_messages() const override;

 private:
  struct Queued {
    MessagePtr message;
    uint64_t position = 0;  // enqueue order, kept across requeues
    int64_t delivery_count = 0;
    int64_t attempts = 0;
    bool redelivered = false;
    std::string dead_letter_reason;  // parked messages only
    int64_t delivered_ms = 0;        // unacked: when it was delivered (not part of the state)
  };
  struct Queue {
    std::string name;
    QueueRole role = QueueRole::work;
    size_t source = 0;       // dead-letter and error queues: the queue their messages came from
    size_t dead_letter = 0;  // work queues: their dead-letter queue
    std::vector<std::string> patterns;
    std::deque<Queued> ready;     // sorted by position (classic queues requeue into it)
    std::deque<Queued> returned;  // quorum queues: returned deliveries, served before `ready`
    std::deque<size_t> line;      // consumers waiting for a message, first served first
    int64_t deliveries = 0;       // deliveries made from it so far (not part of the state)
  };
  struct Consumer {
    std::string name;
    size_t queue = 0;
    bool connected = true;
    bool in_line = false;
    uint64_t channel = 1;
    int64_t next_tag = 1;
    int64_t opened_ms = 0;              // when its channel opened: the phase of the channel's tick
    std::map<int64_t, Queued> unacked;  // by delivery tag
  };

  bool has_room(const Consumer& consumer) const {
    return static_cast<int64_t>(consumer.unacked.size()) < prefetch_;
  }
  // Puts a connected consumer with prefetch room at the end of its queue's line, unless it is
  // in the line already.
  void join_line(size_t consumer_index);
  // Takes the first consumer of the line that is connected and has room, dropping the others
  // from the line, if any.
  std::optional<size_t> next_ready_consumer(Queue& queue);
  void deliver(size_t consumer_index, std::vector<Delivery>& out, int64_t now_ms);
  void requeue(Consumer& consumer, Queued queued, int64_t now_ms, std::string_view reason);
  void park(size_t queue, MessagePtr message, std::string reason);
  void dead_letter(Queue& queue, const Queued& queued, std::string reason, int64_t now_ms);
  static Delivery as_delivery(const Queued& queued, size_t consumer, uint64_t channel,
                              int64_t delivery_tag);
  // Takes an unacked delivery off its consumer, or nothing if the channel closed meanwhile.
  // REQUIRES: an open channel holds `delivery_tag` unacked.
  // `touches_queue`: what it does decides the queue's future (a nack, a reject, an ack that
  // gives a full consumer room), for the explorer's footprint.
  std::optional<Queued> take_unacked(size_t consumer, uint64_t channel, int64_t delivery_tag,
                                     bool touches_queue);
  void record(EventKind kind, const Queued& queued, std::string_view queue, std::string detail,
              int64_t now_ms);

  void touch(size_t queue) const { touched_.queues |= uint64_t{1} << (queue % 64); }
  void read_channel(size_t consumer) const {
    touched_.channels_read |= uint64_t{1} << (consumer % 64);
  }
  void write_channel(size_t consumer) const {
    touched_.channels_written |= uint64_t{1} << (consumer % 64);
  }
  void note_changed(size_t queue, uint64_t position) {
    if (journal_kept_) journal_.emplace_back(queue, position);
  }
  static QueueEntry entry_of(const Queue& queue, const Queued& queued, std::string_view state);

  std::function<void(TraceEvent)> record_;
  mutable BrokerTouches touched_;
  bool journal_kept_ = false;
  std::vector<std::pair<size_t, uint64_t>> journal_;  // (queue, position), since the last take
  int64_t prefetch_;
  int64_t delivery_limit_;
  bool quorum_;
  bool dead_letter_exchange_;
  uint64_t next_position_ = 1;
  std::vector<Queue> queues_;
  std::vector<Consumer> consumers_;
  std::map<std::string, int64_t> parked_totals_;
};

}  // namespace inboxsim
