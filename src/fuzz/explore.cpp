#include "fuzz/explore.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <thread>
#include <unordered_set>

#include "kernel/assert.h"
#include "scenario/runner.h"
#include "world/world.h"

namespace inboxsim {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kJobsMax = 256;

// A node of the search: the choices that reach it from the story's start. Choices are small
// (an index among the events pending, or a fault's yes/no); 16 bits keep a million nodes
// cheap.
using Choices = std::vector<uint16_t>;

struct FingerprintHash {
  size_t operator()(const Fingerprint& print) const { return static_cast<size_t>(print.low); }
};

// What replaying one node found.
struct NodeRun {
  ExploreOutcome outcome;
  bool ended = false;  // the story ended with nothing pending (a leaf)
  Fingerprint leaf_state;
  std::vector<Violation> violations;
};

Schedule schedule_of(const Choices& choices, const ExploreSettings& settings) {
  Schedule schedule;
  schedule.faults = settings.faults;
  schedule.fault_kinds = settings.fault_kinds;
  schedule.choices.assign(choices.begin(), choices.end());
  return schedule;
}

// Builds a world, plays the story along `choices` and stops at the first choice past them
// where several events may happen next, or at a violation, or at the story's end.
NodeRun run_node(const Scenario& scenario, const Choices& choices,
                 const ExploreSettings& settings) {
  WorldOptions options;
  options.seed = scenario.seed;
  options.keep_trace = false;
  options.explore.enabled = true;
  options.explore.stop_at_frontier = true;
  options.explore.schedule = schedule_of(choices, settings);
  World world(scenario, scenario.config, options);
  for (const Step& step : scenario.steps) {
    play_step(world, step);
    if (world.exploration_stopped()) break;
  }
  if (!world.exploration_stopped()) world.run_until_quiescent();
  NodeRun run;
  if (!world.exploration_stopped()) {
    // The story ended: the state is final. Its fingerprint first (finish() reads on).
    run.ended = true;
    run.leaf_state = world.fingerprint();
    const RunResult result = world.finish();
    run.violations = result.violations;
  } else {
    run.violations = world.violations();
  }
  run.outcome = world.explore_outcome();
  INBOXSIM_ASSERT(!run.outcome.misfit);
  return run;
}

// Runs `work(i)` for every i in [0, count) on up to `jobs` threads.
template <typename Work>
void parallel_for(size_t count, int64_t jobs, Work work) {
  const auto threads_count = static_cast<size_t>(
      std::clamp<int64_t>(std::min<int64_t>(jobs, static_cast<int64_t>(count)), 1, kJobsMax));
  if (threads_count <= 1) {
    for (size_t i = 0; i < count; ++i) work(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  threads.reserve(threads_count);
  for (size_t t = 0; t < threads_count; ++t) {
    threads.emplace_back([&] {
      for (size_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) work(i);
    });
  }
  for (std::thread& thread : threads) thread.join();
}

std::string counterexample_description(const ExploreResult& result, const Violation& violation,
                                       size_t choices) {
  std::string kinds;
  for (size_t kind = 0; kind < kFaultKindCount; ++kind) {
    if (!result.fault_kinds[kind]) continue;
    if (!kinds.empty()) kinds += ", ";
    kinds += fault_kind_name(static_cast<FaultKind>(kind));
  }
  return "Found by `inboxsim explore` (at most " + std::to_string(result.faults) +
         " fault(s) of: " + (kinds.empty() ? std::string("none") : kinds) +
         "): one of the shortest orders of this story that breaks " +
         std::string(invariant_name(violation.invariant)) + " (" + std::to_string(choices) +
         " choices). `schedule` replays it exactly; the expectations are what a correct bank "
         "does, so replaying this file fails until the bug is fixed.";
}

}  // namespace

std::array<bool, kFaultKindCount> default_explore_fault_kinds() {
  std::array<bool, kFaultKindCount> kinds{};
  for (size_t kind = 0; kind < kFaultKindCount; ++kind) {
    kinds[kind] = explorable_fault_kind(static_cast<FaultKind>(kind));
  }
  return kinds;
}

ExploreResult explore(const Scenario& scenario, const ExploreSettings& settings) {
  INBOXSIM_ASSERT(!clockless_refusal(scenario));
  const Clock::time_point start = Clock::now();
  ExploreResult result;
  result.file = scenario.file;
  result.name = scenario.name;
  result.faults = settings.faults;
  result.fault_kinds = settings.fault_kinds;

  // Breadth-first by schedule length: a level's nodes are replayed in parallel and their
  // results taken in node order, so the search (and which counterexample is found first) is
  // the same with any number of jobs.
  std::map<size_t, std::vector<Choices>> levels;
  levels[0].push_back(Choices{});
  std::unordered_set<Fingerprint, FingerprintHash> visited;
  std::vector<bool> found(kInvariantCount, false);
  bool stopped = false;
  while (!levels.empty() && !stopped) {
    auto level = levels.begin();
    const size_t length = level->first;
    std::vector<Choices> nodes = std::move(level->second);
    levels.erase(level);
    result.max_depth = std::max<int64_t>(result.max_depth, static_cast<int64_t>(length));
    // Large levels go in batches, so progress is visible and --max-states stops early.
    constexpr size_t kBatch = 4096;
    for (size_t first = 0; first < nodes.size() && !stopped; first += kBatch) {
      const size_t count = std::min(kBatch, nodes.size() - first);
      std::vector<NodeRun> runs(count);
      parallel_for(count, settings.jobs,
                   [&](size_t i) { runs[i] = run_node(scenario, nodes[first + i], settings); });
      result.replays += static_cast<int64_t>(count);
      for (size_t i = 0; i < count; ++i) {
        const Choices& node = nodes[first + i];
        const NodeRun& run = runs[i];
        ++result.transitions;
        // The choices this replay made past the node, each option 0: their other options are
        // nodes of their own.
        Choices path = node;
        for (const uint32_t options : run.outcome.defaults) {
          INBOXSIM_ASSERT(options <= 0xffff);
          for (uint32_t option = 1; option < options; ++option) {
            Choices branch = path;
            branch.push_back(static_cast<uint16_t>(option));
            levels[branch.size()].push_back(std::move(branch));
          }
          path.push_back(0);
        }
        result.max_depth = std::max<int64_t>(result.max_depth, static_cast<int64_t>(path.size()));
        if (!run.violations.empty()) {
          for (const Violation& violation : run.violations) {
            const auto invariant = static_cast<size_t>(violation.invariant);
            if (found[invariant]) continue;
            found[invariant] = true;
            ExploreCounterexample cx;
            cx.invariant = violation.invariant;
            cx.detail = violation.detail;
            cx.scenario = scenario;
            Choices trimmed = path;
            while (!trimmed.empty() && trimmed.back() == 0) trimmed.pop_back();
            cx.scenario.schedule = schedule_of(trimmed, settings);
            cx.choices = trimmed.size();
            cx.scenario.expect = Expect{};
            result.counterexamples.push_back(std::move(cx));
          }
          continue;  // a broken state is a counterexample, not a place to go on from
        }
        const Fingerprint state = run.ended ? run.leaf_state : run.outcome.state;
        if (!visited.insert(state).second) {
          ++result.revisits;
          continue;
        }
        ++result.states;
        if (run.ended) {
          ++result.leaves;
        } else {
          INBOXSIM_ASSERT(run.outcome.at_frontier);
          INBOXSIM_ASSERT(run.outcome.enabled <= 0xffff);
          for (size_t option = 0; option < run.outcome.enabled; ++option) {
            Choices next = path;
            next.push_back(static_cast<uint16_t>(option));
            levels[next.size()].push_back(std::move(next));
          }
        }
        if (result.states >= settings.max_states) stopped = true;
      }
      if (settings.progress) {
        int64_t frontier = static_cast<int64_t>(nodes.size() - first - count);
        for (const auto& [depth, waiting] : levels) frontier += static_cast<int64_t>(waiting.size());
        settings.progress(result.states, result.transitions, frontier,
                          static_cast<int64_t>(length));
      }
    }
  }
  result.complete = !stopped && levels.empty();
  for (ExploreCounterexample& cx : result.counterexamples) {
    cx.scenario.name = scenario.name + "-explored-" + std::string(invariant_name(cx.invariant));
    cx.scenario.title = scenario.title.empty()
                            ? "Explored: " + std::string(invariant_name(cx.invariant)) + " breaks"
                            : scenario.title + " (explored: " +
                                  std::string(invariant_name(cx.invariant)) + " breaks)";
    cx.scenario.description =
        counterexample_description(result, Violation{cx.invariant, cx.detail, 0}, cx.choices);
  }
  result.wall_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  return result;
}

}  // namespace inboxsim
