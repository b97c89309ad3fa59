// Views of an exploration (`inboxsim explore`, docs/contract.md §8.3): the JSON object and the human
// summary printed on stdout.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <vector>

#include "fuzz/explore.h"
#include "fuzz/matrix.h"

namespace inboxsim {

// The JSON object of one exploration: states, transitions, max_depth, complete, violations,
// counterexamples (paths), wall_ms, and as extensions what was explored and how.
nlohmann::ordered_json explore_json(const ExploreResult& result);

// Whether the search fails the story: an invariant broken that no reachable goal expects, or a
// goal the search decided against the story's claim (`inboxsim explore` exits 1).
bool explore_failed(const ExploreResult& result);

// What was explored and the verdict: "proven" (complete, nothing broken), "broken" (each
// violation with its shortest schedule and the command that replays it) or "incomplete".
void print_explore(std::ostream& out, const ExploreResult& result);

// `matrix --exhaustive`: the story, faults, fault_kinds, max_states, and "rows", one object per
// row (the defences, "verdict": proven, broken or unfinished, and the row's exploration as
// explore_json has it).
nlohmann::ordered_json exhaustive_matrix_json(const Scenario& story,
                                              const ExploreSettings& settings,
                                              const std::vector<ExhaustiveRow>& rows);

// The table: one line per combination with its verdict, the states explored and the broken
// invariants; under a broken row the command that replays its counterexample.
void print_exhaustive_matrix(std::ostream& out, const Scenario& story, const ExploreSettings& settings,
                             const std::vector<ExhaustiveRow>& rows);

// "proven", "broken" or "unfinished".
std::string_view exhaustive_verdict(const ExploreResult& result);

}  // namespace inboxsim
