// Writing a Scenario back as a v1 scenario file (docs/contract.md §6).
//
// The fuzzer uses this to save a shrunk counterexample that `inboxsim run` replays, so the
// output must parse back into the same scenario: parse_scenario_text(scenario_to_json(s).dump())
// gives `s` again (with Scenario::file set to the label given to the parser).
#pragma once

#include <nlohmann/json.hpp>

#include "domain/scenario.h"

namespace inboxsim {

// Returns the scenario as a JSON object with keys in the order name, title, description (or
// setup, watch_for, why), lesson, seed, config, accounts, steps, expect, schedule. Empty texts, default config values, default
// fault fields and absent expectations are left out.
// REQUIRES: `scenario` is valid as parse_scenario_text() would accept it (e.g. every crash
// fault has a service, every fault that needs a match has one).
nlohmann::ordered_json scenario_to_json(const Scenario& scenario);

// A reachability goal as a file writes it: {"broken": ...}, {"probe": ...}, {"transfer": ...,
// "state": ...} or {"account": ..., "balance": ...}.
nlohmann::ordered_json goal_to_json(const Goal& goal);

// A schedule's hand actions as a file writes them: [{"at": N, STEP KEY: ...}, ...].
nlohmann::ordered_json actions_to_json(const Schedule& schedule);

}  // namespace inboxsim
