// The playground's simulation side (docs/contract.md §9.1): a moment of a story is the story plus a
// schedule, and nothing else. Every question about a moment replays the story from its start
// along the schedule, step by step (Schedule::stepwise), and stops where the schedule ends:
// what has happened, the state now, what can happen next and the schedule that takes each
// option. Undo, branches, links and saved files are all just schedules.
//
// Nothing here keeps a simulation between two calls, reads a file or a clock that could change
// a result: the same story and schedule give the same answer on any machine and thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "domain/scenario.h"

namespace inboxsim {

// The bounds one request may use (docs/contract.md §9.1).
struct MomentLimits {
  size_t schedule_max = 10'000;  // choices, and hand actions, in one schedule
  int64_t events_max = 200'000;  // events one replay may run
};

// Where "run on" stops: the story's end, or just before the next move of this kind (after at
// least one move).
enum class RunOn : uint8_t { quiescent, delivery, crash_point, commit };
std::optional<RunOn> parse_run_on(std::string_view name);

// How a story plays in the playground: with no clock (every pending event may happen next, as
// the explorer sees it), or, for a story with timed steps, with its clock (the choices are among
// the events due first).
bool playground_clocked(const Scenario& story);
// How many ack wait expiries an order of the story may take without a clock (as `explore`'s
// default): 1 on broker.kind = jetstream, 0 on a broker with no ack wait. Every replay of a
// moment, the moment's proof and a saved schedule use it, so that their choices line up.
int64_t playground_ack_wait_expiries(const Scenario& story);
// One sentence for the page on what the mode means for the person at it.
std::string mode_note(const Scenario& story);

// A schedule as the API sends it: {"stepwise", "choices", "clock" (when clocked), "actions"}.
nlohmann::json schedule_json(const Schedule& schedule);

// The schedule of the story's start in the playground.
Schedule start_schedule(const Scenario& story);

// The moment `schedule` reaches in `story`, as the JSON object the page reads (docs/playground.md):
// story, schedule (canonical), moves, report, now, enabled, hand, verdict.
// REQUIRES: schedule.stepwise == schedule.choices.size(), schedule.clocked ==
// playground_clocked(story); the schedule's actions parsed against the story.
nlohmann::json moment_json(const Scenario& story, const Schedule& schedule,
                           const MomentLimits& limits);

// Runs on from `schedule` with the default order (option 0, no fault) to where `until` says;
// returns the schedule of that moment.
Schedule run_on(const Scenario& story, const Schedule& schedule, RunOn until,
                const MomentLimits& limits);

// The schedule with `action` taken now (at the end of `schedule`).
Schedule with_action(const Schedule& schedule, const Step& action);

// A schedule that the explorer or `inboxsim run` follows (a prefix taken step by step, then the
// explorer's rules), turned into the playground's: every move step by step, to the story's end.
Schedule stepwise_schedule(const Scenario& story, const Schedule& schedule,
                           const MomentLimits& limits);

// "Can it still break from here?"
struct ExploreFromHere {
  int64_t faults = 1;
  FaultKinds fault_kinds{};
  int64_t max_states = 200'000;
  int64_t seconds = 10;
  int64_t jobs = 1;
};
nlohmann::json explore_from_moment(const Scenario& story, const Schedule& schedule,
                                   const ExploreFromHere& settings, const MomentLimits& limits);

// The point of no return of a branch that broke an invariant: the last moment on it from
// which some order of the events, with no further fault, still ends with every invariant
// holding. {"move", "schedule", "said"}.
nlohmann::json point_of_no_return(const Scenario& story, const Schedule& schedule,
                                  const ExploreFromHere& budget, const MomentLimits& limits);

}  // namespace inboxsim
