// `inboxsim explore` on the command line (docs/contract.md §8.3): flags in, src/fuzz/explore.h does the
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
  int64_t ack_wait_expiries = 1;  // --ack-wait-expiries N (broker.kind = jetstream only)
  int64_t max_states = 2'000'000;
  int64_t jobs = 1;
  std::vector<std::string> sets;
  bool json = false;
  bool keep_going = false;
  // The reductions used, or none; empty: dpor,persistent.
  std::string reduction;
  std::string operator_mode = "redrive";  // redrive (rounds appended when K > 0) or none
  std::string out_dir = "counterexamples";
  int64_t preemptions = -1;  // --preemptions P; -1: no bound
};

struct ExploreResult;

// Writes each counterexample of `result` into `dir` (its path set in it) and checks that
// `inboxsim run` replays it to the same violation. Returns false when one cannot be written.
bool write_counterexamples(const std::string& dir, ExploreResult& result);

// Declares `explore` and its options, filled into `command`.
CLI::App* add_explore_verb(CLI::App& app, ExploreCommand& command);

// Runs it; returns the exit code (0 nothing broken, 1 a violation, 2 bad input).
int explore_command(const ExploreCommand& command);

// `matrix --exhaustive`: the options it adds to `matrix`, and the command. `jobs`, `sets`,
// `json` and `out_dir` are matrix's own options, copied in by the caller.
struct ExhaustiveMatrixCommand {
  bool exhaustive = false;
  std::string story;  // a scenario file; empty: the built-in one-transfer story
  int64_t faults = 0;
  std::string fault_kinds;  // empty: kExhaustiveMatrixKinds
  int64_t ack_wait_expiries = 1;  // as ExploreCommand's
  int64_t max_states = 300'000;
  std::string operator_mode = "redrive";  // as ExploreCommand's
  int64_t jobs = 1;
  std::vector<std::string> sets;
  bool json = false;
  std::string out_dir = "counterexamples";
};

void add_exhaustive_matrix_options(CLI::App& matrix, ExhaustiveMatrixCommand& command);

int exhaustive_matrix_command(const ExhaustiveMatrixCommand& command);

}  // namespace inboxsim
