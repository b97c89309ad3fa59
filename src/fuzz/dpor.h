// Dynamic partial-order reduction for `inboxsim explore` (docs/model.md, "Exploration"):
// source-DPOR (Abdulla, Aronis, Jonsson and Sagonas, "Optimal Dynamic Partial Order
// Reduction", POPL 2014, Algorithm 1) with sleep sets, over the footprints a run's events
// leave in World's event log. Depth-first and stateless: each execution is one replay of the
// story that takes the explorer's choice at every point past the schedule.
//
// Also what the breadth-first search in explore.cpp shares with it (internal to src/fuzz).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/explore.h"
#include "kernel/footprint.h"

namespace inboxsim {

class World;

// ExploreResult::ack_wait_expiries of a search of `scenario`: the settings' budget on a
// jetstream story, -1 on a broker with no ack wait.
int64_t ack_wait_bound(const Scenario& scenario, const ExploreSettings& settings);
// The schedule that takes `choices` from the story's start (or from settings.from).
Schedule explore_schedule(const std::vector<uint16_t>& choices, const ExploreSettings& settings);
// Plays the explored story on `world` until it ends or the run stops for the explorer; each
// step that is not a run is a story point of the event log.
void play_explored(World& world, const Scenario& scenario, const ExploreSettings& settings);
// Names, titles and describes the counterexamples found (`inboxsim run` replays them).
void name_counterexamples(ExploreResult& result, const Scenario& scenario);

// The search with ExploreSettings::dpor: `scenario` is the explored story (operator rounds
// appended).
ExploreResult explore_dpor(const Scenario& scenario, const ExploreSettings& settings);

}  // namespace inboxsim
