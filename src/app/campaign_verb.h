// `inboxsim fuzz` and `inboxsim matrix` on the command line (docs/contract.md §5): the options as
// typed; src/fuzz/ runs the campaigns and src/report/campaign_view.h prints them.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/explore_verb.h"

namespace inboxsim {

// The options `fuzz` and `matrix` share: which seeds, what stories, how many workers.
struct CampaignFlags {
  std::string seeds;
  std::string workload = "standard";
  bool swarm = false;
  std::vector<std::string> sets;
  int64_t jobs = 1;
  std::string out_dir = "counterexamples";
  bool json = false;
};

inline CampaignFlags campaign_flags(std::string default_seeds) {
  CampaignFlags flags;
  flags.seeds = std::move(default_seeds);
  return flags;
}

struct FuzzCommand {
  CampaignFlags campaign = campaign_flags("1..1000");
  std::optional<int64_t> transfers;
  std::optional<int64_t> accounts;
  std::optional<int64_t> rate_per_second;
  std::string shard = "1/1";
  std::string junit_path;
  int64_t shrink_max = 3;
  int64_t stop_after = 0;
  std::vector<std::string> require_coverage;  // probe names, as typed
};

struct MatrixCommand {
  CampaignFlags campaign = campaign_flags("1..100");
  ExhaustiveMatrixCommand exhaustive;
  // Which options were typed: --exhaustive takes no seeds, and its own options need it.
  std::vector<std::string> campaign_only_given;
  std::vector<std::string> exhaustive_only_given;
};

// Declare `fuzz` and `matrix` and their options, filled into `command`.
CLI::App* add_fuzz_verb(CLI::App& app, FuzzCommand& command);
CLI::App* add_matrix_verb(CLI::App& app, MatrixCommand& command);

// Run them; return the exit code (fuzz: 0 no seed failed; matrix: 0 no failure with every
// defence on; 1 otherwise; 2 bad input).
int fuzz_command(const FuzzCommand& command);
int matrix_command(const MatrixCommand& command);

}  // namespace inboxsim
