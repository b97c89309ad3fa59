// A fuzz campaign (docs/contract.md §5 `inboxsim fuzz`): many seeds, each a generated story run to the
// end and checked; failures shrunk to counterexample files.
//
// Seeds run on `jobs` worker threads, each simulation single-threaded and independent of the
// others. Results are kept by seed and merged in seed order, and which failures get shrunk is
// decided by seed order too, so every output except wall-clock timing is identical for any
// number of jobs.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "domain/result.h"
#include "fuzz/generator.h"

namespace inboxsim {

// How far a running campaign is, for a progress line (never for its result).
struct CampaignProgress {
  int64_t seeds_done = 0;
  int64_t seeds_total = 0;
  int64_t failures = 0;
  // The seeds still running, each counted by the share of its story's transfers requested:
  // with one long seed, this is what moves.
  double seeds_running_done = 0;
  int64_t transfers_done = 0;  // requested, in the seeds running now
  int64_t transfers_total = 0;
  double fraction_done() const {
    if (seeds_total == 0) return 1.0;
    return (static_cast<double>(seeds_done) + seeds_running_done) /
           static_cast<double>(seeds_total);
  }
};

struct CampaignOptions {
  uint64_t seed_first = 1;
  uint64_t seed_last = 1000;
  int64_t shard_index = 1;  // this shard, 1-based: seeds whose position % count == index - 1
  int64_t shard_count = 1;
  int64_t jobs = 1;
  GeneratorOptions generator;
  // The --set assignments as typed, for the command that replays a seed: a key set to its
  // default still pins what the generator would otherwise draw, so the config alone is not
  // enough to say how a seed ran.
  std::vector<std::string> sets;
  std::string out_dir = "counterexamples";  // empty: shrink but write nothing
  int64_t shrink_max = 3;                   // failing seeds shrunk and saved, lowest seeds first
  int64_t stop_after = 0;  // stop after this many failing seeds (0: run every seed)
  bool progress = false;   // a live progress line on `progress_stream`
  // Called now and then (about every 20 ms, on the calling thread) while the seeds run, for a
  // caller that draws its own progress (the matrix).
  std::function<void(const CampaignProgress&)> on_progress;
  // Probes the campaign must reach (fuzz --require-coverage): each one never reached is
  // reported in CampaignResult::coverage_missing.
  std::vector<Probe> required_coverage;
};

struct SeedOutcome {
  uint64_t seed = 0;
  std::vector<Invariant> violated;  // sorted
  DrawnOptions drawn;
  Stats stats;
  Coverage coverage;
  bool failed() const { return !violated.empty(); }
};

struct Counterexample {
  uint64_t seed = 0;
  Invariant invariant = Invariant::conservation;
  std::string path;   // empty when nothing was written
  Scenario scenario;  // the file's content
  int64_t transfers = 0;
  int64_t faults = 0;
  int64_t shrink_runs = 0;
  bool replay_verified = false;  // parsed back from its JSON and still breaks the invariant
};

struct CampaignResult {
  int64_t seeds = 0;                            // seeds actually run
  std::vector<SeedOutcome> failures;            // in seed order
  std::vector<Counterexample> counterexamples;  // in seed order
  Stats stats;
  Coverage coverage;                    // each probe's count, summed over the seeds run
  Coverage coverage_seeds;              // for each probe, how many seeds reached it at least once
  std::vector<Probe> coverage_missing;  // required probes that no seed reached, in probe order
  int64_t wall_ms = 0;
  std::vector<Invariant> violated;        // every invariant any seed broke, sorted
  std::vector<std::string> write_errors;  // counterexample files that could not be written
};

// Runs the campaign. Progress (seeds done, failures, seeds/s, time left) goes to
// `progress_stream` when options.progress is set (the CLI sets it only on a terminal).
// REQUIRES: seed_first <= seed_last, 1 <= shard_index <= shard_count, jobs >= 1.
CampaignResult run_campaign(const CampaignOptions& options, std::ostream* progress_stream);

// The seeds a shard runs: positions in [seed_first, seed_last] with the given remainder.
std::vector<uint64_t> shard_seeds(const CampaignOptions& options);

}  // namespace inboxsim
