// Views of an exploration (`inboxsim explore`, DESIGN §8.3): the JSON object and the human
// summary printed on stdout.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <vector>

#include "fuzz/explore.h"

namespace inboxsim {

// The JSON object of one exploration: states, transitions, max_depth, complete, violations,
// counterexamples (paths), wall_ms, and as extensions what was explored and how.
nlohmann::ordered_json explore_json(const ExploreResult& result);

// What was explored and the verdict: "proven" (complete, nothing broken), "broken" (each
// violation with its shortest schedule and the command that replays it) or "incomplete".
void print_explore(std::ostream& out, const ExploreResult& result);

}  // namespace inboxsim
