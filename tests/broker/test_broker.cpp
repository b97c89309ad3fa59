// The fake broker must behave like RabbitMQ where the inbox pattern depends on it: routing,
// delivery tags, the redelivered flag, x-delivery-count, prefetch, requeue on connection close,
// and dead-lettering past the delivery limit.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <optional>

#include "broker/rabbitmq/broker.h"
#include "services/host.h"
#include "support/messages.h"

using namespace inboxsim;
using inboxsim::testing::message;

namespace {

struct Fixture {
  std::vector<TraceEvent> events;
  Broker broker{[this](TraceEvent event) { events.push_back(std::move(event)); }, /*prefetch=*/2,
                /*delivery_limit=*/3, /*quorum=*/true};
  size_t account_queue = broker.declare_queue("account-service", {"transfers.#"});
  size_t transfer_queue = broker.declare_queue("transfer-service", {"accounts.#"});
  size_t consumer = broker.add_consumer("account-service", account_queue);

  std::vector<Delivery> pump() {
    std::vector<Delivery> out;
    broker.pump(out);
    return out;
  }
};

}  // namespace

TEST_CASE("topic patterns match as AMQP topic exchanges do", "[broker]") {
  REQUIRE(topic_matches("transfers.#", "transfers.transfer.requested"));
  REQUIRE(topic_matches("transfers.#", "transfers"));
  REQUIRE_FALSE(topic_matches("transfers.#", "accounts.account.debited"));
  REQUIRE(topic_matches("accounts.account.credited", "accounts.account.credited"));
  REQUIRE_FALSE(topic_matches("accounts.account.credited", "accounts.account.debited"));
  REQUIRE(topic_matches("*.account.*", "accounts.account.refunded"));
  REQUIRE_FALSE(topic_matches("*.account", "accounts.account.refunded"));
  REQUIRE(topic_matches("#.refunded", "accounts.account.refunded"));
}

TEST_CASE("a message reaches only the queues bound to its routing key", "[broker]") {
  Fixture f;
  REQUIRE(f.broker.publish(message("m-1")) == 1);
  REQUIRE(f.broker.publish(message("m-2", MessageType::account_debited)) == 1);
  const auto deliveries = f.pump();
  REQUIRE(deliveries.size() == 1);
  REQUIRE(deliveries[0].message->message_id == "m-1");
  REQUIRE(f.broker.ready_messages() == 1);  // Account.Debited waits for transfer-service
}

TEST_CASE("prefetch bounds unacked deliveries, and tags increase per channel", "[broker]") {
  Fixture f;
  for (int i = 1; i <= 3; ++i) f.broker.publish(message("m-" + std::to_string(i)));
  auto deliveries = f.pump();
  REQUIRE(deliveries.size() == 2);
  REQUIRE(deliveries[0].delivery_tag == 1);
  REQUIRE(deliveries[1].delivery_tag == 2);
  REQUIRE_FALSE(deliveries[0].redelivered);
  REQUIRE(deliveries[0].delivery_count == 0);
  REQUIRE(f.broker.ack(f.consumer, deliveries[0].channel, 1).has_value());
  deliveries = f.pump();
  REQUIRE(deliveries.size() == 1);
  REQUIRE(deliveries[0].delivery_tag == 3);
  REQUIRE(deliveries[0].message->message_id == "m-3");
}

TEST_CASE("closing a connection requeues every unacked delivery, redelivered, in order",
          "[broker]") {
  Fixture f;
  for (int i = 1; i <= 3; ++i) f.broker.publish(message("m-" + std::to_string(i)));
  const auto first = f.pump();
  REQUIRE(first.size() == 2);
  f.broker.close_connection(f.consumer, 5, "crash");
  // An ack that arrives after the close is void: the message is already back in the queue.
  REQUIRE_FALSE(f.broker.ack(f.consumer, first[0].channel, 1).has_value());
  REQUIRE(f.broker.ready_messages() == 3);
  f.broker.open_connection(f.consumer);
  const auto again = f.pump();
  REQUIRE(again.size() == 2);
  REQUIRE(again[0].message->message_id == "m-1");
  REQUIRE(again[0].redelivered);
  REQUIRE(again[0].delivery_count == 1);
  REQUIRE(again[0].delivery_tag == 1);  // a new channel starts its tags again
  REQUIRE(again[0].channel != first[0].channel);
  REQUIRE(again[1].message->message_id == "m-2");
}

TEST_CASE(
    "a nack requeues near the original position and, returned more than the limit, is "
    "dead-lettered",
    "[broker]") {
  Fixture f;
  f.broker.publish(message("m-1"));
  f.broker.publish(message("m-2"));
  // A quorum queue dead-letters a message returned more times than the limit (3 here): the
  // fourth delivery's nack is the one that sends it away (quorum-queues.md).
  for (int attempt = 1; attempt <= 4; ++attempt) {
    const auto deliveries = f.pump();
    REQUIRE_FALSE(deliveries.empty());
    REQUIRE(deliveries[0].message->message_id == "m-1");  // back at the head each time
    REQUIRE(deliveries[0].delivery_count == attempt - 1);
    // Return every delivery so only m-1's count matters for the next round.
    for (auto it = deliveries.rbegin(); it != deliveries.rend(); ++it) {
      if (it->message->message_id == "m-2") {
        REQUIRE(f.broker.ack(f.consumer, it->channel, it->delivery_tag).has_value());
      }
    }
    REQUIRE(f.broker.nack(f.consumer, deliveries[0].channel, deliveries[0].delivery_tag, 1)
                .has_value());
  }
  const std::vector<ParkedMessage> parked = f.broker.parked();
  REQUIRE(parked.size() == 1);
  REQUIRE(parked[0].message->message_id == "m-1");
  REQUIRE(parked[0].queue == "account-service.dlq");
  REQUIRE(parked[0].reason == "delivery_limit");
  REQUIRE(f.events.back().kind == EventKind::dead_letter);
  // For its count past the limit (3), where a rejected message would not have one.
  REQUIRE(f.events.back().message_id == "m-1");
  REQUIRE(f.events.back().delivery_count == 4);
  REQUIRE(f.broker.ready_messages() == 0);
  REQUIRE(f.broker.unacked_messages() == 0);
  REQUIRE(f.broker.parked_totals().at("account-service.dlq") == 1);
}

TEST_CASE("a classic queue has no delivery count and no limit", "[broker]") {
  std::vector<TraceEvent> events;
  Broker broker([&events](TraceEvent event) { events.push_back(std::move(event)); },
                /*prefetch=*/1, /*delivery_limit=*/3, /*quorum=*/false);
  const size_t queue = broker.declare_queue("transfer-service", {"accounts.#"});
  const size_t consumer = broker.add_consumer("transfer-service", queue);
  broker.publish(message("m-1", MessageType::account_debited));
  for (int attempt = 1; attempt <= 10; ++attempt) {
    std::vector<Delivery> out;
    broker.pump(out);
    REQUIRE(out.size() == 1);
    REQUIRE(out[0].delivery_count == 0);  // no x-delivery-count on a classic queue
    REQUIRE(out[0].attempts == attempt - 1);
    REQUIRE(out[0].redelivered == (attempt > 1));
    REQUIRE(broker.nack(consumer, out[0].channel, out[0].delivery_tag, 0).has_value());
  }
  REQUIRE(broker.parked().empty());
  REQUIRE(broker.ready_messages() == 1);
}

TEST_CASE("an error queue holds what it is given, and a redrive returns it as a new message",
          "[broker]") {
  Fixture f;
  const size_t error = f.broker.declare_error_queue(f.account_queue);
  REQUIRE(f.broker.queue_name(error) == "account-service_error");
  REQUIRE(f.broker.find_queue("account-service_error") == error);
  f.broker.publish(message("m-1"));
  const auto first = f.pump();
  REQUIRE(first.size() == 1);
  // MassTransit's error transport: the message goes to the error queue, then it is acked.
  f.broker.move_to_error_queue(error, first[0].message);
  REQUIRE(f.broker.ack(f.consumer, first[0].channel, first[0].delivery_tag).has_value());
  REQUIRE(f.broker.ready_messages() == 0);  // parked is not pending
  REQUIRE(f.pump().empty());                // nobody consumes an error queue
  REQUIRE(f.broker.parked().size() == 1);
  const std::vector<MessagePtr> moved = f.broker.redrive(error);
  REQUIRE(moved.size() == 1);
  REQUIRE(moved[0]->message_id == "m-1");  // same message id
  REQUIRE(f.broker.parked().empty());
  const auto again = f.pump();
  REQUIRE(again.size() == 1);
  REQUIRE(again[0].message->message_id == "m-1");
  REQUIRE_FALSE(again[0].redelivered);  // a new message to the broker
  REQUIRE(again[0].delivery_count == 0);
  REQUIRE(f.broker.parked_totals().at("account-service_error") == 1);
}

// ---- competing consumers (docs/contract.md §8.1) -------------------------------------------------------

namespace {

// The fixture's queue with a second consumer, as two instances of account-service have.
struct TwoConsumers : Fixture {
  size_t first = consumer;
  size_t second = broker.add_consumer("account-service#2", account_queue);

  void publish(int from, int to) {
    for (int i = from; i <= to; ++i) broker.publish(message("m-" + std::to_string(i)));
  }
};

// "m-1 -> 0, m-2 -> 1": which consumer each delivery went to, in dispatch order.
std::vector<std::pair<std::string, size_t>> routed(const std::vector<Delivery>& deliveries) {
  std::vector<std::pair<std::string, size_t>> out;
  for (const Delivery& delivery : deliveries) {
    out.emplace_back(delivery.message->message_id, delivery.consumer);
  }
  return out;
}

}  // namespace

TEST_CASE("two consumers on one queue take turns, in the order they were added", "[broker]") {
  TwoConsumers f;
  f.publish(1, 4);
  const auto deliveries = f.pump();
  REQUIRE(routed(deliveries) ==
          std::vector<std::pair<std::string, size_t>>{
              {"m-1", f.first}, {"m-2", f.second}, {"m-3", f.first}, {"m-4", f.second}});
  // Each consumer's channel numbers its own deliveries from 1.
  REQUIRE(deliveries[0].delivery_tag == 1);
  REQUIRE(deliveries[1].delivery_tag == 1);
  REQUIRE(deliveries[2].delivery_tag == 2);
  REQUIRE(deliveries[3].delivery_tag == 2);
}

TEST_CASE("the round-robin turn carries over from one pump to the next", "[broker]") {
  TwoConsumers f;
  std::vector<size_t> consumers;
  for (int i = 1; i <= 4; ++i) {
    f.publish(i, i);
    const auto deliveries = f.pump();
    REQUIRE(deliveries.size() == 1);
    consumers.push_back(deliveries[0].consumer);
    // Settle it, so that prefetch never decides who is next.
    REQUIRE(f.broker.ack(deliveries[0].consumer, deliveries[0].channel, deliveries[0].delivery_tag)
                .has_value());
  }
  REQUIRE(consumers == std::vector<size_t>{f.first, f.second, f.first, f.second});
}

TEST_CASE("a consumer whose prefetch is full loses its turn to one with room", "[broker]") {
  TwoConsumers f;  // prefetch 2
  f.publish(1, 3);
  auto deliveries = f.pump();
  REQUIRE(routed(deliveries) == std::vector<std::pair<std::string, size_t>>{
                                    {"m-1", f.first}, {"m-2", f.second}, {"m-3", f.first}});
  // The first consumer is full (m-1, m-3 unacked); the second settles m-2.
  REQUIRE(f.broker.ack(f.second, deliveries[1].channel, deliveries[1].delivery_tag).has_value());
  f.publish(4, 6);
  deliveries = f.pump();
  // m-4 is the second consumer's turn anyway; m-5 would be the first's, but it has no room.
  REQUIRE(routed(deliveries) ==
          std::vector<std::pair<std::string, size_t>>{{"m-4", f.second}, {"m-5", f.second}});
  REQUIRE(f.broker.ready_messages() == 1);  // m-6 waits: nobody has room
  REQUIRE(f.broker.unacked_messages() == 4);
}

TEST_CASE("a consumer whose connection is closed is skipped until it reconnects", "[broker]") {
  TwoConsumers f;
  f.publish(1, 1);
  auto deliveries = f.pump();
  REQUIRE(routed(deliveries) == std::vector<std::pair<std::string, size_t>>{{"m-1", f.first}});
  REQUIRE(f.broker.ack(f.first, deliveries[0].channel, deliveries[0].delivery_tag).has_value());

  f.broker.close_connection(f.second, 10, "heartbeat");
  f.publish(2, 3);
  deliveries = f.pump();
  // The second consumer's turn is skipped: both go to the first, prefetch permitting.
  REQUIRE(routed(deliveries) ==
          std::vector<std::pair<std::string, size_t>>{{"m-2", f.first}, {"m-3", f.first}});
  for (const Delivery& delivery : deliveries) {
    REQUIRE(f.broker.ack(delivery.consumer, delivery.channel, delivery.delivery_tag).has_value());
  }

  f.broker.open_connection(f.second);
  f.publish(4, 5);
  deliveries = f.pump();
  // A reconnected consumer registers anew, at the end of the line (RabbitMQ does the same:
  // tests/conformance/scripts/06-reconnect-joins-the-end-of-the-line.json).
  REQUIRE(routed(deliveries) ==
          std::vector<std::pair<std::string, size_t>>{{"m-4", f.first}, {"m-5", f.second}});
}

TEST_CASE("what a closed consumer had unacked goes to the other consumer, redelivered",
          "[broker]") {
  TwoConsumers f;
  f.publish(1, 2);
  const auto first = f.pump();
  REQUIRE(routed(first) ==
          std::vector<std::pair<std::string, size_t>>{{"m-1", f.first}, {"m-2", f.second}});
  f.broker.close_connection(f.first, 10, "heartbeat");
  const auto again = f.pump();
  REQUIRE(routed(again) == std::vector<std::pair<std::string, size_t>>{{"m-1", f.second}});
  REQUIRE(again[0].redelivered);
  REQUIRE(again[0].delivery_count == 1);
  // The closed consumer's late ack is void; the other consumer's ack settles the message.
  REQUIRE_FALSE(f.broker.ack(f.first, first[0].channel, first[0].delivery_tag).has_value());
  REQUIRE(f.broker.ack(f.second, again[0].channel, again[0].delivery_tag).has_value());
  REQUIRE(f.broker.ack(f.second, first[1].channel, first[1].delivery_tag).has_value());
  REQUIRE(f.broker.ready_messages() == 0);
  REQUIRE(f.broker.unacked_messages() == 0);
}

// ---- what the conformance scripts found (tests/conformance) ----------------------------------

namespace {

// Three consumers with a prefetch of one, each holding one delivery, settled in the order
// third, first, second; then three more messages. Returns who got them.
std::vector<std::pair<std::string, size_t>> after_settling_out_of_order(bool quorum) {
  Broker broker([](TraceEvent) {}, /*prefetch=*/1, /*delivery_limit=*/20, quorum);
  const size_t queue = broker.declare_queue("account-service", {"transfers.#"});
  const size_t first = broker.add_consumer("account-service#1", queue);
  const size_t second = broker.add_consumer("account-service#2", queue);
  const size_t third = broker.add_consumer("account-service#3", queue);
  for (int i = 1; i <= 3; ++i) broker.publish(message("m-" + std::to_string(i)));
  std::vector<Delivery> held;
  broker.pump(held);
  REQUIRE(routed(held) == std::vector<std::pair<std::string, size_t>>{
                              {"m-1", first}, {"m-2", second}, {"m-3", third}});
  for (const size_t index : {size_t{2}, size_t{0}, size_t{1}}) {
    REQUIRE(broker.ack(held[index].consumer, held[index].channel, held[index].delivery_tag));
  }
  for (int i = 4; i <= 6; ++i) broker.publish(message("m-" + std::to_string(i)));
  std::vector<Delivery> next;
  broker.pump(next);
  return routed(next);
}

}  // namespace

TEST_CASE("a quorum queue's consumers wait in line in the order they got room again",
          "[broker][conformance]") {
  // rabbit_fifo's service queue (script 04-quorum-consumers-line-up-by-room): the third consumer
  // settled first, so it is served first.
  REQUIRE(after_settling_out_of_order(/*quorum=*/true) ==
          std::vector<std::pair<std::string, size_t>>{{"m-4", 2}, {"m-5", 0}, {"m-6", 1}});
}

TEST_CASE("a classic queue's consumers keep their turns while no delivery finds them full",
          "[broker][conformance]") {
  // rabbit_queue_consumers (script 05-classic-consumers-keep-their-turns): nobody was found
  // full, so the rotation is the one of the first three deliveries.
  REQUIRE(after_settling_out_of_order(/*quorum=*/false) ==
          std::vector<std::pair<std::string, size_t>>{{"m-4", 0}, {"m-5", 1}, {"m-6", 2}});
}

namespace {

// One consumer holding m-1 .. m-3 (prefetch 3) nacks m-2, then m-1, then its connection
// closes with m-3 unacked. Returns the ids of the next three deliveries.
std::vector<std::string> redeliveries_after_returns(bool quorum) {
  Broker broker([](TraceEvent) {}, /*prefetch=*/3, /*delivery_limit=*/20, quorum);
  const size_t queue = broker.declare_queue("transfer-service", {"accounts.#"});
  const size_t consumer = broker.add_consumer("transfer-service", queue);
  for (int i = 1; i <= 4; ++i) {
    broker.publish(message("m-" + std::to_string(i), MessageType::account_debited));
  }
  std::vector<Delivery> out;
  broker.pump(out);
  REQUIRE(out.size() == 3);
  REQUIRE(broker.nack(consumer, out[1].channel, out[1].delivery_tag, 1));  // m-2
  std::vector<Delivery> after_m2;
  broker.pump(after_m2);  // m-2 comes straight back (the only room is the one it left)
  REQUIRE(after_m2.size() == 1);
  REQUIRE(broker.nack(consumer, out[0].channel, out[0].delivery_tag, 2));  // m-1
  std::vector<Delivery> after_m1;
  broker.pump(after_m1);
  REQUIRE(after_m1.size() == 1);
  broker.close_connection(consumer, 3, "crash");  // m-3, m-2, m-1 unacked, in that order
  broker.open_connection(consumer);
  std::vector<Delivery> again;
  broker.pump(again);
  std::vector<std::string> ids;
  for (const Delivery& delivery : again) ids.push_back(delivery.message->message_id);
  return ids;
}

}  // namespace

TEST_CASE("a quorum queue serves returned messages in the order they came back",
          "[broker][conformance]") {
  // rabbit_fifo's `returns` queue (script 11-quorum-returns-in-return-order): the closed
  // channel returns its deliveries in the order it received them.
  REQUIRE(redeliveries_after_returns(/*quorum=*/true) ==
          std::vector<std::string>{"m-3", "m-2", "m-1"});
}

TEST_CASE("a classic queue puts returned messages back at their original positions",
          "[broker][conformance]") {
  REQUIRE(redeliveries_after_returns(/*quorum=*/false) ==
          std::vector<std::string>{"m-1", "m-2", "m-3"});
}

TEST_CASE("a rejected delivery is dead-lettered with reason rejected, on either queue type",
          "[broker][conformance]") {
  for (const bool quorum : {true, false}) {
    std::vector<TraceEvent> events;
    Broker broker([&events](TraceEvent event) { events.push_back(std::move(event)); },
                  /*prefetch=*/1, /*delivery_limit=*/20, quorum);
    const size_t queue = broker.declare_queue("account-service", {"transfers.#"});
    const size_t consumer = broker.add_consumer("account-service", queue);
    broker.publish(message("m-1"));
    broker.publish(message("m-2"));
    std::vector<Delivery> out;
    broker.pump(out);
    REQUIRE(out.size() == 1);
    REQUIRE(broker.reject(consumer, out[0].channel, out[0].delivery_tag, 1));
    const std::vector<ParkedMessage> parked = broker.parked();
    REQUIRE(parked.size() == 1);
    REQUIRE(parked[0].message->message_id == "m-1");
    REQUIRE(parked[0].queue == "account-service.dlq");
    REQUIRE(parked[0].reason == "rejected");
    REQUIRE(events.back().kind == EventKind::dead_letter);
    std::vector<Delivery> next;
    broker.pump(next);  // the consumer has room again: m-2 comes
    REQUIRE(next.size() == 1);
    REQUIRE(next[0].message->message_id == "m-2");
  }
}

TEST_CASE("without a dead-letter exchange a quorum queue drops a message past its limit",
          "[broker][dead_letter]") {
  std::vector<TraceEvent> events;
  Broker broker{[&](TraceEvent event) { events.push_back(std::move(event)); }, /*prefetch=*/2,
                /*delivery_limit=*/3, /*quorum=*/true, /*dead_letter_exchange=*/false};
  const size_t queue = broker.declare_queue("account-service", {"transfers.#"});
  const size_t consumer = broker.add_consumer("account-service", queue);
  broker.publish(message("m-1"));
  // limit + 1 deliveries, every one nacked: the fourth return is past the limit.
  for (int delivery = 1; delivery <= 4; ++delivery) {
    std::vector<Delivery> out;
    broker.pump(out);
    REQUIRE(out.size() == 1);
    REQUIRE(out[0].delivery_count == delivery - 1);
    REQUIRE(broker.nack(consumer, out[0].channel, out[0].delivery_tag, 10).has_value());
  }
  std::vector<Delivery> out;
  broker.pump(out);
  REQUIRE(out.empty());
  REQUIRE(broker.ready_messages() == 0);
  REQUIRE(broker.parked().empty());  // no queue holds it: nothing for an operator to redrive
  REQUIRE(broker.parked_totals().empty());
  const auto dropped = std::count_if(events.begin(), events.end(), [](const TraceEvent& e) {
    return e.kind == EventKind::dropped && e.message_id == "m-1";
  });
  REQUIRE(dropped == 1);
  REQUIRE(std::none_of(events.begin(), events.end(),
                       [](const TraceEvent& e) { return e.kind == EventKind::dead_letter; }));
}

TEST_CASE("the consumer timeout falls on the first channel tick past the oldest delivery's limit",
          "[broker][consumer_timeout]") {
  Fixture f;
  f.broker.publish(message("m-1"));
  f.broker.publish(message("m-2"));
  std::vector<Delivery> first;
  f.broker.pump(first, 100);  // m-1 delivered at 100 ms
  REQUIRE(first.size() == 2);
  // Ticks every 300 ms from the channel's opening at 0: the first one after 100 + 1000 is 1200.
  auto due = f.broker.next_consumer_timeout(1000, 300);
  REQUIRE(due.has_value());
  REQUIRE(due->at_ms == 1200);
  REQUIRE(due->consumer == f.consumer);
  REQUIRE(due->delivery_tag == 1);
  REQUIRE(due->delivered_ms == 100);
  // A tick exactly at delivered + timeout does not close: the delivery must be older than that.
  REQUIRE(f.broker.next_consumer_timeout(1100, 100)->at_ms == 1300);
  // Acked, the oldest is the other delivery; closed and reopened at 1250, a delivery at 1300
  // times out at the reopened channel's own ticks: 1250 + 4 * 300.
  REQUIRE(f.broker.ack(f.consumer, first[0].channel, 1).has_value());
  REQUIRE(f.broker.next_consumer_timeout(1000, 300)->delivery_tag == 2);
  f.broker.close_connection(f.consumer, 1200, "consumer timeout");
  REQUIRE_FALSE(f.broker.next_consumer_timeout(1000, 300).has_value());  // nothing unacked
  f.broker.open_connection(f.consumer, 1250);
  std::vector<Delivery> again;
  f.broker.pump(again, 1300);
  REQUIRE(again.size() == 1);
  REQUIRE(again[0].redelivered);
  REQUIRE(f.broker.next_consumer_timeout(1000, 300)->at_ms == 2450);
}

namespace {

// A queue's messages as the views key them: (queue name, position) -> state, consumer, tag.
using Rows = std::map<std::pair<std::string, uint64_t>, std::string>;

std::string row_of(const QueueEntry& entry) {
  return std::string(entry.state) + " " + std::string(entry.consumer) + " " +
         std::to_string(entry.delivery_tag) + (entry.redelivered ? " redelivered" : "") + " " +
         std::to_string(entry.delivery_count);
}

Rows all_rows(const Broker& broker) {
  Rows rows;
  for (const QueueEntry& entry : broker.contents()) {
    rows[{std::string(entry.queue), entry.position}] = row_of(entry);
  }
  return rows;
}

// Applies the journal's notes to `rows`, looking each noted message up as the recorder does.
void apply_journal(Broker& broker, Rows& rows) {
  for (const auto& [queue, position] : broker.take_changed_entries()) {
    const std::pair<std::string, uint64_t> key{broker.queue_name(queue), position};
    if (const std::optional<QueueEntry> entry = broker.entry(queue, position)) {
      rows[key] = row_of(*entry);
    } else {
      rows.erase(key);
    }
  }
}

}  // namespace

// The HTML report's queue tables follow the broker through this journal instead of comparing
// every queue after every event (which made a 4,000-transfer report take minutes): whatever the
// broker does, the rows the journal yields must be the rows contents() shows.
TEST_CASE("the journal of changed queue entries yields what contents() shows", "[broker][views]") {
  for (const bool quorum : {true, false}) {
    std::vector<TraceEvent> events;
    Broker broker{[&](TraceEvent event) { events.push_back(std::move(event)); }, /*prefetch=*/2,
                  /*delivery_limit=*/1, quorum};
    const size_t queue = broker.declare_queue("account-service", {"transfers.#"});
    const size_t error = broker.declare_error_queue(queue);
    const size_t consumer = broker.add_consumer("account-service", queue);
    broker.keep_changed_entries();
    Rows rows;
    const auto same = [&](const char* after) {
      apply_journal(broker, rows);
      INFO((quorum ? "quorum, after " : "classic, after ") << after);
      REQUIRE(rows == all_rows(broker));
    };
    for (int i = 1; i <= 5; ++i) broker.publish(message("m-" + std::to_string(i)));
    same("five publishes");
    std::vector<Delivery> out;
    broker.pump(out);
    same("a pump");
    broker.ack(consumer, out[0].channel, out[0].delivery_tag);
    broker.nack(consumer, out[1].channel, out[1].delivery_tag, 0);
    same("an ack and a nack");
    out.clear();
    broker.pump(out);
    same("a second pump");
    broker.close_connection(consumer, 0, "test");
    same("a closed connection");
    broker.open_connection(consumer);
    out.clear();
    broker.pump(out);
    broker.move_to_error_queue(error, out[0].message);
    broker.ack(consumer, out[0].channel, out[0].delivery_tag);
    broker.reject(consumer, out[1].channel, out[1].delivery_tag, 0);
    same("an error queue move and a reject");
    broker.redrive(error);
    same("a redrive");
  }
}

TEST_CASE("an ack changes its queue only where its consumer had no room", "[broker][footprint]") {
  // The explorer's footprint (docs/model.md, "Reduction: sleep sets"): an ack that gives room
  // to a consumer that had none decides who gets the next message, so it touches the queue;
  // one with room changes only its consumer's unacked list (it reads the channel), and it and
  // a delivery to the same consumer leave one state in either order.
  for (const bool quorum : {true, false}) {
    INFO("quorum " << quorum);
    struct OneConsumer {
      explicit OneConsumer(bool quorum)
          : broker([](TraceEvent) {}, /*prefetch=*/2, /*delivery_limit=*/20, quorum) {}
      Broker broker;
      size_t queue = broker.declare_queue("account-service", {"transfers.#"});
      size_t consumer = broker.add_consumer("account-service", queue);
      Delivery deliver(const std::string& id) {
        broker.publish(message(id));
        std::vector<Delivery> out;
        broker.pump(out);
        REQUIRE(out.size() == 1);
        return out[0];
      }
      Fingerprint fingerprint() const {
        Hasher hasher;
        broker.fingerprint(hasher);
        return hasher.finish();
      }
    };
    OneConsumer ack_first(quorum);
    OneConsumer deliver_first(quorum);
    for (OneConsumer* bank : {&ack_first, &deliver_first}) {
      bank->deliver("m-1");  // one of two: room left
      bank->broker.take_touched();
    }
    const uint64_t queue_bit = uint64_t{1} << ack_first.queue;
    const uint64_t channel_bit = uint64_t{1} << ack_first.consumer;
    // With room, the ack reads its channel and leaves the queue alone.
    REQUIRE(ack_first.broker.ack(ack_first.consumer, 1, 1));
    BrokerTouches touched = ack_first.broker.take_touched();
    CHECK((touched.queues & queue_bit) == 0);
    CHECK((touched.channels_read & channel_bit) != 0);
    ack_first.deliver("m-2");
    // The delivery fills the consumer; the ack after it gives it room again, and touches.
    deliver_first.deliver("m-2");
    deliver_first.broker.take_touched();
    REQUIRE(deliver_first.broker.ack(deliver_first.consumer, 1, 1));
    touched = deliver_first.broker.take_touched();
    CHECK((touched.queues & queue_bit) != 0);
    CHECK(ack_first.fingerprint() == deliver_first.fingerprint());
  }
}
