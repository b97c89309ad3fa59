// What the two searches of `inboxsim explore` share (declared in fuzz/dpor.h): the explored
// story's ack-wait budget, schedule and play, and the names and descriptions of the
// counterexamples found.
#include <string>
#include <vector>

#include "fuzz/dpor.h"
#include "fuzz/explore.h"
#include "scenario/runner.h"
#include "world/world.h"

namespace inboxsim {

static std::string counterexample_description(const ExploreResult& result,
                                              const Violation& violation, size_t choices) {
  // Said in the file because its narration cannot be followed without it: the explored order
  // has no clock, and its extra publications are the model's, not noise.
  const std::string expiries =
      result.ack_wait_expiries < 0
          ? std::string()
          : std::to_string(result.ack_wait_expiries) + " ack-wait expiry(ies) and ";
  return "Found by `inboxsim explore` (at most " + expiries + std::to_string(result.faults) +
         " fault(s) of: " + fault_kinds_text(result.fault_kinds) + "): " +
         (result.dpor ? "the shortest order found " : "one of the shortest orders ") +
         "of this story that breaks " +
         std::string(invariant_name(violation.invariant)) + " (" + std::to_string(choices) +
         " choices). An exploration has no clock: each next event is the one `schedule.choices` "
         "picks, so every event of the replay happens at 0 s, and the event numbers (#N), not "
         "the times, give the order. The faults it placed are narrated where they strike. A "
         "message may go out more than once with one id: the relay publishes again a row whose "
         "confirm it lost, and outside MassTransit's inbox a handler sends every unsent row of "
         "its service's outbox table, so two handlers (two instances) that both commit before "
         "either sends each publish both rows. After the first violation the replay runs on to "
         "the story's end. `schedule` replays it exactly; the expectations are what a correct "
         "bank does, so replaying this file fails until the bug is fixed.";
}

int64_t ack_wait_bound(const Scenario& scenario, const ExploreSettings& settings) {
  return scenario.config.broker_kind == BrokerKind::jetstream ? settings.ack_wait_expiries : -1;
}

Schedule explore_schedule(const std::vector<uint16_t>& choices, const ExploreSettings& settings) {
  Schedule schedule;
  if (settings.from) {
    schedule.stepwise = settings.from->stepwise;
    schedule.actions = settings.from->actions;
  }
  schedule.faults = settings.faults;
  schedule.fault_kinds = settings.fault_kinds;
  schedule.ack_wait_expiries = settings.ack_wait_expiries;
  schedule.choices.assign(choices.begin(), choices.end());
  return schedule;
}

void play_explored(World& world, const Scenario& scenario, const ExploreSettings& settings) {
  for (size_t index = 0; index < scenario.steps.size(); ++index) {
    if (index == settings.story_steps && settings.from) {
      // The story's own end, before the operator's rounds: the moment's hand actions there.
      world.run_until_quiescent();
      play_story_end(world);
      if (world.exploration_stopped()) return;
    }
    if (scenario.steps[index].kind != StepKind::run) world.story_point();
    play_step(world, scenario.steps[index]);
    if (world.exploration_stopped()) return;
  }
  world.run_until_quiescent();
  if (!world.exploration_stopped()) play_story_end(world);
}

void name_counterexamples(ExploreResult& result, const Scenario& scenario) {
  for (ExploreCounterexample& cx : result.counterexamples) {
    cx.scenario.name = scenario.name + "-explored-" + std::string(invariant_name(cx.invariant));
    cx.scenario.title = scenario.title.empty()
                            ? "Explored: " + std::string(invariant_name(cx.invariant)) + " breaks"
                            : scenario.title + " (explored: " +
                                  std::string(invariant_name(cx.invariant)) + " breaks)";
    cx.scenario.description =
        counterexample_description(result, Violation{cx.invariant, cx.detail, 0}, cx.choices);
  }
}

}  // namespace inboxsim
