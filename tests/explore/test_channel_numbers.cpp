// The broker's counters (a consumer's channel number and next delivery tag, the next message
// position) are left out of the state's fingerprint (World::fingerprint_channel, docs/model.md
// "When two states are one"): nothing reads their values, only whether a delivery's channel is
// the one still open and the order of the tags and positions.
// Leaving them out merges states, so the searches are smaller and find fewer final states; these
// tests show that every merged state had the same future: the search that keeps the numbers
// reaches the same final states, named without them, and breaks the same invariants.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "broker/rabbitmq/broker.h"
#include "fuzz/explore.h"
#include "services/host.h"
#include "support/explore.h"
#include "support/messages.h"
#include "support/scenarios.h"

namespace inboxsim {

using testing::broken_invariants;
using testing::library_scenario;
using testing::message;
using testing::with_faults;
namespace {

std::vector<Fingerprint> distinct(std::vector<Fingerprint> prints) {
  std::sort(prints.begin(), prints.end());
  prints.erase(std::unique(prints.begin(), prints.end()), prints.end());
  return prints;
}

// The search with and without the numbers, going on past violations. Returns the one without.
ExploreResult check_merges_only_equal_futures(const Scenario& scenario, ExploreSettings settings) {
  settings.keep_going = true;
  settings.dpor = true;
  ExploreSettings keeping = settings;
  keeping.keep_broker_counters = true;
  const ExploreResult kept = explore(scenario, keeping);
  ExploreResult merged = explore(scenario, settings);
  REQUIRE(kept.complete);
  REQUIRE(merged.complete);
  CHECK(distinct(kept.leaf_states) == merged.leaf_states);
  CHECK(broken_invariants(merged) == broken_invariants(kept));
  return merged;
}

Fingerprint fingerprint(const Broker& broker, bool counters) {
  Hasher hasher;
  broker.fingerprint(hasher);
  if (counters) broker.fingerprint_counters(hasher);
  return hasher.finish();
}

}  // namespace

TEST_CASE("channel numbers, next tags and next positions are not part of the broker's state",
          "[fingerprint]") {
  const auto make = [] {
    return Broker{[](TraceEvent) {}, /*prefetch=*/1, /*delivery_limit=*/20, /*quorum=*/true};
  };
  Broker fresh = make();
  const size_t queue = fresh.declare_queue("account-service", {"transfers.#"});
  const size_t consumer = fresh.add_consumer("account-service#1", queue);
  Broker used = make();
  used.declare_queue("account-service", {"transfers.#"});
  used.add_consumer("account-service#1", queue);
  // `used` delivered and acked one message on its first channel, reconnected, then did it
  // again on the second: empty queues, channel 2, next tag 2, next position 3. `fresh` did
  // nothing.
  for (int round = 0; round < 2; ++round) {
    used.publish(message("m-" + std::to_string(round)));
    std::vector<Delivery> out;
    used.pump(out);
    REQUIRE(out.size() == 1);
    REQUIRE(used.ack(consumer, out[0].channel, out[0].delivery_tag));
    if (round == 0) {
      used.close_connection(consumer, 0, "test");
      used.open_connection(consumer);
    }
  }
  CHECK(fingerprint(used, false) == fingerprint(fresh, false));
  CHECK(fingerprint(used, true) != fingerprint(fresh, true));
  // What a consumer holds unacked on its open channel, by tag, stays in.
  used.publish(message("m-2"));
  fresh.publish(message("m-2"));
  std::vector<Delivery> out;
  used.pump(out);
  CHECK(fingerprint(used, false) != fingerprint(fresh, false));
  fresh.pump(out);
  REQUIRE(out.size() == 2);
  CHECK(out[0].delivery_tag != out[1].delivery_tag);
  CHECK(fingerprint(used, false) != fingerprint(fresh, false));
}

TEST_CASE("leaving channel numbers out merges only equal futures: the rejected transfer",
          "[explore]") {
  ExploreSettings settings = with_faults(1, {});
  settings.fault_kinds = explorable_fault_kinds();
  const ExploreResult merged =
      check_merges_only_equal_futures(library_scenario("02-insufficient-funds.json"), settings);
  // 14 final states with the numbers in the state.
  CHECK(merged.leaf_states.size() == 4);
}

TEST_CASE("leaving channel numbers out merges only equal futures: a dropped connection",
          "[explore]") {
  const ExploreResult merged = check_merges_only_equal_futures(
      library_scenario("01-happy-path.json"), with_faults(1, {FaultKind::drop_connection}));
  CHECK(broken_invariants(merged).empty());
}

TEST_CASE("leaving channel numbers out merges only equal futures: a crash anywhere",
          "[.explore_long]") {
  const ExploreResult merged = check_merges_only_equal_futures(
      library_scenario("01-happy-path.json"), with_faults(1, {FaultKind::crash}));
  CHECK(broken_invariants(merged).empty());
  // Pinned: 23,531 states and 58 final states with the numbers in the state; 17,594 and 19
  // with every two mints and inserts ordered and final states told apart by their rowids and
  // ids; 13,368 with every ack ordered with its queue's deliveries.
  CHECK(merged.states == 12022);
  CHECK(merged.leaf_states.size() == 10);
}

}  // namespace inboxsim
