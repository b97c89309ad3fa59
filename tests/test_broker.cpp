// The fake broker must behave like RabbitMQ where the inbox pattern depends on it: routing,
// delivery tags, the redelivered flag, x-delivery-count, prefetch, requeue on connection close,
// and dead-lettering past the delivery limit.
#include <catch2/catch.hpp>

#include "broker/broker.h"
#include "services/host.h"

using namespace inboxsim;

namespace {

MessagePtr message(const std::string& id, MessageType type = MessageType::transfer_requested) {
  return make_message(id, type, "t1", "alice", "bob", 100, "", 0);
}

struct Fixture {
  std::vector<TraceEvent> events;
  Broker broker{[this](TraceEvent event) { events.push_back(std::move(event)); }, /*prefetch=*/2,
                /*delivery_limit=*/3};
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

TEST_CASE("prefetch bounds unacked deliveries; tags increase per channel", "[broker]") {
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

TEST_CASE("a nack requeues near the original position; past the limit it is dead-lettered",
          "[broker]") {
  Fixture f;
  f.broker.publish(message("m-1"));
  f.broker.publish(message("m-2"));
  for (int attempt = 1; attempt <= 3; ++attempt) {
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
  REQUIRE(f.broker.dead_letters().size() == 1);
  REQUIRE(f.broker.dead_letters()[0].message->message_id == "m-1");
  REQUIRE(f.broker.dead_letters()[0].reason == "delivery_limit");
  REQUIRE(f.events.back().kind == EventKind::dead_letter);
  REQUIRE(f.broker.idle());
}
