// Reachability goals during a search (`inboxsim explore`, docs/contract.md §8.3): which goals
// an order reached, the shortest order found for each, and what the search decided at its end.
// GoalTracker is internal to src/fuzz (the breadth-first search and DPOR share it);
// goal_reached is also what `inboxsim explore` checks a written witness with.
#pragma once

#include <cstdint>
#include <vector>

#include "domain/result.h"
#include "fuzz/explore.h"

namespace inboxsim {

// Whether an order reached `goal`: with the violations it found, the probes it reached on its
// way, and, when it ran to the story's end, its result (`finished`, else null).
bool goal_reached(const Goal& goal, const std::vector<Violation>& violations,
                  const Coverage& coverage, const RunResult* finished);

class GoalTracker {
 public:
  GoalTracker(const Scenario& story, const ExploreSettings& settings);

  bool empty() const { return goals_.empty(); }
  // The goals an order reached, one bit per goal (at most kGoalsMax), broken invariants left
  // out: those are the search's counterexamples.
  uint64_t reached(const Coverage& coverage, const RunResult* finished) const;
  // Notes that the order `choices` (trailing default choices trimmed) reached `bits`; each
  // goal keeps the shortest order, the first found among equals.
  void note(uint64_t bits, const std::vector<uint16_t>& choices);
  // Whether every one of `violations` is an invariant a reachable goal expects to break: the
  // search does not stop for them.
  bool all_expected(const std::vector<Violation>& violations) const;
  bool expected(Invariant invariant) const;
  // What was decided: reached goals with their witnesses (a broken invariant's is its
  // counterexample); the rest unreachable when the search was `complete`, unknown otherwise.
  std::vector<ExploreGoal> outcomes(bool complete,
                                    const std::vector<ExploreCounterexample>& found) const;

 private:
  const Scenario& story_;
  const ExploreSettings& settings_;
  std::vector<Goal> goals_;
  std::vector<std::vector<uint16_t>> shortest_;
  std::vector<bool> found_;
};

}  // namespace inboxsim
