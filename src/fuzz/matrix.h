// The defence matrix (`inboxsim matrix`): one fuzz campaign for each combination of the five
// defences (account inbox, ledger index, processed_messages index, state machine, stable
// message ids), printed as a table of which invariants break, each broken row with its shrunk
// counterexample. It answers the teacher's question "which defence is enough?".
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "fuzz/campaign.h"

namespace inboxsim {

inline constexpr size_t kDefenceCount = 5;

struct MatrixRow {
  std::array<bool, kDefenceCount> defences{};  // in the order of defence_names()
  Config config;
  int64_t seeds = 0;
  int64_t failing_seeds = 0;
  std::vector<Invariant> violated;
  std::string counterexample;             // path of the shrunk counterexample, if the row broke
  std::vector<std::string> write_errors;  // counterexample files that could not be written
};

struct MatrixOptions {
  uint64_t seed_first = 1;
  uint64_t seed_last = 100;
  int64_t jobs = 1;
  GeneratorOptions generator;  // its config is the base every row changes
  std::string out_dir = "counterexamples";
};

const std::array<std::string_view, kDefenceCount>& defence_names();

// Returns `base` with the five defences set as `defences` says.
Config config_with_defences(const Config& base, const std::array<bool, kDefenceCount>& defences);

// Runs one campaign per combination, every defence on first, every defence off last.
std::vector<MatrixRow> run_matrix(const MatrixOptions& options, std::ostream* progress_stream);

}  // namespace inboxsim
