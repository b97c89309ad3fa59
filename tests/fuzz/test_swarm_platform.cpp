// What a swarm campaign runs on: both brokers and every inbox that is a correct bank's, drawn
// per seed; the keys a campaign pins stay as set; and a JetStream seed's counterexample is a
// scenario file that `inboxsim run` plays to the same violation.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>

#include "fuzz/campaign.h"
#include "fuzz/generator.h"
#include "fuzz/shrink.h"
#include "scenario/parse.h"
#include "scenario/runner.h"
#include "scenario/write.h"

using namespace inboxsim;

namespace {

Config drawn_config(uint64_t seed, const GeneratorOptions& options) {
  return generate_scenario(seed, options).scenario.config;
}

}  // namespace

TEST_CASE("the swarm reaches both brokers and every defending inbox within 60 seeds",
          "[fuzz][swarm]") {
  GeneratorOptions options;
  options.swarm = true;
  std::set<BrokerKind> brokers;
  std::set<AccountInbox> inboxes;
  std::set<int64_t> ack_waits;
  std::set<int64_t> windows;
  std::set<bool> in_progress;
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const Scenario scenario = generate_scenario(seed, options).scenario;
    const Config& config = scenario.config;
    CAPTURE(seed);
    brokers.insert(config.broker_kind);
    inboxes.insert(config.account_inbox);
    REQUIRE(account_inbox_kind(config.account_inbox).is_a_defence);
    // Every story is one the parser takes: no RabbitMQ key set on JetStream.
    REQUIRE_FALSE(broker_refusal(scenario).has_value());
    const ParseResult parsed = parse_scenario_text(scenario_to_json(scenario).dump(), "s.json");
    REQUIRE(parsed.scenario.has_value());
    if (config.broker_kind != BrokerKind::jetstream) continue;
    ack_waits.insert(config.broker_ack_wait_ms);
    windows.insert(config.broker_dedupe_window_ms);
    in_progress.insert(config.consumer_in_progress);
    // Given up messages never settle: the swarm leaves MaxDeliver and +TERM off.
    REQUIRE(config.broker_max_deliver == Config{}.broker_max_deliver);
    REQUIRE(config.consumer_term_after == 0);
  }
  REQUIRE(brokers.size() == 2);
  REQUIRE(inboxes == std::set<AccountInbox>{AccountInbox::masstransit, AccountInbox::marten,
                                            AccountInbox::wolverine});
  REQUIRE(ack_waits.size() >= 3);
  REQUIRE(windows.size() >= 2);
  REQUIRE(in_progress.size() == 2);
}

TEST_CASE("the swarm leaves alone the broker and inbox keys a campaign pins", "[fuzz][swarm]") {
  GeneratorOptions options;
  options.swarm = true;
  SECTION("a pinned inbox stays") {
    options.config.account_inbox = AccountInbox::none;
    options.pinned_keys = {"account.inbox"};
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      REQUIRE(drawn_config(seed, options).account_inbox == AccountInbox::none);
    }
  }
  SECTION("a pinned RabbitMQ key keeps RabbitMQ, and its value") {
    options.config.broker_heartbeat_ms = 0;
    options.pinned_keys = {"broker.heartbeat_ms"};
    options.draw_heartbeat = false;
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      const Config config = drawn_config(seed, options);
      REQUIRE(config.broker_kind == BrokerKind::rabbitmq);
      REQUIRE(config.broker_heartbeat_ms == 0);
    }
  }
  SECTION("a pinned JetStream key stays on every seed, JetStream's other keys are drawn") {
    options.config.broker_kind = BrokerKind::jetstream;
    options.config.broker_ack_wait_ms = 777;
    options.pinned_keys = {"broker.kind", "broker.ack_wait_ms"};
    std::set<int64_t> windows;
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      const Config config = drawn_config(seed, options);
      REQUIRE(config.broker_kind == BrokerKind::jetstream);
      REQUIRE(config.broker_ack_wait_ms == 777);
      windows.insert(config.broker_dedupe_window_ms);
    }
    REQUIRE(windows.size() >= 2);
  }
  SECTION("a pinned key of one inbox draws only the inboxes that have it") {
    options.pinned_keys = {"account.durability_poll_ms"};
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      REQUIRE(drawn_config(seed, options).account_inbox == AccountInbox::wolverine);
    }
    options.pinned_keys = {"account.keep_after_handling_ms"};
    std::set<AccountInbox> inboxes;
    for (uint64_t seed = 1; seed <= 40; ++seed)
      inboxes.insert(drawn_config(seed, options).account_inbox);
    REQUIRE(inboxes == std::set<AccountInbox>{AccountInbox::marten, AccountInbox::wolverine});
  }
}

TEST_CASE("a RabbitMQ seed with the default inbox tells the story it told before the draw",
          "[fuzz][swarm]") {
  // The broker and the inbox come from a generator of their own: pinning both to what such a
  // seed drew changes nothing else in it.
  GeneratorOptions swarm;
  swarm.swarm = true;
  GeneratorOptions pinned = swarm;
  pinned.pinned_keys = {"broker.kind", "account.inbox"};
  int64_t compared = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const Scenario drawn = generate_scenario(seed, swarm).scenario;
    if (drawn.config.broker_kind != BrokerKind::rabbitmq ||
        drawn.config.account_inbox != AccountInbox::masstransit) {
      continue;
    }
    ++compared;
    REQUIRE(scenario_to_json(drawn).dump() ==
            scenario_to_json(generate_scenario(seed, pinned).scenario).dump());
  }
  REQUIRE(compared >= 5);
}

// A broken bank: Wolverine's inbox without the ledger key, on JetStream seeds of
// the swarm. Its counterexample, written as a file, replays to the same violation.
TEST_CASE("a JetStream swarm seed's counterexample replays with inboxsim run", "[fuzz][swarm]") {
  GeneratorOptions generator;
  generator.swarm = true;
  generator.config.account_inbox = AccountInbox::wolverine;
  generator.config.account_ledger_unique = false;
  generator.pinned_keys = {"account.inbox", "account.ledger_unique"};
  std::vector<uint64_t> jetstream_seeds;
  for (uint64_t seed = 1; jetstream_seeds.size() < 60 && seed <= 1000; ++seed) {
    if (drawn_config(seed, generator).broker_kind == BrokerKind::jetstream) {
      jetstream_seeds.push_back(seed);
    }
  }
  REQUIRE(jetstream_seeds.size() == 60);
  std::optional<Counterexample> found;
  for (const uint64_t seed : jetstream_seeds) {
    CampaignOptions options;
    options.seed_first = options.seed_last = seed;
    options.generator = generator;
    options.shrink_max = 1;
    options.out_dir = "";
    CampaignResult result = run_campaign(options, nullptr);
    if (!result.counterexamples.empty()) {
      found = result.counterexamples.front();
      break;
    }
  }
  REQUIRE(found.has_value());
  INFO("seed " << found->seed << ": " << scenario_to_json(found->scenario).dump());
  REQUIRE(found->replay_verified);
  REQUIRE(found->scenario.config.broker_kind == BrokerKind::jetstream);
  REQUIRE(found->scenario.config.account_inbox == AccountInbox::wolverine);
  REQUIRE(found->transfers <= 2);
  const auto path = std::filesystem::temp_directory_path() / "inboxsim-jetstream-cx.json";
  {
    std::ofstream out(path);
    out << scenario_to_json(found->scenario).dump(2);
  }
  const ParseResult parsed = parse_scenario_file(path.string());
  std::filesystem::remove(path);
  REQUIRE(parsed.scenario.has_value());
  RunOptions run_options;
  run_options.keep_trace = false;
  const RunResult replay = run_scenario(*parsed.scenario, run_options);
  bool same = false;
  for (const Violation& violation : replay.violations)
    same |= violation.invariant == found->invariant;
  REQUIRE(same);
}

// The shrinker puts the JetStream keys a swarm seed drew back to their defaults when the story
// fails without them: here a late copy of a credit request that Wolverine's inbox has forgotten
// (past KeepAfterMessageHandling) breaks a bank without the ledger key, whatever the timers.
TEST_CASE("a shrunk JetStream story keeps only the drawn JetStream keys it needs",
          "[fuzz][swarm]") {
  const ParseResult parsed = parse_scenario_text(
      R"({"seed": 24, "config": {"account.inbox": "wolverine", "account.ledger_unique": false,
          "broker.kind": "jetstream", "broker.ack_wait_ms": 200, "consumer.in_progress": true,
          "consumer.nak_delay_ms": 50},
        "accounts": {"bob": 0, "erin": 1},
        "steps": [{"transfer": {"id": "t1", "from": "erin", "to": "bob", "amount": 1}},
                  {"advance": {"ms": 1820000}},
                  {"fault": {"kind": "duplicate",
                             "match": {"type": "Transfer.CreditRequested", "transfer": "t1"}}},
                  {"run": {"until": "quiescent"}}, {"redrive": "all"}]})",
      "late-copy.json");
  REQUIRE(parsed.scenario.has_value());
  const RunResult failing = fuzz_run(*parsed.scenario);
  REQUIRE_FALSE(failing.violations.empty());
  const Invariant invariant = failing.violations.front().invariant;
  const Config shrunk = shrink_scenario(*parsed.scenario, invariant).scenario.config;
  REQUIRE(shrunk.broker_kind == BrokerKind::jetstream);
  REQUIRE(shrunk.broker_ack_wait_ms == Config{}.broker_ack_wait_ms);
  REQUIRE(shrunk.consumer_nak_delay_ms == 0);
  REQUIRE_FALSE(shrunk.consumer_in_progress);
}
