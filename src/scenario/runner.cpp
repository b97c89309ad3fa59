#include "scenario/runner.h"

#include <algorithm>
#include <filesystem>

#include "kernel/assert.h"
#include "kernel/file_names.h"
#include "world/faults.h"
#include "world/world.h"

namespace inboxsim {

Stats& Stats::operator+=(const Stats& other) {
  published += other.published;
  deliveries += other.deliveries;
  redeliveries += other.redeliveries;
  acks += other.acks;
  dedupe_hits += other.dedupe_hits;
  effects += other.effects;
  crashes += other.crashes;
  transactions += other.transactions;
  dead_lettered += other.dead_lettered;
  error_queued += other.error_queued;
  dropped += other.dropped;
  return *this;
}

void play_step(World& world, const Step& step) {
  switch (step.kind) {
    case StepKind::transfer: world.request_transfer(step.transfer); return;
    case StepKind::fault: world.arm_fault(step.fault); return;
    case StepKind::run:
      if (step.until_quiescent) {
        world.run_until_quiescent();
      } else {
        world.run_for(step.ms);
      }
      return;
    case StepKind::advance: world.advance(step.ms); return;
    case StepKind::drop_index: world.drop_index(step.index); return;
    case StepKind::redrive: world.redrive(step.queue); return;
    case StepKind::publish: world.publish_by_hand(step); return;
    case StepKind::restore_index: world.restore_index(step.index); return;
  }
  INBOXSIM_ASSERT(false);
}

void play_story_end(World& world) {
  while (!world.exploration_stopped() && world.take_due_actions()) world.run_until_quiescent();
}

namespace {

void expect_equal(RunResult& result, std::string what, int64_t expected, int64_t actual) {
  result.expectations.push_back(ExpectationResult{
      std::move(what), expected == actual,
      "expected " + std::to_string(expected) + ", got " + std::to_string(actual)});
}

template <typename Map, typename Key>
int64_t value_or_zero(const Map& map, const Key& key) {
  const auto found = map.find(key);
  return found == map.end() ? 0 : found->second;
}

std::string invariant_list(const std::vector<Invariant>& invariants) {
  std::string text = "[";
  for (size_t i = 0; i < invariants.size(); ++i) {
    if (i > 0) text += ", ";
    text += invariant_name(invariants[i]);
  }
  return text + "]";
}

}  // namespace

void evaluate_expectations(const Expect& expect, RunResult& result) {
  result.expectations.clear();
  if (expect.balances) {
    for (const auto& [account, balance] : *expect.balances) {
      expect_equal(result, "balances." + account, balance, value_or_zero(result.balances, account));
    }
  }
  if (expect.transfers) {
    for (const auto& [id, state] : *expect.transfers) {
      const auto found = result.transfers.find(id);
      const std::string actual =
          found == result.transfers.end() ? "missing" : std::string(saga_state_name(found->second));
      result.expectations.push_back(ExpectationResult{
          "transfers." + id, found != result.transfers.end() && found->second == state,
          "expected " + std::string(saga_state_name(state)) + ", got " + actual});
    }
  }
  if (expect.published) {
    for (const auto& [type, count] : *expect.published) {
      expect_equal(result, "published." + std::string(message_type_name(type)), count,
                   value_or_zero(result.published_ids, type));
    }
  }
  if (expect.sends) {
    for (const auto& [type, count] : *expect.sends) {
      expect_equal(result, "sends." + std::string(message_type_name(type)), count,
                   value_or_zero(result.sends, type));
    }
  }
  if (expect.effects) {
    for (const auto& [transfer, per_type] : *expect.effects) {
      for (const auto& [type, count] : per_type) {
        // Named copies: C++20 lets a lambda capture structured bindings, clang 14 does not yet.
        const std::string& id = transfer;
        const EntryType entry = type;
        const auto actual = std::count_if(
            result.ledger.begin(), result.ledger.end(),
            [&](const LedgerEntry& e) { return e.transfer == id && e.type == entry; });
        expect_equal(result, "effects." + transfer + "." + std::string(entry_type_name(type)),
                     count, static_cast<int64_t>(actual));
      }
    }
  }
  if (expect.dedupe_hits) {
    for (const auto& [service, count] : *expect.dedupe_hits) {
      expect_equal(result, "dedupe_hits." + std::string(service_name(service)), count,
                   value_or_zero(result.dedupe_hits, service));
    }
  }
  if (expect.dead_lettered) {
    expect_equal(result, "dead_lettered", *expect.dead_lettered, result.stats.dead_lettered);
  }
  if (expect.error_queued) {
    expect_equal(result, "error_queued", *expect.error_queued, result.stats.error_queued);
  }
  if (expect.dropped) expect_equal(result, "dropped", *expect.dropped, result.stats.dropped);
  if (expect.redeliveries) {
    expect_equal(result, "redeliveries", *expect.redeliveries, result.stats.redeliveries);
  }
  std::vector<Invariant> violated;
  for (const Violation& violation : result.violations) violated.push_back(violation.invariant);
  std::sort(violated.begin(), violated.end());
  result.expectations.push_back(ExpectationResult{
      "violations", violated == expect.violations,
      "expected " + invariant_list(expect.violations) + ", got " + invariant_list(violated)});
  result.passed = std::all_of(result.expectations.begin(), result.expectations.end(),
                              [](const ExpectationResult& e) { return e.ok; });
}

// What a drop or restore of `index` takes away in this inbox, in words: the inbox registry's,
// when the mechanism keeps its key elsewhere (Marten's document), else the index's name.
std::string index_words(IndexName index, const Config& config) {
  const std::string_view key = index == IndexName::account_inbox_state
                                   ? account_inbox_kind(config.account_inbox).dropped_key_words
                                   : std::string_view();
  return key.empty() ? std::string(index_name(index)) : std::string(key);
}

std::string describe_step_in(const Step& step, const Config& config) {
  if (step.kind == StepKind::drop_index || step.kind == StepKind::restore_index) {
    return std::string(step.kind == StepKind::drop_index ? "drop index " : "restore index ") +
           index_words(step.index, config);
  }
  return describe_step(step);
}

RunResult run_scenario(const Scenario& scenario, const RunOptions& options) {
  size_t next = 0;
  return run_story(
      scenario,
      [&]() -> std::optional<Step> {
        if (next == scenario.steps.size()) return std::nullopt;
        return scenario.steps[next++];
      },
      options);
}

RunResult run_story(const Scenario& scenario, const std::function<std::optional<Step>()>& next_step,
                    const RunOptions& options) {
  WorldOptions world_options;
  world_options.seed = options.seed.value_or(scenario.seed);
  world_options.keep_trace = options.keep_trace;
  world_options.hash_trace = options.hash_trace;
  world_options.record_rows = options.record_rows || options.row_listener != nullptr;
  world_options.row_listener = options.row_listener;
  world_options.spill_databases = options.spill_databases;
  world_options.faults_in_memory_max = options.faults_in_memory_max;
  world_options.keep_final_tables = options.keep_final_tables;
  if (scenario.schedule) {
    // An explored order (docs/contract.md §8.3): its choices, then option 0 to the end.
    world_options.explore.enabled = true;
    world_options.explore.schedule = *scenario.schedule;
  }
  if (!options.db_dir.empty()) {
    std::filesystem::create_directories(options.db_dir);
    world_options.db_dir = options.db_dir;
    world_options.db_prefix = safe_file_stem(scenario.name) + ".";
  }
  World world(scenario, scenario.config, world_options);
  if (options.listener) world.trace().listener = options.listener;
  bool ends_with_run = false;
  while (std::optional<Step> step = next_step()) {
    world.mark_step(describe_step_in(*step, scenario.config));
    play_step(world, *step);
    ends_with_run = step->kind == StepKind::run;
    if (options.after_step) options.after_step(*step);
  }
  if (!ends_with_run) {
    world.mark_step("run until quiescent (end of the scenario)");
    world.run_until_quiescent();
  }
  if (scenario.schedule) play_story_end(world);
  RunResult result = world.finish();
  result.file = scenario.file;
  result.name = scenario.name;
  result.title = scenario.title;
  result.description = scenario.description;
  result.description_parts = shown_parts(scenario);
  result.lesson = scenario.lesson;
  result.seed = world_options.seed;
  evaluate_expectations(scenario.expect, result);
  return result;
}

}  // namespace inboxsim
