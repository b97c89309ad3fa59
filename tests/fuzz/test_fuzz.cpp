// The fuzzer: generation is a pure function of the seed, campaigns give the same answer for
// any number of jobs or shards, shrinking hands back a minimal replayable story, and (the
// hidden [teeth] cases, run by ctest as fuzz_teeth and fuzz_correct) every broken
// configuration is found while every correct one passes.
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <stdexcept>

#include "app/cli_args.h"
#include "fuzz/campaign.h"
#include "fuzz/generator.h"
#include "fuzz/matrix.h"
#include "fuzz/shrink.h"
#include "report/campaign_view.h"
#include "report/json_output.h"
#include "scenario/parse.h"
#include "scenario/runner.h"
#include "scenario/write.h"

using namespace inboxsim;

namespace {

Config config_from(std::initializer_list<std::pair<std::string, std::string>> sets) {
  Config config;
  // No REQUIRE here: this also runs during static initialisation, outside any test.
  for (const auto& [key, value] : sets) {
    if (!config_set_text(config, key, value).empty()) throw std::invalid_argument(key);
  }
  return config;
}

CampaignOptions campaign(uint64_t first, uint64_t last, const Config& config) {
  CampaignOptions options;
  options.seed_first = first;
  options.seed_last = last;
  options.generator.config = config;
  options.out_dir = "";
  return options;
}

nlohmann::ordered_json without_wall(nlohmann::ordered_json json) {
  json.erase("wall_ms");
  return json;
}

const Config kNoAccountDefence =
    config_from({{"account.inbox", "none"}, {"account.ledger_unique", "false"}});

}  // namespace

TEST_CASE("the same seed generates the same story, another seed another", "[fuzz]") {
  GeneratorOptions options;
  options.swarm = true;
  const auto a = scenario_to_json(generate_scenario(7, options).scenario).dump();
  const auto b = scenario_to_json(generate_scenario(7, options).scenario).dump();
  const auto c = scenario_to_json(generate_scenario(8, options).scenario).dump();
  REQUIRE(a == b);
  REQUIRE(a != c);
}

TEST_CASE("every generated story is a valid scenario file", "[fuzz]") {
  for (const bool swarm : {false, true}) {
    GeneratorOptions options;
    options.swarm = swarm;
    options.config = config_from({{"account.inbox", "external-after"}});
    for (uint64_t seed = 1; seed <= 200; ++seed) {
      const Scenario scenario = generate_scenario(seed, options).scenario;
      const ParseResult parsed =
          parse_scenario_text(scenario_to_json(scenario).dump(), "generated.json");
      INFO("seed " << seed << ": " << (parsed.error ? parsed.error->message() : ""));
      REQUIRE(parsed.scenario.has_value());
    }
  }
}

TEST_CASE("swarm seeds draw different fault mixes, quiet ones included", "[fuzz]") {
  GeneratorOptions options;
  options.swarm = true;
  std::set<std::string> mixes;
  bool quiet = false;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    const DrawnOptions drawn = generate_scenario(seed, options).drawn;
    mixes.insert(describe_drawn(drawn));
    quiet |= drawn.faults == 0;
  }
  REQUIRE(mixes.size() > 50);
  REQUIRE(quiet);
}

TEST_CASE("the generator reaches every fault kind and every crash point", "[fuzz]") {
  GeneratorOptions options;
  options.config =
      config_from({{"account.inbox", "external-before"}, {"transfer.dedupe", "external-after"}});
  std::set<std::string> seen;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    for (const Step& step : generate_scenario(seed, options).scenario.steps) {
      if (step.kind == StepKind::advance) seen.insert("advance");
      if (step.kind == StepKind::drop_index) seen.insert("drop_index");
      if (step.kind != StepKind::fault) continue;
      seen.insert(std::string(fault_kind_name(step.fault.kind)));
      if (step.fault.instance) seen.insert("instance " + std::to_string(*step.fault.instance));
      const std::string where =
          std::string(service_name(step.fault.service.value_or(ServiceId::account))) + "/" +
          std::string(crash_point_name(step.fault.at));
      if (step.fault.kind == FaultKind::crash) seen.insert(where);
      if (step.fault.kind == FaultKind::pause) seen.insert("pause " + where);
    }
  }
  for (const std::string want : {"crash",
                                 "drop_ack",
                                 "drop_connection",
                                 "nack",
                                 "duplicate",
                                 "lose_confirm",
                                 "delay",
                                 "pause",
                                 "advance",
                                 "drop_index",
                                 "account-service/after_commit",
                                 "account-service/after_mark",
                                 "account-service/after_outbox_send",
                                 "account-service/after_precheck",
                                 "transfer-service/after_publish",
                                 "transfer-service/after_mark",
                                 "transfer-service/after_commit",
                                 "pause account-service/after_outbox_send",
                                 "pause transfer-service/after_precheck",
                                 "instance 3"}) {
    INFO(want);
    REQUIRE(seen.contains(want));
  }
}

TEST_CASE("the generator draws instances and work time unless the campaign pins them", "[fuzz]") {
  GeneratorOptions options;
  std::set<int64_t> account_instances;
  std::set<int64_t> work_max;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    const Generated generated = generate_scenario(seed, options);
    account_instances.insert(generated.scenario.config.account_instances);
    work_max.insert(generated.scenario.config.work_ms_max);
    // What was drawn is what the story runs with, and what a failing seed reports.
    REQUIRE(generated.drawn.account_instances == generated.scenario.config.account_instances);
  }
  REQUIRE(account_instances == std::set<int64_t>{1, 2, 3});
  REQUIRE(work_max.size() > 2);
  options.draw_instances = false;
  options.draw_work = false;
  options.config.account_instances = 5;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    const Config config = generate_scenario(seed, options).scenario.config;
    REQUIRE(config.account_instances == 5);
    REQUIRE(config.transfer_instances == 1);
    REQUIRE(config.work_ms_max == 0);
  }
}

TEST_CASE("a campaign gives the same answer with 1 or 3 jobs", "[fuzz]") {
  CampaignOptions options = campaign(1, 60, kNoAccountDefence);
  options.shrink_max = 1;
  CampaignResult one = run_campaign(options, nullptr);
  options.jobs = 3;
  CampaignResult three = run_campaign(options, nullptr);
  one.wall_ms = three.wall_ms = 0;  // the only thing allowed to differ
  REQUIRE(!one.failures.empty());
  REQUIRE(without_wall(campaign_json(options, one)) == without_wall(campaign_json(options, three)));
  REQUIRE(scenario_to_json(one.counterexamples[0].scenario) ==
          scenario_to_json(three.counterexamples[0].scenario));
  REQUIRE(campaign_junit(options, one) == campaign_junit(options, three));
}

TEST_CASE("stopping after the first failure is deterministic across jobs", "[fuzz]") {
  CampaignOptions options = campaign(1, 200, kNoAccountDefence);
  options.stop_after = 2;
  options.shrink_max = 0;
  const CampaignResult one = run_campaign(options, nullptr);
  options.jobs = 2;
  const CampaignResult two = run_campaign(options, nullptr);
  REQUIRE(one.failures.size() == 2);
  REQUIRE(one.seeds == two.seeds);
  REQUIRE(one.failures[1].seed == two.failures[1].seed);
  REQUIRE(one.seeds == static_cast<int64_t>(one.failures[1].seed));
}

TEST_CASE("shards split a seed range into disjoint parts that cover it", "[fuzz]") {
  CampaignOptions options = campaign(10, 99, Config{});
  std::set<uint64_t> all;
  size_t total = 0;
  options.shard_count = 4;
  for (int64_t k = 1; k <= 4; ++k) {
    options.shard_index = k;
    const std::vector<uint64_t> seeds = shard_seeds(options);
    total += seeds.size();
    all.insert(seeds.begin(), seeds.end());
  }
  REQUIRE(total == 90);
  REQUIRE(all.size() == 90);
  REQUIRE(*all.begin() == 10);
  REQUIRE(*all.rbegin() == 99);
  int64_t index = 0;
  int64_t count = 0;
  REQUIRE(parse_shard("2/3", index, count));
  REQUIRE((index == 2 && count == 3));
  REQUIRE_FALSE(parse_shard("0/3", index, count));
  REQUIRE_FALSE(parse_shard("4/3", index, count));
  uint64_t first = 0;
  uint64_t last = 0;
  REQUIRE(parse_seed_range("5..9", first, last));
  REQUIRE((first == 5 && last == 9));
  REQUIRE_FALSE(parse_seed_range("9..5", first, last));
  REQUIRE_FALSE(parse_seed_range("x..5", first, last));
}

TEST_CASE("a shrunk counterexample is minimal, replays the failure, and says what should hold",
          "[fuzz]") {
  CampaignOptions options = campaign(1, 100, kNoAccountDefence);
  options.stop_after = 1;
  options.shrink_max = 1;
  const CampaignResult result = run_campaign(options, nullptr);
  REQUIRE(result.counterexamples.size() == 1);
  const Counterexample& cx = result.counterexamples[0];
  REQUIRE(cx.replay_verified);
  REQUIRE(cx.transfers <= 2);
  REQUIRE(cx.faults <= 3);
  REQUIRE(cx.scenario.description.find("seed " + std::to_string(cx.seed)) != std::string::npos);
  REQUIRE(cx.scenario.expect.violations.empty());
  REQUIRE(cx.scenario.expect.balances.has_value());

  // Replayed from its text, it fails; with every defence on, it meets its expectations.
  const ParseResult parsed = parse_scenario_text(scenario_to_json(cx.scenario).dump(), "cx.json");
  REQUIRE(parsed.scenario.has_value());
  REQUIRE_FALSE(fuzz_run(*parsed.scenario).passed);
  Scenario fixed = *parsed.scenario;
  fixed.config = repaired_config(fixed.config);
  REQUIRE(fuzz_run(fixed).passed);

  // Removing any single transfer (with its faults) or fault makes the failure go away. (Runs and
  // the operator's closing redrives are the story's structure, not its faults.)
  Scenario bare = cx.scenario;
  bare.expect = Expect{};
  REQUIRE(bare.steps.back().kind == StepKind::redrive);
  for (size_t i = 0; i < bare.steps.size(); ++i) {
    const Step& step = bare.steps[i];
    if (step.kind == StepKind::run || step.kind == StepKind::redrive) continue;
    Scenario smaller = bare;
    smaller.steps.erase(smaller.steps.begin() + static_cast<ptrdiff_t>(i));
    if (step.kind == StepKind::transfer) {
      std::erase_if(smaller.steps, [&](const Step& s) {
        return s.kind == StepKind::fault && s.fault.match.transfer == step.transfer.id;
      });
    }
    INFO("without step " << i);
    REQUIRE_FALSE(breaks_invariant(smaller, cx.invariant));
  }
}

TEST_CASE("removing a transfer removes the faults that name it", "[fuzz]") {
  // The shrinker never leaves a fault pointing at a transfer that is gone: every candidate it
  // keeps parses back.
  CampaignOptions options = campaign(1, 100,
                                     config_from({{"transfer.dedupe", "none"},
                                                  {"transfer.state_machine", "false"},
                                                  {"account.ledger_unique", "false"}}));
  options.stop_after = 1;
  options.shrink_max = 1;
  const CampaignResult result = run_campaign(options, nullptr);
  REQUIRE(result.counterexamples.size() == 1);
  REQUIRE(result.counterexamples[0].replay_verified);
}

TEST_CASE("the matrix sets each defence independently", "[fuzz]") {
  const Config all_off = config_with_defences(Config{}, {false, false, false, false, false});
  REQUIRE(all_off.account_inbox == AccountInbox::none);
  REQUIRE_FALSE(all_off.account_ledger_unique);
  REQUIRE_FALSE(all_off.transfer_processed_unique);
  REQUIRE_FALSE(all_off.transfer_state_machine);
  REQUIRE_FALSE(all_off.relay_stable_message_id);
  const Config all_on = config_with_defences(Config{}, {true, true, true, true, true});
  // The ledger defence is the per-transfer key: the index and the remembered rejections, off by
  // default (the default bank has no record of a rejection).
  REQUIRE(config_diff_json(all_on).dump() == R"({"account.remember_rejections":true})");
}

// Seeds 1748 and 18057 of the swarm with broker.delivery_limit = 2 dead-letter a transfer's
// Account.Debited and then replay its Transfer.Requested after the inbox window, when the
// balance no longer covers it. A bank that remembers its decisions per transfer must answer the
// copy from the DEBIT it already made, not reject it (scenario 51).
TEST_CASE("a late copy of a debited transfer's request is not rejected against the new balance",
          "[fuzz]") {
  Config config = campaign_config();
  REQUIRE(config_set_text(config, "broker.delivery_limit", "2").empty());
  // The story needs its dead letter: the queue has a dead-letter exchange (as scenario 51 says;
  // without one RabbitMQ deletes the message at the limit, scenario 53).
  REQUIRE(config_set_text(config, "broker.dead_letter", "dlx").empty());
  for (const uint64_t seed : {uint64_t{1748}, uint64_t{18057}}) {
    CampaignOptions options = campaign(seed, seed, config);
    options.generator.swarm = true;
    options.generator.draw_dead_letter = false;
    // The stories as these seeds drew them before the swarm drew the MassTransit version, the
    // database and the isolation level.
    options.generator.draw_masstransit = false;
    options.generator.draw_database = false;
    options.generator.draw_isolation = false;
    // And before the swarm drew the broker and the inbox (the keys set are pinned, as --set
    // pins them).
    options.generator.pinned_keys = {"broker.delivery_limit", "broker.dead_letter",
                                     "account.inbox"};
    options.shrink_max = 0;
    const CampaignResult result = run_campaign(options, nullptr);
    CAPTURE(seed);
    REQUIRE(result.seeds == 1);
    REQUIRE(result.failures.empty());
    // The story still parks the Account.Debited it needs: a dead letter the operator replays.
    REQUIRE(result.coverage[Probe::broker_dead_lettered] >= 1);
  }
}

// ---- teeth: run by ctest (fuzz_teeth, fuzz_correct), hidden from the quick suite ------------

TEST_CASE("every broken configuration is found within 500 seeds and shrunk small", "[.teeth]") {
  const std::vector<std::pair<std::string, Config>> broken = {
      {"no account inbox, no ledger index", kNoAccountDefence},
      {"no transfer dedupe, no state machine, no ledger index",
       config_from({{"transfer.dedupe", "none"},
                    {"transfer.state_machine", "false"},
                    {"account.ledger_unique", "false"}})},
      {"exercise 3's dropped processed_messages index (state machine off)",
       config_from({{"transfer.state_machine", "false"}})},
      {"account external-before", config_from({{"account.inbox", "external-before"}})},
      {"account external-after (no ledger index)",
       config_from({{"account.inbox", "external-after"}, {"account.ledger_unique", "false"}})},
      {"transfer external-before", config_from({{"transfer.dedupe", "external-before"}})},
      // external-after duplicates work; the second line of defence (the ledger index, the
      // state machine) stops the duplicate, so these rows switch it off to see the first line.
      {"transfer external-after (no state machine)",
       config_from({{"transfer.dedupe", "external-after"}, {"transfer.state_machine", "false"}})},
      // Scenario 45: the same table, a second transaction; the same break as external-after.
      {"transfer processed-after (no state machine)",
       config_from({{"transfer.dedupe", "processed-after"}, {"transfer.state_machine", "false"}})},
      {"unstable message ids, no ledger index",
       config_from({{"relay.stable_message_id", "false"}, {"account.ledger_unique", "false"}})},
      {"zero dedupe window, no ledger index",
       config_from({{"account.inbox_window_ms", "0"}, {"account.ledger_unique", "false"}})},
      {"notifications keyed by message id alone",
       config_from({{"transfer.notifications", "true"}})},
      // Only concurrency breaks this one: see the next test case.
      // Scenario 29: a rejected transfer's Transfer.Requested replayed after the inbox window.
      {"the default bank (no remembered rejections)", Config{}},
      {"MassTransit's inbox without its (message_id, consumer_id) key",
       config_from({{"account.inbox_unique", "false"}})},
      {"the Marten inbox without its key and without the ledger index",
       config_from({{"account.inbox", "marten"},
                    {"account.inbox_unique", "false"},
                    {"account.ledger_unique", "false"}})},
      // Scenario 72: the durability agent's recovery of an envelope still being handled; only
      // the ledger key stops the second debit.
      {"the wolverine inbox without the ledger index",
       config_from({{"account.inbox", "wolverine"}, {"account.ledger_unique", "false"}})},
      {"the wolverine inbox without the ledger index, on jetstream",
       config_from({{"account.inbox", "wolverine"},
                    {"account.ledger_unique", "false"},
                    {"broker.kind", "jetstream"}})},
  };
  for (const auto& [name, config] : broken) {
    CampaignOptions options = campaign(1, 500, config);
    options.stop_after = 1;
    options.shrink_max = 1;
    options.jobs = 2;
    const CampaignResult result = run_campaign(options, nullptr);
    INFO(name);
    REQUIRE(result.failures.size() == 1);
    REQUIRE(result.counterexamples.size() == 1);
    const Counterexample& cx = result.counterexamples[0];
    INFO("seed " << cx.seed << ": " << scenario_to_json(cx.scenario).dump());
    REQUIRE(cx.replay_verified);
    REQUIRE(cx.transfers <= 2);
    REQUIRE(cx.faults <= 3);
  }
}

// MassTransit's inbox looks its row up in every pass, so a duplicate that arrives after the
// first copy inserted its row is caught with or without the key: without concurrency the
// mutant passes. Two first deliveries at once both insert a row, and every later lookup throws.
TEST_CASE("a mutant only concurrency can expose passes sequentially and is caught concurrently",
          "[.teeth]") {
  // Campaigns test the bank with remembered rejections (without them the default bank breaks
  // sequentially on a late duplicate of a rejected transfer, scenario 29).
  const Config keyless =
      config_from({{"account.inbox_unique", "false"}, {"account.remember_rejections", "true"}});
  CampaignOptions sequential = campaign(1, 1500, keyless);
  sequential.generator.draw_instances = false;
  sequential.generator.draw_work = false;
  sequential.jobs = 2;
  REQUIRE(run_campaign(sequential, nullptr).failures.empty());

  CampaignOptions concurrent = campaign(1, 500, keyless);
  concurrent.stop_after = 1;
  concurrent.shrink_max = 1;
  concurrent.jobs = 2;
  const CampaignResult result = run_campaign(concurrent, nullptr);
  REQUIRE(result.counterexamples.size() == 1);
  const Counterexample& cx = result.counterexamples[0];
  INFO(scenario_to_json(cx.scenario).dump());
  REQUIRE(cx.replay_verified);
  REQUIRE(cx.transfers == 1);
  // The counterexample keeps the concurrency it needs, and that is what breaks it.
  const Config& config = cx.scenario.config;
  REQUIRE(config.account_instances + config.transfer_instances > 2);
  Scenario sequential_replay = cx.scenario;
  sequential_replay.config.account_instances = 1;
  sequential_replay.config.transfer_instances = 1;
  sequential_replay.config.work_ms_min = sequential_replay.config.work_ms_max = 0;
  REQUIRE(fuzz_run(sequential_replay).violations.empty());
}

TEST_CASE("every correct configuration passes thousands of seeds", "[.teeth]") {
  // account.remember_rejections is off by default (the default bank, which
  // the broken list below shows failing); the correct banks are the ones the fuzz CLI tests.
  const std::vector<std::pair<std::string, Config>> correct = {
      {"default, rejections remembered", config_from({{"account.remember_rejections", "true"}})},
      {"marten",
       config_from({{"account.inbox", "marten"}, {"account.remember_rejections", "true"}})},
      {"wolverine",
       config_from({{"account.inbox", "wolverine"}, {"account.remember_rejections", "true"}})},
      {"wolverine on jetstream",
       config_from({{"account.inbox", "wolverine"},
                    {"broker.kind", "jetstream"},
                    {"account.remember_rejections", "true"}})},
      {"notifications keyed by message id and consumer",
       config_from({{"transfer.notifications", "true"},
                    {"transfer.dedupe_key", "message_id+consumer"},
                    {"account.remember_rejections", "true"}})},
  };
  for (const auto& [name, config] : correct) {
    for (const bool swarm : {false, true}) {
      CampaignOptions options = campaign(1, 3000, config);
      options.generator.swarm = swarm;
      // An inbox or broker under test is pinned, as --set pins it; the swarm draws the rest
      // (on the default row, both).
      if (config.account_inbox != default_account_inbox()) {
        options.generator.pinned_keys.emplace_back("account.inbox");
      }
      if (config.broker_kind != Config{}.broker_kind) {
        options.generator.pinned_keys.emplace_back("broker.kind");
      }
      options.jobs = 2;
      const CampaignResult result = run_campaign(options, nullptr);
      INFO(name << (swarm ? " (swarm)" : ""));
      REQUIRE(result.failures.empty());
    }
  }
}

TEST_CASE("fuzz --rate spreads the transfers over virtual time at that rate", "[fuzz][rate]") {
  GeneratorOptions options;
  options.transfers = 40;
  options.rate_per_second = 8;  // one every 125 ms
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const Generated generated = generate_scenario(seed, options);
    int64_t time_ms = 0;
    int64_t number = 0;
    for (const Step& step : generated.scenario.steps) {
      if (step.kind == StepKind::run && !step.until_quiescent) time_ms += step.ms;
      if (step.kind != StepKind::transfer) continue;
      ++number;
      // A batch arrives together, when its first transfer is due.
      CAPTURE(seed, number, generated.drawn.batch);
      REQUIRE(time_ms <= (number - 1) * 125);
      REQUIRE(time_ms > (number - 1 - generated.drawn.batch) * 125);
    }
    REQUIRE(number == 40);
  }
  // Without --rate the story is the one it always was (no timed runs from the rate).
  GeneratorOptions plain;
  plain.transfers = 40;
  const Generated before = generate_scenario(7, plain);
  options.rate_per_second.reset();
  REQUIRE(scenario_to_json(generate_scenario(7, options).scenario).dump() ==
          scenario_to_json(before.scenario).dump());
}

TEST_CASE("every failing JUnit testcase names the command that replays its seed", "[fuzz][junit]") {
  CampaignOptions options;
  options.seed_first = 1;
  options.seed_last = 30;
  options.generator.workload = Workload::small;
  options.generator.config.account_inbox = AccountInbox::none;
  options.generator.config.account_ledger_unique = false;
  options.generator.rate_per_second = 50;
  options.sets = {"account.inbox=none", "account.ledger_unique=false"};
  options.shrink_max = 0;
  options.out_dir = "";
  const CampaignResult result = run_campaign(options, nullptr);
  REQUIRE_FALSE(result.failures.empty());
  const std::string xml = campaign_junit(options, result);
  for (const SeedOutcome& failure : result.failures) {
    const std::string seed = std::to_string(failure.seed);
    REQUIRE_THAT(xml, Catch::Contains("replay: inboxsim fuzz --seeds " + seed + ".." + seed +
                                      " --workload small --rate 50 --set account.inbox=none"
                                      " --set account.ledger_unique=false"));
  }
  REQUIRE_THAT(xml, Catch::Contains("<property name=\"workload\" value=\"small\"/>"));
  REQUIRE_THAT(xml, Catch::Contains("<property name=\"set\" value=\"account.inbox=none\"/>"));
  REQUIRE_THAT(xml, Catch::Contains("<property name=\"rate\" value=\"50\"/>"));
  // A value with a space or a quote is quoted for the shell.
  options.sets = {"account.retry=intervals:1,2", "x=it's here"};
  REQUIRE(replay_command(options, 9) ==
          "inboxsim fuzz --seeds 9..9 --workload small --rate 50 --set "
          "account.retry=intervals:1,2 --set 'x=it'\\''s here'");
}

TEST_CASE("a fuzz run reports everything a plain run does but the trace hash", "[fuzz]") {
  // Campaigns and the shrinker never read a run's trace_hash, so fuzz_run does not compute it;
  // every verdict, count, balance and row it reports must still be the plain run's.
  GeneratorOptions options;
  options.workload = Workload::small;
  options.swarm = true;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    INFO("seed " << seed);
    const Scenario scenario = generate_scenario(seed, options).scenario;
    RunOptions plain_options;
    plain_options.keep_trace = false;
    const RunResult plain = run_scenario(scenario, plain_options);
    const RunResult fuzzed = fuzz_run(scenario);
    REQUIRE(plain.trace_hash.size() == 16);
    REQUIRE(fuzzed.trace_hash.empty());
    nlohmann::ordered_json plain_json = run_result_json(plain);
    nlohmann::ordered_json fuzzed_json = run_result_json(fuzzed);
    plain_json.erase("trace_hash");
    fuzzed_json.erase("trace_hash");
    REQUIRE(fuzzed_json == plain_json);
  }
}
