#include "fuzz/goals.h"

#include <algorithm>

#include "fuzz/dpor.h"
#include "kernel/assert.h"

namespace inboxsim {

bool goal_reached(const Goal& goal, const std::vector<Violation>& violations,
                  const Coverage& coverage, const RunResult* finished) {
  switch (goal.kind) {
    case Goal::Kind::broken:
      return std::any_of(violations.begin(), violations.end(), [&](const Violation& violation) {
        return violation.invariant == goal.invariant;
      });
    case Goal::Kind::probe:
      return coverage.counts[static_cast<size_t>(goal.probe)] > 0;
    case Goal::Kind::saga: {
      if (finished == nullptr) return false;
      const auto transfer = finished->transfers.find(goal.subject);
      return transfer != finished->transfers.end() && transfer->second == goal.state;
    }
    case Goal::Kind::balance: {
      if (finished == nullptr) return false;
      const auto balance = finished->balances.find(goal.subject);
      return balance != finished->balances.end() && balance->second == goal.balance;
    }
  }
  return false;
}

GoalTracker::GoalTracker(const Scenario& story, const ExploreSettings& settings)
    : story_(story),
      settings_(settings),
      goals_(settings.goals),
      shortest_(settings.goals.size()),
      found_(settings.goals.size(), false) {
  INBOXSIM_ASSERT(goals_.size() <= kGoalsMax);
}

uint64_t GoalTracker::reached(const Coverage& coverage, const RunResult* finished) const {
  uint64_t bits = 0;
  for (size_t i = 0; i < goals_.size(); ++i) {
    if (goals_[i].kind != Goal::Kind::broken && goal_reached(goals_[i], {}, coverage, finished)) {
      bits |= uint64_t{1} << i;
    }
  }
  return bits;
}

void GoalTracker::note(uint64_t bits, const std::vector<uint16_t>& choices) {
  for (size_t i = 0; i < goals_.size(); ++i) {
    if ((bits >> i & 1) == 0) continue;
    if (found_[i] && shortest_[i].size() <= choices.size()) continue;
    found_[i] = true;
    shortest_[i] = choices;
  }
}

bool GoalTracker::expected(Invariant invariant) const {
  return std::any_of(goals_.begin(), goals_.end(), [&](const Goal& goal) {
    return goal.reachable && goal.kind == Goal::Kind::broken && goal.invariant == invariant;
  });
}

bool GoalTracker::all_expected(const std::vector<Violation>& violations) const {
  return !violations.empty() &&
         std::all_of(violations.begin(), violations.end(),
                     [&](const Violation& violation) { return expected(violation.invariant); });
}

namespace {

// "t1 ends FAILED" → "t1-ends-FAILED", for a witness's name.
std::string goal_slug(const Goal& goal) {
  std::string slug = goal_text(goal);
  std::replace(slug.begin(), slug.end(), ' ', '-');
  return slug;
}

}  // namespace

std::vector<ExploreGoal> GoalTracker::outcomes(
    bool complete, const std::vector<ExploreCounterexample>& found) const {
  std::vector<ExploreGoal> out;
  for (size_t i = 0; i < goals_.size(); ++i) {
    const Goal& goal = goals_[i];
    ExploreGoal outcome;
    outcome.goal = goal;
    outcome.status = complete ? ExploreGoal::Status::unreachable : ExploreGoal::Status::unknown;
    if (goal.kind == Goal::Kind::broken) {
      const auto cx = std::find_if(found.begin(), found.end(), [&](const ExploreCounterexample& c) {
        return c.invariant == goal.invariant;
      });
      if (cx != found.end()) {
        outcome.status = ExploreGoal::Status::reached;
        outcome.choices = cx->choices;
        outcome.witness = cx->scenario;
      }
    } else if (found_[i]) {
      outcome.status = ExploreGoal::Status::reached;
      outcome.choices = shortest_[i].size();
      Scenario& witness = outcome.witness = story_;
      witness.schedule = explore_schedule(shortest_[i], settings_);
      witness.expect = Expect{};
      witness.name = story_.name + "-goal-" + std::to_string(i + 1) + "-" + goal_slug(goal);
      witness.title = (story_.title.empty() ? story_.name : story_.title) + " (explored: " +
                      goal_text(goal) + ")";
      witness.description =
          "Found by `inboxsim explore` (at most " + std::to_string(settings_.faults) +
          " fault(s) of: " + fault_kinds_text(settings_.fault_kinds) + "): " +
          (settings_.dpor ? "the shortest order found " : "one of the shortest orders ") +
          "of this story in which " + goal_text(goal) + " (" + std::to_string(outcome.choices) +
          " choices; the story's goal says it is " +
          (goal.reachable ? "reachable" : "unreachable") +
          "). `schedule` replays it exactly with `inboxsim run`.";
    }
    out.push_back(std::move(outcome));
  }
  return out;
}

}  // namespace inboxsim
