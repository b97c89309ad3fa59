// `inboxsim explore` on the command line (DESIGN §8.3): flags in, src/fuzz/explore.h does the
// search, src/report/explore_view.h prints it.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace inboxsim {

struct ExploreCommand {
  std::vector<std::string> files;
  int64_t faults = 2;
  std::string fault_kinds;  // comma-separated; empty: every kind that needs no clock
  int64_t max_states = 2'000'000;
  int64_t jobs = 1;
  std::vector<std::string> sets;
  bool json = false;
  bool keep_going = false;
  std::string out_dir = "counterexamples";
};

// Declares `explore` and its options, filled into `command`.
CLI::App* add_explore_verb(CLI::App& app, ExploreCommand& command);

// Runs it; returns the exit code (0 nothing broken, 1 a violation, 2 bad input).
int explore_command(const ExploreCommand& command);

}  // namespace inboxsim
