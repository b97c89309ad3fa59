// `inboxsim explore` on broker.kind = jetstream (docs/model.md, "Exploration"): an ack wait
// running out is a choice among the pending events, bounded by ExploreSettings::
// ack_wait_expiries, and the JetStream broker's fingerprint tells apart what it can redeliver.
#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "broker/jetstream/jetstream_broker.h"
#include "fuzz/explore.h"
#include "report/explore_view.h"
#include "scenario/runner.h"
#include "services/host.h"
#include "support/scenarios.h"

namespace inboxsim {

namespace {

// One transfer, two account-service instances, on JetStream; `config` adds keys, `alice` her
// opening balance (1000: the transfer of 2500 is rejected; 10000: it completes).
Scenario jetstream_story(int64_t alice, const std::string& config = "") {
  const bool rejected = alice < 2500;
  const std::string text =
      R"({"name": "js", "seed": 1, "config": {"broker.kind": "jetstream", "account.instances": 2)" +
      config + R"(}, "accounts": {"alice": )" + std::to_string(alice) +
      R"(, "bob": 0}, "steps": [{"transfer": {"id": "t1", "from": "alice", "to": "bob", )"
      R"("amount": 2500}}, {"run": {"until": "quiescent"}}], "expect": {"transfers": {"t1": ")" +
      std::string(rejected ? "REJECTED" : "COMPLETED") + R"("}}})";
  return testing::parse_ok(text);
}

ExploreSettings expiries(int64_t budget, int64_t jobs = 1) {
  ExploreSettings settings;
  settings.faults = 0;
  settings.ack_wait_expiries = budget;
  settings.jobs = jobs;
  settings.max_states = 200'000;
  return settings;
}

}  // namespace

TEST_CASE("a jetstream story is explored, with ack wait expiries as choices", "[explore]") {
  const Scenario story = jetstream_story(1000);
  CHECK_FALSE(clockless_refusal(story).has_value());
  const ExploreResult none = explore(story, expiries(0));
  const ExploreResult one = explore(story, expiries(1));
  REQUIRE(none.complete);
  REQUIRE(one.complete);
  CHECK(none.counterexamples.empty());
  CHECK(one.counterexamples.empty());
  // The claim names its bound; persistent sets are off on JetStream.
  CHECK(none.ack_wait_expiries == 0);
  CHECK(one.ack_wait_expiries == 1);
  CHECK_FALSE(one.persistent_sets);
  // Measured (machine-independent): an expiry anywhere adds the orders where account-service
  // handles Transfer.Requested twice, on one instance or on both (66 and 4,000 with a row
  // lock's grant and the step after it as two events).
  CHECK(none.states == 46);
  CHECK(none.leaves == 1);
  CHECK(one.states == 1928);
  CHECK(one.leaves == 4);
  CHECK(std::includes(one.leaf_states.begin(), one.leaf_states.end(), none.leaf_states.begin(),
                      none.leaf_states.end()));
  // A story on RabbitMQ has no ack wait to bound, whatever the settings say.
  Scenario rabbit = story;
  rabbit.config.broker_kind = BrokerKind::rabbitmq;
  CHECK(explore(rabbit, expiries(1)).ack_wait_expiries == -1);
}

TEST_CASE("on jetstream, a crashed holder's lease runs out once nothing else can happen",
          "[explore]") {
  // A crash leaves its delivery pending on the consumer (a pull consumer's leases are the
  // server's). With no expiry left in the budget, the wait still runs out when nothing else
  // is pending, and the message is delivered again: every order settles.
  ExploreSettings crash = expiries(0);
  crash.faults = 1;
  crash.fault_kinds[static_cast<size_t>(FaultKind::crash)] = true;
  const ExploreResult result = explore(jetstream_story(1000), crash);
  REQUIRE(result.complete);
  CHECK(result.counterexamples.empty());
  CHECK(result.states == 383);  // 547 with a lock's grant and the next step apart
  CHECK(result.leaves == 5);
}

TEST_CASE("a jetstream exploration says its bound of ack wait expiries", "[explore]") {
  const ExploreResult one = explore(jetstream_story(1000), expiries(1));
  std::ostringstream out;
  print_explore(out, one);
  CHECK_THAT(out.str(), Catch::Contains("PROVEN: no order of this story with at most 1 "
                                        "ack-wait expiry and 0 fault(s)"));
  CHECK(explore_json(one)["ack_wait_expiries"] == 1);
}

// Two searches of about 4,000 states (5 s of one core, more under load): with the long explorer
// tests.
TEST_CASE("a jetstream exploration is the same search with any number of jobs",
          "[.explore_long]") {
  const Scenario story = jetstream_story(1000);
  const ExploreResult one = explore(story, expiries(1, 1));
  const ExploreResult two = explore(story, expiries(1, 2));
  CHECK(one.states == two.states);
  CHECK(one.transitions == two.transitions);
  CHECK(one.revisits == two.revisits);
  CHECK(one.leaf_states == two.leaf_states);
}

// Three searches of one story, the one without reductions the longest: about 10 s of one core,
// so it runs with the long explorer tests.
TEST_CASE("on jetstream, sleep sets lose no final state of every order", "[.explore_long]") {
  const Scenario story = jetstream_story(1000);
  ExploreSettings every_event = expiries(1);
  every_event.sleep_sets = false;
  every_event.persistent_sets = false;
  const ExploreResult reduced = explore(story, expiries(1));
  const ExploreResult full = explore(story, every_event);
  REQUIRE(reduced.complete);
  REQUIRE(full.complete);
  CHECK(reduced.states == full.states);
  CHECK(reduced.leaf_states == full.leaf_states);
  CHECK(reduced.transitions <= full.transitions);
  ExploreSettings dpor = expiries(1);
  dpor.dpor = true;
  const ExploreResult by_dpor = explore(story, dpor);
  REQUIRE(by_dpor.complete);
  CHECK(by_dpor.leaf_states == full.leaf_states);
}

TEST_CASE("without the inbox, an ack wait expiry debits twice, and run replays it", "[explore]") {
  // account.ledger_unique off too: with it, the ledger key alone refuses the second debit.
  const Scenario story =
      jetstream_story(10000, R"(, "account.inbox": "none", "account.ledger_unique": false)");
  const ExploreResult found = explore(story, expiries(1));
  const auto cx = std::find_if(
      found.counterexamples.begin(), found.counterexamples.end(),
      [](const ExploreCounterexample& c) { return c.invariant == Invariant::single_effect; });
  REQUIRE(cx != found.counterexamples.end());
  CHECK(cx->choices == 5);
  REQUIRE(cx->scenario.schedule.has_value());
  CHECK(cx->scenario.schedule->ack_wait_expiries == 1);
  const RunResult replayed = testing::replay_written(cx->scenario);
  CHECK(std::any_of(replayed.violations.begin(), replayed.violations.end(),
                    [](const Violation& v) { return v.invariant == Invariant::single_effect; }));
  CHECK(testing::debits_of(replayed, "t1") == 2);
  // The same counterexample with two jobs.
  const ExploreResult two = explore(story, expiries(1, 2));
  REQUIRE(two.counterexamples.size() == found.counterexamples.size());
  for (size_t i = 0; i < two.counterexamples.size(); ++i) {
    CHECK(two.counterexamples[i].invariant == found.counterexamples[i].invariant);
    CHECK(two.counterexamples[i].scenario.schedule->choices ==
          found.counterexamples[i].scenario.schedule->choices);
  }
  CHECK(two.states == found.states);
  // With no expiry, no order redelivers, and none breaks.
  const ExploreResult without = explore(story, expiries(0));
  CHECK(without.complete);
  CHECK(without.counterexamples.empty());
}

TEST_CASE("the jetstream fingerprint tells apart what is pending from what is due again",
          "[explore]") {
  const auto fingerprint_of = [](const JetStreamBroker& broker) {
    Hasher hasher;
    broker.fingerprint(hasher);
    return hasher.finish();
  };
  const auto world = [](JetStreamBroker& broker, int messages) {
    const size_t queue = broker.declare_queue("account-service", {"transfers.#"});
    broker.add_consumer("account-service#1", queue);
    for (int i = 1; i <= messages; ++i) {
      broker.publish(make_message("m-" + std::to_string(i), MessageType::transfer_requested,
                                  "t" + std::to_string(i), "alice", "bob", 100, "", 0),
                     0);
    }
    std::vector<Delivery> out;
    broker.pump(out, 0);
    return queue;
  };
  const auto ignore = [](TraceEvent) {};
  JetStreamBroker pending{ignore, JetStreamWorldConfig{}};
  JetStreamBroker expired{ignore, JetStreamWorldConfig{}};
  const size_t queue = world(pending, 2);
  world(expired, 2);
  REQUIRE(fingerprint_of(pending) == fingerprint_of(expired));
  REQUIRE(expired.ack_wait_may_expire(queue));
  // The oldest delivery (m-1) runs out: queued for redelivery, its client still holds it.
  expired.expire_ack_wait(queue, 0);
  CHECK(fingerprint_of(pending) != fingerprint_of(expired));
  // Which one runs out is state too: m-1 first, then m-2, is not m-2 alone.
  JetStreamBroker both{ignore, JetStreamWorldConfig{}};
  world(both, 2);
  both.expire_ack_wait(queue, 0);
  CHECK(both.ack_wait_may_expire(queue));
  both.expire_ack_wait(queue, 0);
  CHECK_FALSE(both.ack_wait_may_expire(queue));
  CHECK(fingerprint_of(both) != fingerprint_of(expired));
}

TEST_CASE("the oldest ack wait runs out first, an in_progress making a delivery young again",
          "[explore]") {
  const auto model = [](bool touch_first, std::vector<JetStreamDelivery>& got) {
    JetStream js;
    std::string error;
    const size_t stream = *js.add_stream({"TRANSFERS", {"transfers.>"}, 5'000}, error);
    JetStreamConsumerConfig config;
    config.durable = "account";
    const size_t consumer = *js.add_consumer(stream, config, error);
    for (int i = 1; i <= 2; ++i) {
      js.publish("transfers.transfer.requested",
                 make_message("m-" + std::to_string(i), MessageType::transfer_requested, "t1",
                              "alice", "bob", 100, "", 0),
                 "m-" + std::to_string(i), 0);
    }
    got = js.fetch(consumer, 2, 0);
    if (touch_first) js.in_progress(got[0], 0);
    return js;
  };
  const auto fingerprint_of = [](const JetStream& js) {
    Hasher hasher;
    js.fingerprint(hasher);
    return hasher.finish();
  };
  std::vector<JetStreamDelivery> got;
  JetStream plain = model(false, got);
  JetStream touched = model(true, got);
  REQUIRE(got.size() == 2);
  // The same deliveries pending, in another order of their AckWaits.
  CHECK(fingerprint_of(plain) != fingerprint_of(touched));
  CHECK(plain.expire_oldest(0, 0) == got[0].stream_sequence);
  CHECK(touched.expire_oldest(0, 0) == got[1].stream_sequence);
  // Each then takes the other: the same state by two paths.
  CHECK(plain.expire_oldest(0, 0) == got[1].stream_sequence);
  CHECK(touched.expire_oldest(0, 0) == got[0].stream_sequence);
  CHECK_FALSE(plain.ack_wait_may_expire(0));
  // The redelivery queue's order differs (m-1 then m-2, against m-2 then m-1).
  CHECK(fingerprint_of(plain) != fingerprint_of(touched));
}

}  // namespace inboxsim
