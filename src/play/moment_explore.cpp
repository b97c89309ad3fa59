// The playground's two questions for the explorer about a moment (play/moment.h): "can it still
// break from here?" and, on a branch that broke, "where was its point of no return?".
#include <optional>

#include "fuzz/explore.h"
#include "play/moment.h"
#include "play/play_error.h"
#include "play/replay.h"

namespace inboxsim {

namespace {

using json = nlohmann::json;

std::string fault_kind_list(const FaultKinds& kinds) { return fault_kinds_text(kinds, ", "); }

// The explorer's search of every order from the moment `here` of `story` (the story's own
// schedule left out: the explorer takes the moment's as its root), within `budget`'s states
// and seconds: dynamic partial-order reduction with persistent sets, explore's default, which
// from a story's start with one fault anywhere proves in a tenth of the breadth-first search's
// states (docs/playground.md, "Speed").
ExploreResult search_from(const Scenario& story, const Replay& here, int64_t faults,
                          const FaultKinds& fault_kinds, const ExploreFromHere& budget,
                          bool stop_at_good_leaf) {
  ExploreSettings search;
  search.faults = faults;
  search.fault_kinds = fault_kinds;
  search.ack_wait_expiries = playground_ack_wait_expiries(story);
  search.max_states = budget.max_states;
  search.max_wall_ms = budget.seconds * 1000;
  search.jobs = budget.jobs;
  search.dpor = true;
  search.from = here.canonical;
  search.prefix_faults = static_cast<int64_t>(faults_taken(here));
  search.stop_at_good_leaf = stop_at_good_leaf;
  return explore(without_schedule(story), search);
}

// A branch's moves, and for the moment before any of them whether some order of the events,
// with no fault beyond those already taken, still ends with every invariant holding.
class NoReturnSearch {
 public:
  NoReturnSearch(const Scenario& story, const Schedule& schedule, const ExploreFromHere& budget,
                 const MomentLimits& limits)
      : story_(story),
        budget_(budget),
        limits_(limits),
        end_(replay(story, schedule, ReplayMode{}, limits)),
        moves_(moves_of(end_, story.config)) {}

  const std::vector<Move>& moves() const { return moves_; }

  // The schedule of the moment before move `index` (moves().size(): the branch's end).
  Schedule before(size_t index) const {
    return index == moves_.size()
               ? end_.canonical
               : prefix_of(end_.canonical, moves_[index].position, moves_[index].actions);
  }

  // Whether some order from the moment before move `index` ends well; nothing when the budget
  // ran out first.
  std::optional<bool> ends_well(size_t index) const {
    const Replay here = replay(story_, before(index), ReplayMode{}, limits_);
    const ExploreResult result = search_from(story_, here, 0, FaultKinds{}, budget_, true);
    if (result.good_leaves > 0) return true;
    if (result.complete) return false;
    return std::nullopt;
  }

 private:
  const Scenario& story_;
  const ExploreFromHere& budget_;
  const MomentLimits& limits_;
  Replay end_;
  std::vector<Move> moves_;
};

json no_point(const std::string& said) { return json{{"move", nullptr}, {"said", said}}; }

json budget_ran_out(size_t index) {
  const std::string move = "move " + std::to_string(index + 1);
  return no_point("The explorer's budget ran out before it could say whether the moment before " +
                  move + " can still end well: raise the states or seconds.");
}

// Walks back from a doomed `doomed` over stretches of events to the last stretch whose first
// moment ends well, or to the fault or hand move in front of a doomed stretch when the moment
// before it ends well; sets `good` and `doomed` around the point of no return. Returns the reply
// instead when there is no such moment or the budget runs out.
std::optional<json> bracket_the_point(const NoReturnSearch& search, size_t& good, size_t& doomed) {
  const std::vector<Move>& moves = search.moves();
  for (;;) {
    size_t start = doomed;  // the first moment of the stretch of events that ends at `doomed`
    while (start > 0 && moves[start - 1].kind == "event") --start;
    const std::optional<bool> well =
        start == doomed ? std::optional<bool>(false) : search.ends_well(start);
    if (!well) return budget_ran_out(start);
    if (*well) {
      good = start;
      return std::nullopt;
    }
    if (start == 0) {
      return no_point(
          "No order ends well even from the story's start: the story's own faults break it.");
    }
    // The move in front of the stretch is a fault or a hand action: is it the one?
    const std::optional<bool> before = search.ends_well(start - 1);
    if (!before) return budget_ran_out(start - 1);
    if (*before) {
      good = start - 1;
      doomed = start;
      return std::nullopt;
    }
    doomed = start - 1;
  }
}

}  // namespace

nlohmann::json explore_from_moment(const Scenario& story, const Schedule& schedule,
                                   const ExploreFromHere& settings, const MomentLimits& limits) {
  check_size(schedule, limits);
  if (playground_clocked(story)) throw PlayError{400, mode_note(story), "/name"};
  const Replay here = replay(story, schedule, ReplayMode{}, limits);
  const ExploreResult result =
      search_from(story, here, settings.faults, settings.fault_kinds, settings, false);
  json out;
  out["states"] = result.states;
  out["transitions"] = result.transitions;
  out["complete"] = result.complete;
  out["wall_ms"] = result.wall_ms;
  out["max_depth"] = result.max_depth - static_cast<int64_t>(here.canonical.choices.size());
  const std::string expiries =
      result.ack_wait_expiries < 0
          ? std::string()
          : std::to_string(result.ack_wait_expiries) +
                " ack-wait expiry(ies) in the whole order (those taken already count), ";
  const std::string budget = "with at most " + expiries + std::to_string(settings.faults) +
                             " more fault(s) of: " + fault_kind_list(settings.fault_kinds) +
                             (result.redrive_rounds > 0 ? ", and an operator who redrives "
                                                          "parked messages"
                                                        : "");
  if (!result.counterexamples.empty()) {
    const ExploreCounterexample& cx = result.counterexamples.front();
    out["verdict"] = "BROKEN";
    const Schedule continuation =
        stepwise_schedule(without_schedule(story), *cx.scenario.schedule, limits);
    out["counterexample"] = json{{"invariant", invariant_name(cx.invariant)},
                                 {"detail", cx.detail},
                                 {"schedule", schedule_json(continuation)}};
    out["said"] = "From here, an order breaks " + std::string(invariant_name(cx.invariant)) + " (" +
                  cx.detail + "), " + budget + ". It is loaded as a branch: step through it.";
  } else if (result.complete) {
    out["verdict"] = "PROVEN";
    out["said"] = "Proven: no order of the events from this moment breaks an invariant, " + budget +
                  ". Every order from here was covered (" + std::to_string(result.states) +
                  " states explored; orders that differ only in events that commute count "
                  "once).";
  } else {
    out["verdict"] = "UNKNOWN";
    out["said"] = "Unknown: the budget ran out after " + std::to_string(result.states) +
                  " states (" + std::to_string(result.wall_ms) +
                  " ms) and no order broke an invariant so far, " + budget +
                  ". Raise the states or seconds, or ask from a later moment.";
  }
  return out;
}

// From the branch's end back. Across a move that is an event the answers can only turn from
// "yes" to "no": taking an event never adds a final state that was out of reach before it.
// A fault or a hand action may (a crash can be what saves a story), so the branch is cut into
// stretches of events between them: the last stretch whose first moment ends well holds the
// point of no return, found there by bisection; a stretch that starts doomed sends the search
// to the moment before the fault or hand move in front of it.
nlohmann::json point_of_no_return(const Scenario& story, const Schedule& schedule,
                                  const ExploreFromHere& budget, const MomentLimits& limits) {
  check_size(schedule, limits);
  if (playground_clocked(story)) {
    throw PlayError{400, mode_note(story), "/name"};
  }
  const NoReturnSearch search(story, schedule, budget, limits);
  const std::vector<Move>& moves = search.moves();
  const std::optional<bool> at_end = search.ends_well(moves.size());
  if (!at_end) return budget_ran_out(moves.size());
  if (*at_end) {
    return no_point(
        "This branch has not passed its point of no return: from its last moment "
        "some order still ends with every invariant holding.");
  }
  size_t doomed = moves.size();  // a moment from which no order ends well
  size_t good = 0;               // one from which some order does
  if (std::optional<json> reply = bracket_the_point(search, good, doomed)) return *reply;
  while (doomed - good > 1) {
    const size_t middle = good + (doomed - good) / 2;
    const std::optional<bool> well = search.ends_well(middle);
    if (!well) return budget_ran_out(middle);
    (*well ? good : doomed) = middle;
  }
  json out;
  out["move"] = good;
  out["schedule"] = schedule_json(search.before(good));
  out["said"] = "The point of no return is move " + std::to_string(good + 1) + " (" +
                moves[good].label +
                "): before it, some order of the events still ends with every invariant "
                "holding; after it, none does without a further fault.";
  return out;
}

}  // namespace inboxsim
