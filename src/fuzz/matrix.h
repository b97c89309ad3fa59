// The defence matrix (`inboxsim matrix`): one fuzz campaign for each combination of the five
// defences (account inbox, ledger index, processed_messages index, state machine, stable
// message ids), printed as a table of which invariants break, each broken row with its shrunk
// counterexample. It answers the teacher's question "which defence is enough?".
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "fuzz/campaign.h"
#include "fuzz/explore.h"

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

// Returns `base` with the five defences set as `defences` says. The inbox defence is the base's
// account.inbox when its registry row is a defence (masstransit, marten), else MassTransit's;
// off, it is none.
Config config_with_defences(const Config& base, const std::array<bool, kDefenceCount>& defences);

// Runs one campaign per combination, every defence on first, every defence off last.
std::vector<MatrixRow> run_matrix(const MatrixOptions& options, std::ostream* progress_stream);

// The exhaustive matrix (`matrix --exhaustive`): instead of a campaign of random seeds, one
// exploration per combination of one small story (explore.h). A row is proven when the search
// completed and found nothing (no order of the story with at most K faults of the listed kinds
// breaks an invariant), broken with the shortest order found, or unfinished when the state
// budget stopped it first.
struct ExhaustiveRow {
  std::array<bool, kDefenceCount> defences{};
  Scenario story;        // the story with this row's defences (and its own name)
  ExploreResult result;  // counterexamples' `path` filled in by whoever writes them
};

// The default story: one transfer that succeeds, and the story's end, run to quiescence. Small
// enough that every row of 32 finishes: a second transfer multiplies the orders.
Scenario exhaustive_matrix_story();

// " all defences on" → "all-on"; otherwise the defences switched off, "no-inbox-no-ledger".
std::string defences_off_tag(const std::array<bool, kDefenceCount>& defences);

// Explores `story` once per combination, every defence on first, every defence off last;
// `row_done` is called after each row (progress, writing counterexamples), one call at a time.
// With dynamic partial-order reduction (one depth-first walk a row), the rows are spread over
// `settings.jobs` threads: they end, and `row_done` is called, in any order, and the rows come
// back in combination order, each the same search as alone. Otherwise they run one by one, each
// over the jobs.
// REQUIRES: !clockless_refusal(story), !story.schedule.
std::vector<ExhaustiveRow> run_exhaustive_matrix(
    const Scenario& story, const ExploreSettings& settings,
    const std::function<void(size_t index, ExhaustiveRow& row)>& row_done);

}  // namespace inboxsim
