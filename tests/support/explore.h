// What the explorer's tests compare between two searches.
#pragma once

#include <set>

#include "fuzz/explore.h"

namespace inboxsim::testing {

// The invariants a search found broken (one counterexample each).
inline std::set<Invariant> broken_invariants(const ExploreResult& result) {
  std::set<Invariant> out;
  for (const ExploreCounterexample& cx : result.counterexamples) out.insert(cx.invariant);
  return out;
}

}  // namespace inboxsim::testing
