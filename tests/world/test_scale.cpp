// Long stories: a story's ending does not grow with the story, the error-queue
// traffic of a story grows with its transfers and not with their square, and a long story
// settles.
#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <optional>

#include "domain/config.h"
#include "fuzz/generator.h"
#include "fuzz/shrink.h"
#include "scenario/parse.h"
#include "scenario/runner.h"
#include "scenario/write.h"

using namespace inboxsim;

namespace {

GeneratorOptions long_story(int64_t transfers) {
  GeneratorOptions options;
  options.transfers = transfers;
  options.accounts = 10'000;
  return options;
}

int64_t count_steps(const Scenario& scenario, StepKind kind) {
  return std::count_if(scenario.steps.begin(), scenario.steps.end(),
                       [&](const Step& step) { return step.kind == kind; });
}

}  // namespace

TEST_CASE(
    "a long story ends with one redrive round per parking fault of its most faulted "
    "transfer, not one per parking fault of the story",
    "[fuzz][scale]") {
  const Scenario scenario = generate_scenario(1, long_story(4'000)).scenario;
  std::map<std::string, int64_t> parks_by_transfer;
  int64_t parks_total = 0;
  for (const Step& step : scenario.steps) {
    if (step.kind != StepKind::fault) continue;
    int64_t parks = 0;
    if (step.fault.kind == FaultKind::nack) parks = step.fault.times;
    if (step.fault.kind == FaultKind::lose_confirm || step.fault.kind == FaultKind::publish_nack) {
      parks = 1;
    }
    parks_by_transfer[step.fault.match.transfer] += parks;
    parks_total += parks;
  }
  int64_t parks_max = 0;
  for (const auto& [transfer, parks] : parks_by_transfer) parks_max = std::max(parks_max, parks);
  const int64_t rounds = count_steps(scenario, StepKind::redrive);
  CHECK(rounds == parks_max + 1);
  // The story has hundreds of faults that can park a message, and a handful of rounds.
  CHECK(parks_total > 20 * rounds);
  // Every round is "settle, then redrive all", and the story ends with one.
  REQUIRE(scenario.steps.size() >= 2);
  CHECK(scenario.steps.back().kind == StepKind::redrive);
  CHECK(scenario.steps[scenario.steps.size() - 2].kind == StepKind::run);
}

TEST_CASE("the error queues of a story carry traffic in proportion to its transfers",
          "[fuzz][scale]") {
  // Before the rounds were per transfer, seed 1 parked 40,880 messages with 1,000 transfers
  // and 158,672 with 2,000: every round sent every poison message parked so far through its
  // consumer again.
  GeneratorOptions small_story = long_story(1'000);
  GeneratorOptions thrice_story = long_story(3'000);
  // The bound is about the operator's rounds, measured where a lost lock race parks nothing:
  // on Postgres at Repeatable Read (the default) every copy that waited on an inbox row lock
  // fails with 40001 and, with no retry, is parked, and the rounds' redrives race again (seed
  // 1: 3,329 and 11,359 parked, against 1,131 and 3,279 on SQL Server).
  small_story.config.account_database = AccountDatabase::sqlserver;
  thrice_story.config.account_database = AccountDatabase::sqlserver;
  const RunResult small = fuzz_run(generate_scenario(1, small_story).scenario);
  const RunResult thrice = fuzz_run(generate_scenario(1, thrice_story).scenario);
  CHECK(small.violations.empty());
  CHECK(thrice.violations.empty());
  REQUIRE(small.stats.error_queued > 0);
  CHECK(small.stats.error_queued < 2 * 1'000);
  CHECK(thrice.stats.error_queued < 2 * 3'000);
  // Per transfer, the longer story parks less than half as much again as the shorter one (a
  // round that sent every parked message through again grew with the square). One seed's
  // counts wander around the line (seed 1: 1,067, 3,325, 3,802 and 5,476 with 1,000 to 4,000
  // transfers on SQL Server), so the two ends are three times apart, not two.
  CHECK(2 * thrice.stats.error_queued < 3 * 3 * small.stats.error_queued);
}

TEST_CASE(
    "seed 1 with 4,000 transfers settles: an outbox row sent before its inbox row was "
    "cleaned up is not unsent",
    "[fuzz][scale]") {
  // As found by a long fuzz story, before the outbox's foreign key to the inbox was modelled
  // (MassTransit 8.3): its transfer t3450 has a MassTransit outbox row whose remove pass never ran
  // (the redelivery was faulted into the error queue first); the cleanup removed the delivered
  // inbox row after the window, and the redriven message started a new inbox row that was never
  // consumed. The row was sent at the first delivery: counting it as unsent failed termination.
  const RunResult result = fuzz_run(generate_scenario(1, long_story(4'000)).scenario);
  for (const Violation& violation : result.violations) INFO(violation.detail);
  CHECK(result.violations.empty());
}

// Swarm seed `seed` (on `config`, when given) run as the fuzzer runs it (no trace kept) and
// again with `change` made to the run's options.
struct TwoRuns {
  RunResult plain;
  RunResult changed;
};
TwoRuns swarm_seed_two_ways(uint64_t seed, const std::optional<Config>& config,
                            const std::function<void(RunOptions&)>& change) {
  GeneratorOptions options;
  options.swarm = true;
  if (config) {
    options.config = *config;
    // The configuration under test is pinned, as a campaign's --set pins it.
    options.pinned_keys = {"account.inbox"};
  }
  const Scenario scenario = generate_scenario(seed, options).scenario;
  RunOptions plain;
  plain.keep_trace = false;
  RunOptions changed = plain;
  change(changed);
  return TwoRuns{run_scenario(scenario, plain), run_scenario(scenario, changed)};
}

TEST_CASE("a story played from temporary database files has the trace it has in memory",
          "[fuzz][scale]") {
  // Long stories keep their databases in temporary files (fuzz, from 20,000 transfers on);
  // the run must be the same run. Swarm seeds: several instances, dropped indexes, retries.
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    const auto [a, b] = swarm_seed_two_ways(
        seed, std::nullopt, [](RunOptions& in_files) { in_files.spill_databases = true; });
    INFO("seed " << seed);
    CHECK(a.trace_hash == b.trace_hash);
    CHECK(a.stats.transactions == b.stats.transactions);
    CHECK(a.violations.size() == b.violations.size());
    CHECK(a.balances == b.balances);
  }
}

TEST_CASE("a story drawn as it is played runs as the story generated whole", "[fuzz][scale]") {
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    GeneratorOptions options;
    options.swarm = seed % 2 == 0;
    options.workload = seed % 3 == 0 ? Workload::large : Workload::standard;
    // Both hashed (fuzz_run skips the hash): the trace is what must be the same.
    RunOptions run_options;
    run_options.keep_trace = false;
    const RunResult whole = run_scenario(generate_scenario(seed, options).scenario, run_options);
    REQUIRE_FALSE(whole.trace_hash.empty());
    StoryGenerator story(seed, options);
    const RunResult drawn = run_story(
        story.header(), [&] { return story.next(); }, run_options);
    INFO("seed " << seed);
    CHECK(drawn.trace_hash == whole.trace_hash);
    CHECK(drawn.stats.transactions == whole.stats.transactions);
  }
}

TEST_CASE("a run that keeps no final tables reaches the same verdicts, details included",
          "[fuzz][scale]") {
  // Fuzz seeds keep neither the ledger nor the sagas in their result, and the final check reads
  // them row by row; a broken bank (no inbox, no ledger key) gives violations to compare.
  Config broken = campaign_config();
  REQUIRE(config_set_text(broken, "account.inbox", "none").empty());
  REQUIRE(config_set_text(broken, "account.ledger_unique", "false").empty());
  int64_t violations = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const auto [a, b] =
        swarm_seed_two_ways(seed, broken, [](RunOptions& lean) { lean.keep_final_tables = false; });
    INFO("seed " << seed);
    CHECK(a.trace_hash == b.trace_hash);
    REQUIRE(a.violations.size() == b.violations.size());
    for (size_t i = 0; i < a.violations.size(); ++i) {
      CHECK(a.violations[i].invariant == b.violations[i].invariant);
      CHECK(a.violations[i].detail == b.violations[i].detail);
    }
    CHECK(b.ledger.empty());
    CHECK(b.transfers.empty());
    violations += static_cast<int64_t>(a.violations.size());
  }
  CHECK(violations > 10);
}

namespace {

// t2's debit is nacked twice while it runs; t1's Transfer.Requested, long finished, is
// published again after the inbox window, into a crash armed after t1 completed; a crash aimed
// at a refund of t3 that never happens stays armed to the end.
constexpr const char* kLateFaultsStory = R"({
  "name": "late-faults", "seed": 3,
  "config": { "account.inbox_window_ms": 60000 },
  "accounts": { "alice": 10000, "bob": 0 },
  "steps": [
    { "transfer": { "id": "t1", "from": "alice", "to": "bob", "amount": 2500 } },
    { "transfer": { "id": "t2", "from": "alice", "to": "bob", "amount": 1000 } },
    { "fault": { "kind": "nack", "times": 2,
                 "match": { "type": "Account.Debited", "transfer": "t2" } } },
    { "fault": { "kind": "crash", "service": "account-service", "at": "after_commit",
                 "match": { "type": "Transfer.RefundRequested", "transfer": "t3" } } },
    { "transfer": { "id": "t3", "from": "bob", "to": "alice", "amount": 500 } },
    { "run": { "until": "quiescent" } },
    { "fault": { "kind": "crash", "service": "account-service", "at": "before_tx",
                 "match": { "type": "Transfer.Requested", "transfer": "t1" } } },
    { "advance": { "ms": 300000 } },
    { "fault": { "kind": "duplicate",
                 "match": { "type": "Transfer.Requested", "transfer": "t1" } } },
    { "run": { "until": "quiescent" } }
  ]
})";

}  // namespace

TEST_CASE(
    "a fault kept in the temporary database still fires when its transfer's message comes "
    "back late, and the run is the run in memory",
    "[fuzz][scale]") {
  ParseResult parsed = parse_scenario_text(kLateFaultsStory, "late-faults.json");
  REQUIRE(parsed.scenario);
  RunOptions memory;
  memory.keep_trace = false;
  const RunResult in_memory = run_scenario(*parsed.scenario, memory);
  // The story as meant: both crashes of t1's late copy and t2's nacks happen, t3's never does.
  CHECK(in_memory.stats.crashes == 1);
  REQUIRE(in_memory.unfired_faults.size() == 1);
  CHECK(in_memory.unfired_faults[0].find("t3") != std::string::npos);
  CHECK(in_memory.violations.empty());
  // Every fault to the database as it is armed (0), or all but the latest one (1).
  for (const size_t in_memory_max : {size_t{0}, size_t{1}}) {
    RunOptions spilled = memory;
    spilled.spill_databases = true;
    spilled.faults_in_memory_max = in_memory_max;
    const RunResult result = run_scenario(*parsed.scenario, spilled);
    INFO("faults in memory at most " << in_memory_max);
    CHECK(result.trace_hash == in_memory.trace_hash);
    CHECK(result.stats.crashes == in_memory.stats.crashes);
    CHECK(result.stats.redeliveries == in_memory.stats.redeliveries);
    CHECK(result.unfired_faults == in_memory.unfired_faults);
    CHECK(result.balances == in_memory.balances);
  }
}

TEST_CASE("a story whose faults all go to the temporary database runs as in memory",
          "[fuzz][scale]") {
  // Long stories spill their armed faults past FaultBook::kFaultsInMemoryMax; here every
  // fault goes at once and comes back at its transfer's first event, so each fault that fires
  // fired from the database. Stories of 200 transfers with a hundred faults or more, on the bank
  // and on a broken one (no inbox, no ledger key) for violations to compare, details included.
  Config broken = campaign_config();
  REQUIRE(config_set_text(broken, "account.inbox", "none").empty());
  REQUIRE(config_set_text(broken, "account.ledger_unique", "false").empty());
  int64_t crashes = 0;
  int64_t unfired = 0;
  int64_t violations = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    GeneratorOptions options = long_story(200);
    options.accounts = 50;
    options.swarm = seed % 2 == 0;
    if (seed % 4 >= 2) {
      options.config = broken;
      options.pinned_keys = {"account.inbox"};
    }
    const Scenario scenario = generate_scenario(seed, options).scenario;
    RunOptions memory;
    memory.keep_trace = false;
    RunOptions spilled = memory;
    spilled.spill_databases = true;
    spilled.faults_in_memory_max = 0;
    const RunResult a = run_scenario(scenario, memory);
    const RunResult b = run_scenario(scenario, spilled);
    INFO("seed " << seed);
    CHECK(a.trace_hash == b.trace_hash);
    CHECK(a.stats.transactions == b.stats.transactions);
    CHECK(a.stats.crashes == b.stats.crashes);
    CHECK(a.unfired_faults == b.unfired_faults);
    REQUIRE(a.violations.size() == b.violations.size());
    for (size_t i = 0; i < a.violations.size(); ++i) {
      CHECK(a.violations[i].detail == b.violations[i].detail);
    }
    crashes += a.stats.crashes;
    unfired += static_cast<int64_t>(a.unfired_faults.size());
    violations += static_cast<int64_t>(a.violations.size());
  }
  CHECK(crashes > 10);
  CHECK(unfired > 300);
  CHECK(violations > 2);
}
