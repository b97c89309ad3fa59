#include "report/explore_view.h"

#include <algorithm>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "kernel/text.h"
#include "report/campaign_view.h"  // add_defences_json
#include "report/json_output.h"
#include "scenario/write.h"

namespace inboxsim {

namespace {

nlohmann::ordered_json fault_kinds_json(const std::array<bool, kFaultKindCount>& kinds) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (size_t kind = 0; kind < kFaultKindCount; ++kind) {
    if (kinds[kind]) out.push_back(fault_kind_name(static_cast<FaultKind>(kind)));
  }
  return out;
}

std::string_view goal_status_name(ExploreGoal::Status status) {
  switch (status) {
    case ExploreGoal::Status::reached:
      return "reached";
    case ExploreGoal::Status::unreachable:
      return "unreachable";
    case ExploreGoal::Status::unknown:
      return "unknown";
  }
  return "unknown";
}

// The claim's bound on ack wait expiries, ahead of its faults' ("1 ack-wait expiry and "), on
// a broker that has an ack wait; nothing on one that has not.
std::string expiries_words(const ExploreResult& result) {
  if (result.ack_wait_expiries < 0) return {};
  return std::to_string(result.ack_wait_expiries) +
         (result.ack_wait_expiries == 1 ? " ack-wait expiry and " : " ack-wait expiries and ");
}

// Whether a reachable goal of the search expects `invariant` to break.
bool expected_break(const ExploreResult& result, Invariant invariant) {
  return std::any_of(result.goals.begin(), result.goals.end(), [&](const ExploreGoal& goal) {
    return goal.goal.reachable && goal.goal.kind == Goal::Kind::broken &&
           goal.goal.invariant == invariant;
  });
}

// The pairs of events whose races the search reversed most, most first, at most `count` (what
// its states are spent on); a tie goes by the pair's words.
std::vector<std::pair<std::string, int64_t>> most_reversed(const ExploreResult& result,
                                                           size_t count) {
  std::vector<std::pair<int64_t, std::string>> pairs;
  for (const auto& [pair, races] : result.races_by_pair) pairs.emplace_back(-races, pair);
  std::sort(pairs.begin(), pairs.end());
  std::vector<std::pair<std::string, int64_t>> most;
  for (size_t i = 0; i < pairs.size() && i < count; ++i) {
    most.emplace_back(pairs[i].second, -pairs[i].first);
  }
  return most;
}

// Said before an INCOMPLETE verdict: what the search spent its states on says what would have
// to commute (a complete search, or one that stopped at a break, has its answer).
void print_races_most_reversed(std::ostream& out, const ExploreResult& result) {
  if (result.races_by_pair.empty()) return;
  out << "  races it reversed most:";
  const char* separator = " ";
  for (const auto& [pair, races] : most_reversed(result, 3)) {
    out << separator << printable(pair) << " (" << races << ")";
    separator = "; ";
  }
  out << "\n";
}

void print_goals(std::ostream& out, const ExploreResult& result) {
  int64_t met = 0;
  int64_t failed = 0;
  for (const ExploreGoal& goal : result.goals) {
    met += goal.met() ? 1 : 0;
    failed += goal.failed() ? 1 : 0;
    out << "  goal " << printable(goal_text(goal.goal)) << " ("
        << (goal.goal.reachable ? "reachable" : "unreachable") << "): ";
    switch (goal.status) {
      case ExploreGoal::Status::reached:
        if (goal.goal.kind == Goal::Kind::broken) {
          out << "REACHED, by the order BROKEN names above";
          break;
        }
        out << "REACHED, shortest order found " << goal.choices << " choices";
        if (!goal.path.empty()) out << "; replay: inboxsim run " << printable(goal.path);
        break;
      case ExploreGoal::Status::unreachable:
        out << "UNREACHABLE: no order of this story with at most " << expiries_words(result)
            << result.faults << " fault(s)";
        if (result.preemption_bound >= 0) {
          out << " and " << result.preemption_bound << " preemption(s)";
        }
        out << " reaches it";
        break;
      case ExploreGoal::Status::unknown:
        out << "UNKNOWN: the search stopped before any order reached it";
        break;
    }
    out << (goal.met() ? "" : goal.failed() ? "  [goal not met]" : "") << "\n";
  }
  const auto count = static_cast<int64_t>(result.goals.size());
  out << "GOALS: " << met << " of " << count << " met";
  if (failed > 0) out << ", " << failed << " not met";
  if (count - met - failed > 0) out << ", " << count - met - failed << " undecided";
  out << "\n";
}

}  // namespace

bool explore_failed(const ExploreResult& result) {
  const bool broke = std::any_of(
      result.counterexamples.begin(), result.counterexamples.end(),
      [&](const ExploreCounterexample& cx) { return !expected_break(result, cx.invariant); });
  return broke || std::any_of(result.goals.begin(), result.goals.end(),
                              [](const ExploreGoal& goal) { return goal.failed(); });
}

nlohmann::ordered_json explore_json(const ExploreResult& result) {
  nlohmann::ordered_json out;
  out["scenario"] = result.name;
  out["faults"] = result.faults;
  out["fault_kinds"] = fault_kinds_json(result.fault_kinds);
  // null on a broker with no ack wait: the claim has no such bound.
  out["ack_wait_expiries"] = result.ack_wait_expiries < 0
                                 ? nlohmann::ordered_json()
                                 : nlohmann::ordered_json(result.ack_wait_expiries);
  out["redrive_rounds"] = result.redrive_rounds;
  out["states"] = result.states;
  out["transitions"] = result.transitions;
  out["revisits"] = result.revisits;
  out["leaves"] = result.leaves;
  out["replays"] = result.replays;
  out["max_depth"] = result.max_depth;
  out["complete"] = result.complete;
  // A bounded search proves only up to its bound (`--preemptions`).
  if (result.preemption_bound >= 0) out["preemption_bound"] = result.preemption_bound;
  nlohmann::ordered_json& reduction = out["reduction"];
  reduction["sleep_sets"] = result.sleep_sets;
  reduction["persistent_sets"] = result.persistent_sets;
  reduction["persistent_sets_fallback"] = result.persistent_sets_unsound;
  if (result.dpor) {
    reduction["dpor"] = true;
    reduction["races"] = result.races;
    reduction["cache_hits"] = result.cache_hits;
    reduction["sleep_blocked"] = result.sleep_blocked;
    reduction["full_expansions"] = result.full_expansions;
    nlohmann::ordered_json& most = reduction["races_most_reversed"] = nlohmann::ordered_json::array();
    for (const auto& [pair, races] : most_reversed(result, 5)) {
      most.push_back({{"events", pair}, {"races", races}});
    }
  }
  nlohmann::ordered_json& violations = out["violations"] = nlohmann::ordered_json::array();
  nlohmann::ordered_json& paths = out["counterexamples"] = nlohmann::ordered_json::array();
  for (const ExploreCounterexample& cx : result.counterexamples) {
    nlohmann::ordered_json violation;
    violation["invariant"] = invariant_name(cx.invariant);
    violation["detail"] = cx.detail;
    violation["choices"] = cx.choices;
    if (!cx.path.empty()) violation["counterexample"] = cx.path;
    violations.push_back(std::move(violation));
    if (!cx.path.empty()) paths.push_back(cx.path);
  }
  if (!result.goals.empty()) {
    nlohmann::ordered_json& goals = out["goals"] = nlohmann::ordered_json::array();
    for (const ExploreGoal& goal : result.goals) {
      nlohmann::ordered_json entry;
      entry["goal"] = goal_to_json(goal.goal);
      entry["expected"] = goal.goal.reachable ? "reachable" : "unreachable";
      entry["status"] = goal_status_name(goal.status);
      entry["met"] = goal.status == ExploreGoal::Status::unknown
                         ? nlohmann::ordered_json(nullptr)
                         : nlohmann::ordered_json(goal.met());
      if (goal.status == ExploreGoal::Status::reached) {
        entry["choices"] = goal.choices;
        if (!goal.path.empty()) entry["witness"] = goal.path;
      }
      goals.push_back(std::move(entry));
    }
  }
  out["coverage"] = coverage_json(result.coverage);
  out["wall_ms"] = result.wall_ms;
  return out;
}

void print_explore(std::ostream& out, const ExploreResult& result) {
  out << printable(result.name) << ": explored every order of its story with at most "
      << expiries_words(result) << result.faults << " fault(s) ("
      << fault_kinds_text(result.fault_kinds) << ")";
  if (result.preemption_bound >= 0) {
    out << " and at most " << result.preemption_bound << " preemption(s)";
  }
  out << "\n";
  if (result.redrive_rounds > 0) {
    out << "  then, as an operator does, " << result.redrive_rounds
        << " round(s) of: run until quiescent, redrive every error and dead-letter queue\n";
  }
  out << "  " << result.states << " distinct states (" << result.leaves << " final), "
      << result.transitions << " transitions, " << result.revisits
      << " of them to a state already explored; longest schedule " << result.max_depth
      << " choices; " << result.wall_ms << " ms\n";
  if (result.dpor) {
    out << "  dynamic partial-order reduction: " << result.replays << " order(s) run, "
        << result.races << " race(s) reversed, " << result.cache_hits
        << " order(s) cut at a state explored before\n";
  }
  if (result.persistent_sets_unsound) {
    out << "  (searched without persistent sets: a consumer's prefetch or a relay's batch could "
           "fill up in this story, where taking an ack or a confirm first is not known to lose "
           "nothing)\n";
  }
  size_t unexpected = 0;
  for (const ExploreCounterexample& cx : result.counterexamples) {
    const bool expected = expected_break(result, cx.invariant);
    unexpected += expected ? 0 : 1;
    out << "  BROKEN " << invariant_name(cx.invariant)
        << (expected ? " (as a goal of the story expects)" : "") << ": " << printable(cx.detail)
        << "\n";
    out << "    shortest order found: " << cx.choices << " choices";
    if (!cx.path.empty()) out << "; replay: inboxsim run " << printable(cx.path);
    out << "\n";
  }
  if (!result.goals.empty()) print_goals(out, result);
  const std::string others =
      unexpected < result.counterexamples.size() ? " that no goal expects to break" : "";
  if (unexpected > 0) {
    out << "VIOLATED: " << unexpected << " invariant(s) broken by some order of this story"
        << others
        << (result.complete ? "" : " (the search stopped there; --continue goes on)") << "\n";
  } else if (result.complete && result.preemption_bound >= 0) {
    const std::string joint = result.ack_wait_expiries < 0 ? " and " : ", ";
    out << "PROVEN up to " << result.preemption_bound << " preemption(s)" << joint
        << expiries_words(result) << result.faults
        << " fault(s): no order of this story with at most " << result.preemption_bound
        << " preemption(s)" << joint << expiries_words(result) << result.faults
        << " fault(s) of these kinds breaks an invariant"
        << others << " (orders with more were not explored)\n";
  } else if (result.complete) {
    out << "PROVEN: no order of this story with at most " << expiries_words(result)
        << result.faults << " fault(s) of these kinds breaks an invariant" << others << "\n";
  } else {
    print_races_most_reversed(out, result);
    out << "INCOMPLETE: --max-states stopped the search after " << result.states
        << " states; no violation" << others << " among them\n";
  }
}

std::string_view exhaustive_verdict(const ExploreResult& result) {
  if (!result.counterexamples.empty()) return "broken";
  return result.complete ? "proven" : "unfinished";
}

nlohmann::ordered_json exhaustive_matrix_json(const Scenario& story,
                                              const ExploreSettings& settings,
                                              const std::vector<ExhaustiveRow>& rows) {
  nlohmann::ordered_json out;
  out["story"] = story.name;
  out["faults"] = settings.faults;
  out["fault_kinds"] = fault_kinds_json(settings.fault_kinds);
  out["ack_wait_expiries"] = story.config.broker_kind == BrokerKind::jetstream
                                 ? nlohmann::ordered_json(settings.ack_wait_expiries)
                                 : nlohmann::ordered_json();
  out["max_states"] = settings.max_states;
  nlohmann::ordered_json& rows_json = out["rows"] = nlohmann::ordered_json::array();
  for (const ExhaustiveRow& row : rows) {
    nlohmann::ordered_json entry;
    add_defences_json(entry, row.defences);
    entry["verdict"] = exhaustive_verdict(row.result);
    entry["exploration"] = explore_json(row.result);
    rows_json.push_back(std::move(entry));
  }
  return out;
}

void print_exhaustive_matrix(std::ostream& out, const Scenario& story,
                             const ExploreSettings& settings,
                             const std::vector<ExhaustiveRow>& rows) {
  out << "Every order of story " << printable(story.name);
  if (story.config.broker_kind == BrokerKind::jetstream) {
    out << " with at most " << settings.ack_wait_expiries << " ack-wait expiry(ies)";
  }
  if (settings.faults == 0) {
    out << " (no fault injected: the concurrent instances' races alone)";
  } else {
    out << " with at most " << settings.faults << " fault(s) ("
        << fault_kinds_text(settings.fault_kinds) << ")";
  }
  out << ", for each combination of defences:\n";
  if (!rows.empty() && rows.front().result.redrive_rounds > 0) {
    out << "(each ending, as an operator does, with " << rows.front().result.redrive_rounds
        << " round(s) of: run until quiescent, redrive every error and dead-letter queue)\n";
  }
  for (const std::string_view name : defence_names()) out << pad(std::string(name), 10);
  out << pad("verdict", 12) << pad("states", 10) << "broken invariants / counterexample\n";
  int64_t proven = 0;
  int64_t broken = 0;
  int64_t unfinished = 0;
  for (const ExhaustiveRow& row : rows) {
    for (const bool on : row.defences) out << pad(on ? "on" : "-", 10);
    const std::string_view verdict = exhaustive_verdict(row.result);
    proven += verdict == "proven" ? 1 : 0;
    broken += verdict == "broken" ? 1 : 0;
    unfinished += verdict == "unfinished" ? 1 : 0;
    out << pad(verdict == "broken" ? "BROKEN" : std::string(verdict), 12)
        << pad(std::to_string(row.result.states), 10);
    if (row.result.counterexamples.empty()) {
      out << (verdict == "proven" ? "none, for every order" : "none found before the budget");
    }
    for (size_t i = 0; i < row.result.counterexamples.size(); ++i) {
      const ExploreCounterexample& cx = row.result.counterexamples[i];
      out << (i > 0 ? ", " : "") << invariant_name(cx.invariant) << " (" << cx.choices
          << " choices)";
    }
    out << "\n";
    for (const ExploreCounterexample& cx : row.result.counterexamples) {
      if (!cx.path.empty()) {
        out << pad("", 10 * kDefenceCount + 22) << "inboxsim run " << printable(cx.path) << "\n";
      }
    }
  }
  out << proven << " proven, " << broken << " broken, " << unfinished
      << " unfinished (--max-states " << settings.max_states << " per row)\n";
}

}  // namespace inboxsim
