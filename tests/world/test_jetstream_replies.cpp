// JetStream's client replies besides ack, in a run (broker.kind = jetstream): +WPI before each
// step of a slow handler (consumer.in_progress) and a nak that asks for a delay
// (consumer.nak_delay_ms); both refused on RabbitMQ, which has neither.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "scenario/parse.h"
#include "scenario/runner.h"
#include "support/scenarios.h"

using namespace inboxsim;
using inboxsim::testing::events_with;
using inboxsim::testing::parse_error;
using inboxsim::testing::parse_ok;
using inboxsim::testing::run_traced;
using inboxsim::testing::text_of;

namespace {

const std::string kTransfer =
    R"({"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}}, )"
    R"({"run": {"until": "quiescent"}})";

// A story on JetStream: `config` is what its config object holds besides broker.kind.
std::string jetstream_text(const std::string& config, const std::string& steps) {
  return text_of(R"({"broker.kind": "jetstream", )" + config + "}", steps);
}

// Lesson 74's bank: a 2 s ack wait, two account-service instances, `work` ms a step.
std::string slow_bank(int64_t work, bool in_progress) {
  return jetstream_text(
      R"("broker.ack_wait_ms": 2000, "account.instances": 2, "consumer.work_ms": )" +
          std::to_string(work) +
          R"(, "account.database": "sqlserver", )"
          R"("consumer.in_progress": )" +
          (in_progress ? "true" : "false"),
      kTransfer);
}

// The longest silence of a consumer on the delivery of `message_id`: from its delivery, or its
// last +WPI, to the next +WPI or the ack.
int64_t longest_silence(const RunResult& result, const std::string& message_id) {
  std::optional<int64_t> last;
  int64_t longest = 0;
  for (const TraceEvent& event : result.events) {
    if (event.message_id != message_id) continue;
    if (event.kind == EventKind::deliver && !event.redelivered) last = event.time_ms;
    if ((event.kind == EventKind::in_progress || event.kind == EventKind::ack) && last) {
      longest = std::max(longest, event.time_ms - *last);
      last = event.time_ms;
    }
  }
  return longest;
}

std::optional<int64_t> first_time(const RunResult& result, EventKind kind,
                                  const std::string& type, bool redelivered) {
  for (const TraceEvent& event : result.events) {
    if (event.kind == kind && event.type == type && event.redelivered == redelivered) {
      return event.time_ms;
    }
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("jetstream: +WPI before each step keeps a slow handler's delivery, with no copy",
          "[jetstream]") {
  const RunResult without = run_traced(slow_bank(400, false));
  CHECK(events_with(without, EventKind::requeue, "no ack within the ack wait (2000 ms)") >= 1);
  CHECK(events_with(without, EventKind::in_progress, "") == 0);

  const RunResult with = run_traced(slow_bank(400, true));
  CHECK(with.passed);
  CHECK(with.violations.empty());
  CHECK(events_with(with, EventKind::requeue, "") == 0);
  CHECK(with.dedupe_hits.count(ServiceId::account) == 0);
  // A +WPI before every step that waited, each on the delivery it keeps.
  CHECK(events_with(with, EventKind::in_progress, "the ack wait (2000 ms) starts again") >= 8);
  for (const TraceEvent& event : with.events) {
    if (event.kind != EventKind::in_progress) continue;
    CHECK((event.service.starts_with("account-service#") ||
           event.service == "transfer-service"));
    CHECK(event.target == "broker");
    CHECK(event.delivery_tag > 0);
  }
  // The handler takes longer than the ack wait in all; no silence of it does.
  const std::optional<int64_t> delivered =
      first_time(with, EventKind::deliver, "Transfer.Requested", false);
  const std::optional<int64_t> acked = first_time(with, EventKind::ack, "Transfer.Requested", false);
  REQUIRE(delivered);
  REQUIRE(acked);
  CHECK(*acked - *delivered > 2000);
  CHECK(longest_silence(with, "m-1") < 2000);
}

TEST_CASE("jetstream: +WPI does not keep a delivery whose one step outlasts the ack wait",
          "[jetstream]") {
  const RunResult result = run_traced(slow_bank(2500, true));
  CHECK(events_with(result, EventKind::in_progress, "") >= 1);
  CHECK(events_with(result, EventKind::requeue, "no ack within the ack wait (2000 ms)") >= 1);
  CHECK(result.dedupe_hits.at(ServiceId::account) >= 1);  // the inbox still catches the copy
  CHECK(result.violations.empty());
}

TEST_CASE("jetstream: a nak with a delay is redelivered no sooner than the delay asks",
          "[jetstream]") {
  const std::string fault =
      R"({"fault": {"kind": "nack", "times": 1, "cause": "poison", "match": )"
      R"({"type": "Account.Debited", "transfer": "t1"}}}, )";
  for (const int64_t delay : {int64_t{0}, int64_t{3000}}) {
    CAPTURE(delay);
    const RunResult result = run_traced(
        jetstream_text(R"("consumer.nak_delay_ms": )" + std::to_string(delay), fault + kTransfer));
    CHECK(result.passed);
    const std::optional<int64_t> nakked = first_time(result, EventKind::nack, "Account.Debited", false);
    const std::optional<int64_t> again =
        first_time(result, EventKind::deliver, "Account.Debited", true);
    REQUIRE(nakked);
    REQUIRE(again);
    if (delay == 0) {
      CHECK(*again - *nakked < 100);
      CHECK(events_with(result, EventKind::requeue, "nakked: delivered again") == 1);
    } else {
      CHECK(*again - *nakked >= delay);
      CHECK(*again - *nakked < delay + 100);
      CHECK(events_with(result, EventKind::requeue,
                        "nakked with a delay of 3000 ms: delivered again") == 1);
    }
  }
}

TEST_CASE("jetstream: RabbitMQ refuses +WPI and a nak delay, with their pointers", "[jetstream]") {
  const std::string rabbitmq = R"({"accounts": {"alice": 10000, "bob": 0}, "config": {)";
  CHECK_THAT(parse_error(rabbitmq + R"("consumer.in_progress": true}, "steps": [)" + kTransfer +
                         "]}"),
             Catch::Contains("/config/consumer.in_progress"));
  CHECK_THAT(parse_error(rabbitmq + R"("consumer.nak_delay_ms": 500}, "steps": [)" + kTransfer +
                         "]}"),
             Catch::Contains("/config/consumer.nak_delay_ms"));
  // Their defaults written out are no change, and parse.
  parse_ok(rabbitmq + R"("consumer.in_progress": false, "consumer.nak_delay_ms": 0}, "steps": [)" +
           kTransfer + "]}");
}

TEST_CASE("jetstream: a handler terms a delivery made consumer.term_after times, and the server "
          "delivers it no more",
          "[jetstream]") {
  const std::string poison =
      R"({"fault": {"kind": "nack", "times": 10, "cause": "poison", "match": )"
      R"({"type": "Account.Debited", "transfer": "t1"}}}, )";
  const RunResult result =
      run_traced(jetstream_text(R"("consumer.term_after": 3)", poison + kTransfer));
  int64_t deliveries = 0;
  for (const TraceEvent& event : result.events) {
    if (event.kind == EventKind::deliver && event.type == "Account.Debited") ++deliveries;
  }
  CHECK(deliveries == 3);
  CHECK(events_with(result, EventKind::nack, "") == 2);
  CHECK(events_with(result, EventKind::term,
                    "delivered 3 times (consumer.term_after): given up, the server delivers it "
                    "no more") == 1);
  CHECK(events_with(result, EventKind::dropped, "") == 0);  // not MaxDeliver's drop
  bool terminated = true;
  for (const Violation& violation : result.violations) {
    if (violation.invariant == Invariant::termination) terminated = false;
  }
  CHECK_FALSE(terminated);  // the saga waits for an Account.Debited no one delivers
  CHECK_THAT(parse_error(R"({"accounts": {"alice": 1, "bob": 0}, "config": )"
                         R"({"consumer.term_after": 2}, "steps": []})"),
             Catch::Contains("/config/consumer.term_after"));
}

// Fuzz seed 1249 of the swarm, shrunk: both services die before any ack and come back 1 s
// later, when their deliveries' 1 s ack wait has just run out. The server's timer runs out
// with no client to pull (both are down) and the messages wait for the restarted ones.
TEST_CASE("an ack wait that runs out while every client is down redelivers after the restart",
          "[jetstream]") {
  const std::string steps =
      R"({"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}}, )"
      R"({"fault": {"kind": "crash", "service": "account-service", "at": "after_outbox_send", )"
      R"("match": {"transfer": "t1"}}}, )"
      R"({"fault": {"kind": "crash", "service": "transfer-service", "at": "after_effect", )"
      R"("match": {"transfer": "t1", "type": "Account.Debited"}}}, )"
      R"({"run": {"until": "quiescent"}})";
  const RunResult result = run_traced(jetstream_text(R"("broker.ack_wait_ms": 1000)", steps));
  for (const Violation& violation : result.violations) INFO(violation.detail);
  REQUIRE(result.violations.empty());
  REQUIRE(result.stats.crashes == 2);
  REQUIRE(result.transfers.at("t1") == SagaState::completed);
}
