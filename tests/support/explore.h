// What the explorer's tests share: the settings of a search with K faults, the comparison of two
// searches' outcomes, and a counterexample replayed as a user meets it.
#pragma once

#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <set>

#include "fuzz/explore.h"
#include "support/scenarios.h"

namespace inboxsim::testing {

// The invariants a search found broken (one counterexample each).
inline std::set<Invariant> broken_invariants(const ExploreResult& result) {
  std::set<Invariant> out;
  for (const ExploreCounterexample& cx : result.counterexamples) out.insert(cx.invariant);
  return out;
}

// Whether a search found `invariant` broken.
inline bool breaks(const ExploreResult& result, Invariant invariant) {
  return broken_invariants(result).count(invariant) > 0;
}

// A search with at most `faults` faults of `kinds` (none: no kind) on `jobs` threads.
inline ExploreSettings with_faults(int64_t faults, std::initializer_list<FaultKind> kinds,
                                   int64_t jobs = 1) {
  ExploreSettings settings;
  settings.faults = faults;
  settings.jobs = jobs;
  for (const FaultKind kind : kinds) settings.fault_kinds[static_cast<size_t>(kind)] = true;
  return settings;
}

// Two complete searches of one story reached the same final states, by fingerprint, and broke
// the same invariants: what a reduction must keep of the search it reduces.
inline void check_same_outcomes(const ExploreResult& reduced, const ExploreResult& reference) {
  REQUIRE(reference.complete);
  REQUIRE(reduced.complete);
  CHECK(reduced.leaf_states == reference.leaf_states);
  CHECK(broken_invariants(reduced) == broken_invariants(reference));
}

// Whether a counterexample, written, parsed back and run as a user meets it, breaks what it
// was found for.
inline bool replay_breaks(const ExploreCounterexample& cx) {
  const RunResult run = replay_written(cx.scenario);
  return std::any_of(run.violations.begin(), run.violations.end(),
                     [&](const Violation& v) { return v.invariant == cx.invariant; });
}

}  // namespace inboxsim::testing
