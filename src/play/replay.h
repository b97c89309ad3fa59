// What the playground's moment.cpp and moment_explore.cpp share: one replay of a story along a
// schedule, and the moves it made. Not an interface: the server asks play/moment.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "play/moment.h"
#include "world/world.h"

namespace inboxsim {

// One replay of a story along a schedule, kept alive for the questions asked of it.
struct Replay {
  std::unique_ptr<World> world;
  bool ended = false;  // the story is over: nothing pending, no step or action left
  Schedule canonical;  // the schedule of the moment it reached, every choice step by step
};

struct ReplayMode {
  bool stop = true;          // at the first moment past the schedule
  bool views = false;        // keep the trace and record the rows (the page's views)
  bool every_point = false;  // log the places with no choice too (stepwise_schedule)
  bool stepwise_beyond = true;
};

// Replays `story` along `schedule` from its start, as `inboxsim run` plays a story, and stops
// where `mode` says. Throws a PlayError when a choice names an option that is not there.
Replay replay(const Scenario& story, const Schedule& schedule, const ReplayMode& mode,
              const MomentLimits& limits);

// `story` without a schedule: the story as `inboxsim run` plays it by default, and as the
// explorer takes it (the moment it starts from is its own setting).
inline Scenario without_schedule(const Scenario& story) {
  Scenario plain = story;
  plain.schedule.reset();
  return plain;
}

// The schedule of the moment at `position` choices with the first `actions` hand actions.
Schedule prefix_of(const Schedule& schedule, size_t position, size_t actions);

// A move of the moment: what one press of the page did.
struct Move {
  std::string kind;  // event, fault, hand
  std::string label;
  size_t position = 0;  // choices made before it
  size_t actions = 0;   // hand actions taken before it
  size_t first_event = 0;
  size_t faults = 0;  // faults it took
};

// The moves of a replay, in order: each event, fault and hand action it took.
std::vector<Move> moves_of(const Replay& run, const Config& config);

// The faults a replay took.
size_t faults_taken(const Replay& run);

// Throws a PlayError when `schedule` has more choices or hand actions than `limits` allow.
void check_size(const Schedule& schedule, const MomentLimits& limits);

}  // namespace inboxsim
