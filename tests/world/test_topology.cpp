// The topology's one home (domain/topology.h): the queues the world declares are the ones a
// scenario's redrive may name, and each one the parser accepts exists in the run. And the same
// topology on JetStream (broker.kind = jetstream): redelivery by ack wait with no fault, the
// late ack, MaxDeliver, the dedupe window's edge, and the keys and steps it refuses.
#include <algorithm>
#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/jetstream/jetstream_broker.h"
#include "domain/config.h"
#include "domain/topology.h"
#include "scenario/parse.h"
#include "scenario/runner.h"
#include "services/host.h"
#include "support/scenarios.h"

using namespace inboxsim;
using inboxsim::testing::events_with;
using inboxsim::testing::parse_error;
using inboxsim::testing::parse_ok;
using inboxsim::testing::run_traced;
using inboxsim::testing::text_of;

namespace {

int64_t events_with_detail(const std::vector<TraceEvent>& events, const std::string& part) {
  return std::count_if(events.begin(), events.end(), [&](const TraceEvent& event) {
    return event.detail.find(part) != std::string::npos;
  });
}

}  // namespace

TEST_CASE("topology: every queue a redrive may name exists in the run, with and without "
          "notifications",
          "[topology]") {
  for (const bool notifications : {false, true}) {
    CAPTURE(notifications);
    Config config;
    config.transfer_notifications = notifications;
    const std::vector<std::string> queues = redrivable_queues(config);
    CHECK(queues.size() == (notifications ? 4u : 3u));
    CHECK(queues.front() == "account-service_error");
    std::string steps = R"({"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 10}})";
    for (const std::string& queue : queues) steps += R"(, {"redrive": ")" + queue + R"("})";
    const std::string text = R"({"accounts": {"alice": 100, "bob": 0}, "config": )"
                             R"({"transfer.notifications": )" +
                             std::string(notifications ? "true" : "false") + R"(}, "steps": [)" +
                             steps + "]}";
    const RunResult result = run_scenario(parse_ok(text), RunOptions{});
    size_t redrives = 0;
    for (const TraceEvent& event : result.events) {
      CHECK(event.detail.find("does not exist in this configuration") == std::string::npos);
      if (event.kind == EventKind::step && event.detail.find("redrive") != std::string::npos) {
        ++redrives;
      }
    }
    CHECK(redrives == queues.size());
  }
}

TEST_CASE("topology: a queue's error and dead-letter queues are named after it", "[topology]") {
  CHECK(error_queue_name("account-service") == "account-service_error");
  CHECK(dead_letter_queue_name("transfer-service.notifications") ==
        "transfer-service.notifications.dlq");
  Config config;
  CHECK(declared_queues(config).size() == 2);
  config.transfer_notifications = true;
  CHECK(declared_queues(config).back()->name == "transfer-service.notifications");
}

// ---- The topology on JetStream (broker.kind = jetstream, broker/jetstream/jetstream_broker.h)
// -------------

namespace {

MessagePtr requested(const std::string& id) {
  return make_message(id, MessageType::transfer_requested, "t1", "alice", "bob", 100, "", 0);
}

// account-service's queue on TRANSFERS, with two clients (two instances).
struct TwoClients {
  std::vector<TraceEvent> events;
  JetStreamBroker broker{[this](TraceEvent event) { events.push_back(std::move(event)); },
                         JetStreamWorldConfig{16, 1'000, -1, 5'000}};
  size_t queue = broker.declare_queue("account-service", {"transfers.#"});
  size_t first = broker.add_consumer("account-service#1", queue);
  size_t second = broker.add_consumer("account-service#2", queue);

  std::vector<Delivery> pump(int64_t now_ms) {
    std::vector<Delivery> out;
    broker.pump(out, now_ms);
    return out;
  }
};

const std::string kTransfer =
    R"({"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}}, )"
    R"({"run": {"until": "quiescent"}})";

}  // namespace

TEST_CASE("jetstream: an unacked delivery goes to the next client when its ack wait runs out, "
          "and the first holder's late ack settles it for both",
          "[topology][jetstream]") {
  TwoClients js;
  CHECK(js.broker.publish(requested("m-1"), 0) == 1);
  const std::vector<Delivery> first = js.pump(0);
  REQUIRE(first.size() == 1);
  CHECK(first[0].consumer == js.first);
  CHECK(first[0].delivery_count == 0);  // deliveries before this one
  CHECK_FALSE(first[0].redelivered);
  CHECK(js.pump(999).empty());
  REQUIRE(js.broker.next_due_ms() == std::optional<int64_t>(1'000));
  // At the ack wait the next client to pull gets it, the first still holding its copy.
  const std::vector<Delivery> again = js.pump(1'000);
  REQUIRE(again.size() == 1);
  CHECK(again[0].consumer == js.second);
  CHECK(again[0].redelivered);
  CHECK(again[0].delivery_count == 1);
  CHECK(events_with_detail(js.events, "no ack within the ack wait (1000 ms)") == 1);
  // The late ack of the first copy settles the message: nothing is pending, no timer is due.
  REQUIRE(js.broker.ack(first[0].consumer, first[0].channel, first[0].delivery_tag, 1'500));
  CHECK(js.broker.unacked_messages() == 0);
  CHECK_FALSE(js.broker.next_due_ms().has_value());
  CHECK(js.pump(10'000).empty());
  // The second copy's ack succeeds too, and changes nothing.
  CHECK(js.broker.ack(again[0].consumer, again[0].channel, again[0].delivery_tag, 10'100));
  CHECK(js.broker.unacked_messages() == 0);
}

TEST_CASE("jetstream: a closed connection leaves its deliveries pending until the ack wait",
          "[topology][jetstream]") {
  TwoClients js;
  js.broker.publish(requested("m-1"), 0);
  const std::vector<Delivery> first = js.pump(0);
  REQUIRE(first.size() == 1);
  js.broker.close_connection(js.first, 10, "crash");
  CHECK_FALSE(js.broker.channel_open(first[0].consumer, first[0].channel));
  CHECK_FALSE(js.broker.ack(first[0].consumer, first[0].channel, first[0].delivery_tag, 20));
  CHECK(js.pump(20).empty());  // nothing came back at the close
  CHECK(js.broker.unacked_messages() == 1);
  const std::vector<Delivery> again = js.pump(1'000);
  REQUIRE(again.size() == 1);
  CHECK(again[0].consumer == js.second);
}

TEST_CASE("jetstream: the dedupe window drops a re-publication inside it, to the millisecond, "
          "and stores one at its edge",
          "[topology][jetstream]") {
  TwoClients js;  // a 5000 ms window
  CHECK(js.broker.publish(requested("m-1"), 1'000) == 1);
  CHECK(js.broker.publish(requested("m-1"), 5'999) == 0);
  CHECK(events_with_detail(js.events, "inside the stream's 5000 ms Duplicates window") == 1);
  CHECK(js.broker.publish(requested("m-1"), 6'000) == 1);  // forgotten at first + window
  CHECK(js.broker.ready_messages() == 2);
}

TEST_CASE("jetstream: a slow handler gets a duplicate by ack wait with no fault, and the run "
          "stays correct",
          "[topology][jetstream]") {
  const RunResult result = run_traced(text_of(
      R"({"broker.kind": "jetstream", "broker.ack_wait_ms": 2000, "account.instances": 2,)"
      R"( "consumer.work_ms": "400..400", "account.database": "sqlserver"})",
      kTransfer));
  CHECK(result.passed);
  CHECK(result.violations.empty());
  CHECK(events_with(result, EventKind::requeue, "no ack within the ack wait (2000 ms)") >= 1);
  CHECK(events_with(result, EventKind::crash, "") == 0);
  CHECK(events_with(result, EventKind::connection_closed, "") == 0);
  CHECK(events_with(result, EventKind::ack_lost, "") == 0);
  int64_t copies = 0;
  for (const TraceEvent& event : result.events) {
    if (event.kind == EventKind::deliver && event.message_id == "m-1") {
      CHECK(event.delivery_count <= 1);  // the late ack settled it: no third delivery
      copies += event.redelivered ? 1 : 0;
    }
  }
  CHECK(copies == 1);
  CHECK(result.dedupe_hits.at(ServiceId::account) >= 1);
}

TEST_CASE("jetstream: past MaxDeliver a nakked message is delivered no more, with no "
          "dead-letter queue",
          "[topology][jetstream]") {
  const RunResult result = run_traced(text_of(
      R"({"broker.kind": "jetstream", "broker.max_deliver": 3})",
      R"({"fault": {"kind": "nack", "times": 10, "cause": "poison", "match": )"
      R"({"type": "Account.Debited", "transfer": "t1"}}}, )" +
          kTransfer));
  CHECK(events_with(result, EventKind::deliver, "") >= 3);
  CHECK(events_with(result, EventKind::dropped, "MaxDeliver 3") == 1);
  int64_t deliveries = 0;
  for (const TraceEvent& event : result.events) {
    if (event.kind == EventKind::deliver && event.type == "Account.Debited") ++deliveries;
  }
  CHECK(deliveries == 3);
  CHECK(result.dead_letter_queues.empty());
  bool terminated = true;
  for (const Violation& violation : result.violations) {
    if (violation.invariant == Invariant::termination) terminated = false;
  }
  CHECK_FALSE(terminated);  // the saga waits for an Account.Debited no one delivers
}

TEST_CASE("jetstream: RabbitMQ's keys, JetStream's keys on RabbitMQ and the default exchange "
          "are refused with their pointer",
          "[topology][jetstream]") {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {R"("broker.kind": "jetstream", "broker.queue_type": "classic")", "/config/broker.queue_type"},
      {R"("broker.kind": "jetstream", "broker.delivery_limit": 5)", "/config/broker.delivery_limit"},
      {R"("broker.kind": "jetstream", "broker.dead_letter": "dlx")", "/config/broker.dead_letter"},
      {R"("broker.kind": "jetstream", "broker.consumer_timeout_ms": 0)",
       "/config/broker.consumer_timeout_ms"},
      {R"("broker.kind": "jetstream", "broker.heartbeat_ms": 0)", "/config/broker.heartbeat_ms"},
      {R"("broker.ack_wait_ms": 5000)", "/config/broker.ack_wait_ms"},
      {R"("broker.max_deliver": 3)", "/config/broker.max_deliver"},
      {R"("broker.dedupe_window_ms": 1000)", "/config/broker.dedupe_window_ms"},
  };
  for (const auto& [config, pointer] : refused) {
    INFO(config);
    CHECK_THAT(parse_error(text_of("{" + config + "}", kTransfer)), Catch::Contains(pointer));
  }
  CHECK_THAT(parse_error(text_of(R"({"broker.kind": "jetstream"})",
                                 kTransfer +
                                     R"(, {"publish": {"exchange": "", "routing_key": )"
                                     R"("account-service", "message_id": "m-9", "body": {"type": )"
                                     R"("Transfer.Requested", "transferId": "t1", "payload": )"
                                     R"({"from": "alice", "to": "bob", "amount": 1}}}})")),
             Catch::Contains("/steps/2/publish/exchange"));
  CHECK_THAT(parse_error(text_of(R"({"broker.kind": "jetstream"})",
                                 R"({"redrive": "account-service.dlq"})")),
             Catch::Contains("/steps/0/redrive"));
  // Their defaults written out are no change, and parse.
  parse_ok(text_of(R"({"broker.kind": "jetstream", "broker.heartbeat_ms": 60000})", kTransfer));
  // The explorer, the exhaustive matrix and the playground's proof take a jetstream story (an
  // ack wait running out is one of their choices); work time they still refuse.
  CHECK_FALSE(
      clockless_refusal(parse_ok(text_of(R"({"broker.kind": "jetstream"})", kTransfer)))
          .has_value());
  const std::optional<Refusal> refusal = clockless_refusal(parse_ok(
      text_of(R"({"broker.kind": "jetstream", "consumer.work_ms": "400..400"})", kTransfer)));
  REQUIRE(refusal.has_value());
  CHECK(refusal->pointer == "/config/consumer.work_ms");
}
