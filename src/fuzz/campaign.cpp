#include "fuzz/campaign.h"

#include <malloc.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <ostream>

#include "fuzz/parallel.h"
#include "fuzz/progress.h"
#include "fuzz/shrink.h"
#include "kernel/assert.h"
#include "kernel/file_names.h"
#include "scenario/parse.h"
#include "scenario/runner.h"
#include "scenario/write.h"

namespace inboxsim {

namespace {

constexpr size_t kNoCutoff = std::numeric_limits<size_t>::max();

using Clock = std::chrono::steady_clock;

int64_t elapsed_ms(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

// How many transfers the seeds running now have requested, for the progress line.
struct RunningTransfers {
  std::atomic<int64_t> done{0};
  std::atomic<int64_t> total{0};
  std::atomic<int64_t> done_per_million{0};  // sum over running seeds of their share, x 1e6
};

// A story of this many transfers or more keeps its databases in temporary files: a million
// transfers' ledger and sagas alone are about 210 MB of SQLite pages.
constexpr int64_t kSpillTransfersMin = 20'000;
// Such a story gives glibc's free memory back to the system (malloc_trim) after every this many
// transfers, and after each settling run of its ending: the messages, rows and events of
// finished transfers are freed between the allocations that last (the checker's facts, parked
// messages), and the pages they leave free would otherwise stay resident. A trim costs about a
// millisecond.
constexpr int64_t kTrimTransfers = 10'000;

// A long story's large vectors (the checker's facts, a fault book's spilled transfers, a
// batch of rows) grow by doubling. glibc raises its mmap threshold to the size of each mapped
// block freed, so the next generation is carved from a heap instead, and the freed copies stay
// resident there: a peak of several old copies at once. Fixed at 1 MiB, every such block is
// mapped and returned when freed. Process-wide, and only the memory's layout changes.
void keep_large_blocks_mapped() {
  constexpr int kMappedBytesMin = 1 << 20;
  mallopt(M_MMAP_THRESHOLD, kMappedBytesMin);
}

SeedOutcome run_seed(uint64_t seed, const GeneratorOptions& generator, RunningTransfers* running) {
  // The story is drawn as it is played (a long one is not held whole); progress counts its
  // transfers requested.
  StoryGenerator story(seed, generator);
  const int64_t transfers = story.drawn().transfers;
  int64_t played = 0;
  int64_t share = 0;  // this seed's part of running->done_per_million
  RunOptions options;
  options.keep_trace = false;
  options.hash_trace = false;  // as fuzz_run: a campaign never reads a seed's trace hash
  options.spill_databases = transfers >= kSpillTransfersMin;
  options.keep_final_tables = false;  // a seed's outcome is its verdict, stats and coverage
  if (running != nullptr) running->total.fetch_add(transfers);
  if (running != nullptr || options.spill_databases) {
    options.after_step = [&](const Step& step) {
      // The ending's settling runs free what the whole story's traffic left; trim after each.
      const bool ending = step.kind == StepKind::run && played == transfers;
      if (options.spill_databases && ending) malloc_trim(0);
      if (step.kind != StepKind::transfer) return;
      ++played;
      if (options.spill_databases && played % kTrimTransfers == 0) malloc_trim(0);
      if (running == nullptr) return;
      running->done.fetch_add(1);
      const int64_t now = played * 1'000'000 / std::max<int64_t>(transfers, 1);
      running->done_per_million.fetch_add(now - share);
      share = now;
    };
  }
  const RunResult result = run_story(story.header(), [&] { return story.next(); }, options);
  if (running != nullptr) {
    running->total.fetch_sub(transfers);
    running->done.fetch_sub(played);
    running->done_per_million.fetch_sub(share);
  }
  SeedOutcome outcome;
  outcome.seed = seed;
  outcome.drawn = story.drawn();
  outcome.stats = result.stats;
  outcome.coverage = result.coverage;
  for (const Violation& violation : result.violations)
    outcome.violated.push_back(violation.invariant);
  std::sort(outcome.violated.begin(), outcome.violated.end());
  outcome.violated.erase(std::unique(outcome.violated.begin(), outcome.violated.end()),
                         outcome.violated.end());
  return outcome;
}

// "120/1000 seeds, 3 failing, 850 seeds/s" (and the steps of a long seed while it runs).
std::string progress_counters(const CampaignProgress& progress, double seconds) {
  std::string text = std::to_string(progress.seeds_done) + "/" +
                     std::to_string(progress.seeds_total) + " seeds, " +
                     std::to_string(progress.failures) + " failing, " +
                     std::to_string(static_cast<int64_t>(
                         static_cast<double>(progress.seeds_done) / std::max(seconds, 1e-3))) +
                     " seeds/s";
  if (progress.transfers_total > 0 && progress.seeds_total - progress.seeds_done <= 4) {
    text += ", running: transfer " + std::to_string(progress.transfers_done) + "/" +
            std::to_string(progress.transfers_total);
  }
  return text;
}

Counterexample shrink_seed(const SeedOutcome& outcome, const CampaignOptions& options) {
  const Generated generated = generate_scenario(outcome.seed, options.generator);
  Counterexample out;
  out.seed = outcome.seed;
  out.invariant = outcome.violated.front();
  const ShrinkResult shrunk = shrink_scenario(generated.scenario, out.invariant);
  out.shrink_runs = shrunk.runs;
  out.scenario =
      make_counterexample(shrunk.scenario, outcome.seed, generated.drawn,
                          std::string(workload_name(options.generator.workload)), out.invariant);
  out.transfers = count_transfers(out.scenario);
  out.faults = count_faults(out.scenario);
  // Verify the file as a user will meet it: parsed back from its text and run.
  const std::string text = scenario_to_json(out.scenario).dump(2);
  ParseResult parsed = parse_scenario_text(text, out.scenario.name + ".json");
  if (parsed.scenario) {
    const RunResult replay = fuzz_run(*parsed.scenario);
    out.replay_verified =
        !replay.passed &&
        std::any_of(replay.violations.begin(), replay.violations.end(),
                    [&](const Violation& v) { return v.invariant == out.invariant; });
  }
  return out;
}

bool write_counterexample(const std::string& dir, Counterexample& cx) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  const std::filesystem::path path =
      std::filesystem::path(dir) / (safe_file_stem(cx.scenario.name) + ".json");
  std::ofstream file(path, std::ios::binary);
  file << scenario_to_json(cx.scenario).dump(2) << "\n";
  file.close();
  if (!file) return false;
  cx.path = path.string();
  return true;
}

}  // namespace

std::vector<uint64_t> shard_seeds(const CampaignOptions& options) {
  INBOXSIM_ASSERT(options.seed_first <= options.seed_last);
  INBOXSIM_ASSERT(options.shard_count >= 1);
  INBOXSIM_ASSERT(options.shard_index >= 1 && options.shard_index <= options.shard_count);
  std::vector<uint64_t> seeds;
  const auto count = static_cast<uint64_t>(options.shard_count);
  const auto remainder = static_cast<uint64_t>(options.shard_index - 1);
  for (uint64_t seed = options.seed_first;; ++seed) {
    if ((seed - options.seed_first) % count == remainder) seeds.push_back(seed);
    if (seed == options.seed_last) break;
  }
  return seeds;
}

// SQLite's default memory statistics take one process-wide mutex on every allocation, which
// serialises the workers' simulations. They must be turned off before SQLite initialises; if it
// already has (a database was opened first), this is a no-op and only speed suffers.
void disable_sqlite_memory_statistics() {
  static std::once_flag once;
  std::call_once(once, [] { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });
}

namespace {

// Adds up the seeds' outcomes in seed order: stats, coverage, the failures (up to stop_after),
// the invariants broken and the required coverage probes never reached.
CampaignResult sum_outcomes(const std::vector<SeedOutcome>& outcomes,
                            const std::vector<char>& done, const CampaignOptions& options) {
  CampaignResult result;
  int64_t failures_seen = 0;
  for (size_t index = 0; index < outcomes.size(); ++index) {
    INBOXSIM_ASSERT(done[index] != 0);
    const SeedOutcome& outcome = outcomes[index];
    ++result.seeds;
    result.stats += outcome.stats;
    result.coverage += outcome.coverage;
    for (size_t probe = 0; probe < kProbeCount; ++probe) {
      if (outcome.coverage.counts[probe] > 0) ++result.coverage_seeds.counts[probe];
    }
    if (outcome.failed()) {
      result.failures.push_back(outcome);
      for (const Invariant invariant : outcome.violated) result.violated.push_back(invariant);
      if (options.stop_after > 0 && ++failures_seen >= options.stop_after) break;
    }
  }
  std::sort(result.violated.begin(), result.violated.end());
  result.violated.erase(std::unique(result.violated.begin(), result.violated.end()),
                        result.violated.end());
  for (const Probe probe : options.required_coverage) {
    if (result.coverage[probe] == 0) result.coverage_missing.push_back(probe);
  }
  std::sort(result.coverage_missing.begin(), result.coverage_missing.end());
  result.coverage_missing.erase(
      std::unique(result.coverage_missing.begin(), result.coverage_missing.end()),
      result.coverage_missing.end());
  return result;
}

// Shrinks the lowest failing seeds, in parallel, then writes them in seed order; a file that
// cannot be written goes into write_errors.
void shrink_and_write(CampaignResult& result, const CampaignOptions& options) {
  const size_t shrink_count = std::min(
      result.failures.size(), static_cast<size_t>(std::max<int64_t>(0, options.shrink_max)));
  result.counterexamples.resize(shrink_count);
  parallel_for(
      shrink_count, options.jobs,
      [&](size_t i) { result.counterexamples[i] = shrink_seed(result.failures[i], options); },
      [](size_t) { return false; }, [] {});
  for (Counterexample& cx : result.counterexamples) {
    if (options.out_dir.empty() || write_counterexample(options.out_dir, cx)) continue;
    result.write_errors.push_back(
        (std::filesystem::path(options.out_dir) / (safe_file_stem(cx.scenario.name) + ".json"))
            .string());
  }
}

}  // namespace

CampaignResult run_campaign(const CampaignOptions& options, std::ostream* progress_stream) {
  INBOXSIM_ASSERT(options.jobs >= 1);
  disable_sqlite_memory_statistics();
  if (options.generator.transfers.value_or(0) >= kSpillTransfersMin) keep_large_blocks_mapped();
  const auto start = Clock::now();
  const std::vector<uint64_t> seeds = shard_seeds(options);
  std::vector<SeedOutcome> outcomes(seeds.size());
  std::vector<char> done(seeds.size(), 0);
  std::atomic<size_t> done_count{0};
  std::atomic<size_t> failure_count{0};
  std::atomic<size_t> cutoff{kNoCutoff};
  std::mutex failures_mutex;
  std::vector<size_t> failing_indexes;  // guarded by failures_mutex
  const bool show = options.progress && progress_stream != nullptr;
  std::optional<ProgressLine> line;
  if (show) line.emplace(*progress_stream, "fuzz");
  RunningTransfers running;
  RunningTransfers* running_transfers = show || options.on_progress ? &running : nullptr;

  auto work = [&](size_t index) {
    outcomes[index] = run_seed(seeds[index], options.generator, running_transfers);
    done[index] = 1;
    done_count.fetch_add(1);
    if (!outcomes[index].failed()) return;
    failure_count.fetch_add(1);
    if (options.stop_after <= 0) return;
    // Once stop_after failures are known, no seed past the last of them needs to run.
    std::lock_guard lock(failures_mutex);
    failing_indexes.push_back(index);
    std::sort(failing_indexes.begin(), failing_indexes.end());
    const auto needed = static_cast<size_t>(options.stop_after);
    if (failing_indexes.size() >= needed) {
      cutoff.store(std::min(cutoff.load(), failing_indexes[needed - 1]));
    }
  };
  auto stop = [&](size_t index) { return index > cutoff.load(); };
  auto tick = [&] {
    if (running_transfers == nullptr) return;
    CampaignProgress progress;
    progress.seeds_done = static_cast<int64_t>(done_count.load());
    progress.seeds_total = static_cast<int64_t>(seeds.size());
    progress.failures = static_cast<int64_t>(failure_count.load());
    progress.seeds_running_done = static_cast<double>(running.done_per_million.load()) / 1e6;
    progress.transfers_done = running.done.load();
    progress.transfers_total = running.total.load();
    if (options.on_progress) options.on_progress(progress);
    if (line) line->update(progress_counters(progress, line->elapsed_seconds()),
                           progress.fraction_done());
  };
  parallel_for(seeds.size(), options.jobs, work, stop, tick);

  CampaignResult result = sum_outcomes(outcomes, done, options);
  line.reset();  // erased: the summary follows
  shrink_and_write(result, options);
  result.wall_ms = elapsed_ms(start);
  return result;
}

}  // namespace inboxsim
