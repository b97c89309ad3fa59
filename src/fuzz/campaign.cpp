#include "fuzz/campaign.h"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <ostream>
#include <thread>

#include "fuzz/shrink.h"
#include "report/html.h"         // escape_html, also right for XML text and attributes
#include "report/json_output.h"  // stats_json
#include "scenario/parse.h"
#include "scenario/write.h"
#include "sim/assert.h"

namespace inboxsim {

namespace {

constexpr int64_t kJobsMax = 256;
constexpr auto kProgressInterval = std::chrono::milliseconds(200);
constexpr size_t kFailuresPrintedMax = 20;
constexpr size_t kNoCutoff = std::numeric_limits<size_t>::max();

using Clock = std::chrono::steady_clock;

int64_t elapsed_ms(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
}

SeedOutcome run_seed(uint64_t seed, const GeneratorOptions& generator) {
  const Generated generated = generate_scenario(seed, generator);
  const RunResult result = fuzz_run(generated.scenario);
  SeedOutcome outcome;
  outcome.seed = seed;
  outcome.drawn = generated.drawn;
  outcome.stats = result.stats;
  for (const Violation& violation : result.violations)
    outcome.violated.push_back(violation.invariant);
  std::sort(outcome.violated.begin(), outcome.violated.end());
  outcome.violated.erase(std::unique(outcome.violated.begin(), outcome.violated.end()),
                         outcome.violated.end());
  return outcome;
}

// Runs `work(i)` for i in [0, count) on `jobs` threads; `stop(i)` is asked before claiming i.
// Claims are in increasing order, so once stop(i) holds for some i it may be assumed to hold
// for every later one.
template <typename Work, typename Stop, typename Tick>
void parallel_for(size_t count, int64_t jobs, Work work, Stop stop, Tick tick) {
  std::atomic<size_t> next{0};
  std::atomic<size_t> running{0};
  auto worker = [&] {
    for (;;) {
      const size_t index = next.fetch_add(1);
      if (index >= count || stop(index)) break;
      work(index);
    }
    running.fetch_sub(1);
  };
  const auto threads_count = static_cast<size_t>(std::min<int64_t>(jobs, kJobsMax));
  running.store(threads_count);
  std::vector<std::thread> threads;
  threads.reserve(threads_count);
  for (size_t t = 0; t < threads_count; ++t) threads.emplace_back(worker);
  while (running.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    tick();
  }
  for (std::thread& thread : threads) thread.join();
}

class Progress {
 public:
  Progress(std::ostream* stream, size_t total) : stream_(stream), total_(total) {}
  void maybe_print(size_t done, size_t failures, bool final_line = false) {
    if (stream_ == nullptr) return;
    const auto now = Clock::now();
    if (!final_line && now - last_ < kProgressInterval) return;
    last_ = now;
    const double seconds = std::max(1e-3, std::chrono::duration<double>(now - start_).count());
    *stream_ << "\rfuzz: " << done << "/" << total_ << " seeds, "
             << static_cast<int64_t>(static_cast<double>(done) / seconds) << " seeds/s, "
             << failures << " failing" << (final_line ? "\n" : "   ") << std::flush;
  }

 private:
  std::ostream* stream_;
  size_t total_;
  Clock::time_point start_ = Clock::now();
  Clock::time_point last_ = Clock::now();
};

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
  const std::filesystem::path path = std::filesystem::path(dir) / (cx.scenario.name + ".json");
  std::ofstream file(path, std::ios::binary);
  file << scenario_to_json(cx.scenario).dump(2) << "\n";
  file.close();
  if (!file) return false;
  cx.path = path.string();
  return true;
}

std::string invariants_text(const std::vector<Invariant>& invariants) {
  std::string text;
  for (const Invariant invariant : invariants) {
    if (!text.empty()) text += ", ";
    text += invariant_name(invariant);
  }
  return text;
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

CampaignResult run_campaign(const CampaignOptions& options, std::ostream* progress_stream) {
  INBOXSIM_ASSERT(options.jobs >= 1);
  disable_sqlite_memory_statistics();
  const auto start = Clock::now();
  const std::vector<uint64_t> seeds = shard_seeds(options);
  std::vector<SeedOutcome> outcomes(seeds.size());
  std::vector<char> done(seeds.size(), 0);
  std::atomic<size_t> done_count{0};
  std::atomic<size_t> failure_count{0};
  std::atomic<size_t> cutoff{kNoCutoff};
  std::mutex failures_mutex;
  std::vector<size_t> failing_indexes;  // guarded by failures_mutex
  Progress progress(options.progress ? progress_stream : nullptr, seeds.size());

  auto work = [&](size_t index) {
    outcomes[index] = run_seed(seeds[index], options.generator);
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
  auto tick = [&] { progress.maybe_print(done_count.load(), failure_count.load()); };
  parallel_for(seeds.size(), options.jobs, work, stop, tick);

  CampaignResult result;
  int64_t failures_seen = 0;
  for (size_t index = 0; index < seeds.size(); ++index) {
    INBOXSIM_ASSERT(done[index] != 0);
    const SeedOutcome& outcome = outcomes[index];
    ++result.seeds;
    result.stats += outcome.stats;
    if (outcome.failed()) {
      result.failures.push_back(outcome);
      for (const Invariant invariant : outcome.violated) result.violated.push_back(invariant);
      if (options.stop_after > 0 && ++failures_seen >= options.stop_after) break;
    }
  }
  std::sort(result.violated.begin(), result.violated.end());
  result.violated.erase(std::unique(result.violated.begin(), result.violated.end()),
                        result.violated.end());
  progress.maybe_print(static_cast<size_t>(result.seeds), result.failures.size(), true);

  // Shrink the lowest failing seeds, in parallel, then write them in seed order.
  const size_t shrink_count = std::min(
      result.failures.size(), static_cast<size_t>(std::max<int64_t>(0, options.shrink_max)));
  result.counterexamples.resize(shrink_count);
  parallel_for(
      shrink_count, options.jobs,
      [&](size_t i) { result.counterexamples[i] = shrink_seed(result.failures[i], options); },
      [](size_t) { return false; }, [] {});
  for (Counterexample& cx : result.counterexamples) {
    if (!options.out_dir.empty()) write_counterexample(options.out_dir, cx);
  }
  result.wall_ms = elapsed_ms(start);
  return result;
}

nlohmann::ordered_json campaign_json(const CampaignOptions& options, const CampaignResult& result) {
  nlohmann::ordered_json out;
  out["seeds"] = result.seeds;
  out["failures"] = result.failures.size();
  nlohmann::ordered_json failed = nlohmann::ordered_json::array();
  for (const SeedOutcome& outcome : result.failures) failed.push_back(outcome.seed);
  out["failed_seeds"] = failed;
  nlohmann::ordered_json paths = nlohmann::ordered_json::array();
  for (const Counterexample& cx : result.counterexamples) {
    if (!cx.path.empty()) paths.push_back(cx.path);
  }
  out["counterexamples"] = paths;
  out["stats"] = stats_json(result.stats);
  out["wall_ms"] = result.wall_ms;
  // Extensions: what broke, and under which options.
  nlohmann::ordered_json violated = nlohmann::ordered_json::array();
  for (const Invariant invariant : result.violated) violated.push_back(invariant_name(invariant));
  out["violated"] = violated;
  out["workload"] = workload_name(options.generator.workload);
  out["swarm"] = options.generator.swarm;
  out["config"] = config_diff_json(options.generator.config);
  nlohmann::ordered_json details = nlohmann::ordered_json::array();
  for (const SeedOutcome& outcome : result.failures) {
    nlohmann::ordered_json entry;
    entry["seed"] = outcome.seed;
    nlohmann::ordered_json names = nlohmann::ordered_json::array();
    for (const Invariant invariant : outcome.violated) names.push_back(invariant_name(invariant));
    entry["violated"] = names;
    entry["options"] = describe_drawn(outcome.drawn);
    details.push_back(entry);
  }
  out["failed"] = details;
  return out;
}

std::string campaign_junit(const CampaignOptions& options, const CampaignResult& result) {
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += "<testsuites>\n<testsuite name=\"inboxsim fuzz\" tests=\"" + std::to_string(result.seeds) +
         "\" failures=\"" + std::to_string(result.failures.size()) + "\" errors=\"0\" time=\"" +
         std::to_string(static_cast<double>(result.wall_ms) / 1000.0) + "\">\n";
  const std::vector<uint64_t> seeds = shard_seeds(options);
  size_t failure = 0;
  for (size_t i = 0; i < static_cast<size_t>(result.seeds); ++i) {
    const uint64_t seed = seeds[i];
    xml += "  <testcase classname=\"inboxsim.fuzz\" name=\"seed " + std::to_string(seed) + "\"";
    if (failure < result.failures.size() && result.failures[failure].seed == seed) {
      const SeedOutcome& outcome = result.failures[failure++];
      std::string body = "options: " + describe_drawn(outcome.drawn);
      for (const Counterexample& cx : result.counterexamples) {
        if (cx.seed == seed && !cx.path.empty()) body += "\nreplay: inboxsim run " + cx.path;
      }
      xml += ">\n    <failure message=\"" + escape_html(invariants_text(outcome.violated)) + "\">" +
             escape_html(body) + "</failure>\n  </testcase>\n";
    } else {
      xml += "/>\n";
    }
  }
  xml += "</testsuite>\n</testsuites>\n";
  return xml;
}

void print_campaign(std::ostream& out, const CampaignOptions& options,
                    const CampaignResult& result) {
  for (size_t i = 0; i < result.failures.size() && i < kFailuresPrintedMax; ++i) {
    const SeedOutcome& outcome = result.failures[i];
    out << "FAIL  seed " << outcome.seed << ": " << invariants_text(outcome.violated)
        << "\n      options: " << describe_drawn(outcome.drawn) << "\n";
  }
  if (result.failures.size() > kFailuresPrintedMax) {
    out << "      ... and " << result.failures.size() - kFailuresPrintedMax
        << " more failing seeds\n";
  }
  for (const Counterexample& cx : result.counterexamples) {
    out << "counterexample for seed " << cx.seed << " (" << invariant_name(cx.invariant)
        << "): " << cx.transfers << " transfer(s), " << cx.faults << " fault(s), " << cx.shrink_runs
        << " shrink runs"
        << (cx.replay_verified ? "" : "; WARNING: the written file did not replay the failure")
        << "\n";
    if (!cx.path.empty()) out << "  replay: inboxsim run " << cx.path << "\n";
  }
  const nlohmann::ordered_json config = config_diff_json(options.generator.config);
  out << (result.failures.empty() ? "PASS" : "FAIL") << "  fuzz: " << result.seeds << " seeds, "
      << result.failures.size() << " failing (workload "
      << workload_name(options.generator.workload) << (options.generator.swarm ? ", swarm" : "")
      << ", config " << (config.empty() ? std::string("default") : config.dump()) << ")\n";
}

bool parse_seed_range(const std::string& text, uint64_t& first, uint64_t& last) {
  auto parse = [](std::string_view part, uint64_t& value) {
    const char* end = part.data() + part.size();
    const auto [ptr, error] = std::from_chars(part.data(), end, value);
    return error == std::errc() && ptr == end && !part.empty();
  };
  const size_t dots = text.find("..");
  if (dots == std::string::npos) {
    if (!parse(text, first)) return false;
    last = first;
    return true;
  }
  const std::string_view view(text);
  return parse(view.substr(0, dots), first) && parse(view.substr(dots + 2), last) && first <= last;
}

bool parse_shard(const std::string& text, int64_t& index, int64_t& count) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos) return false;
  const std::string_view view(text);
  auto parse = [](std::string_view part, int64_t& value) {
    const char* end = part.data() + part.size();
    const auto [ptr, error] = std::from_chars(part.data(), end, value);
    return error == std::errc() && ptr == end && !part.empty();
  };
  return parse(view.substr(0, slash), index) && parse(view.substr(slash + 1), count) &&
         count >= 1 && index >= 1 && index <= count;
}

}  // namespace inboxsim
