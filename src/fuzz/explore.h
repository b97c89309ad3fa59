// `inboxsim explore` (docs/contract.md §8.3): every order of the events that can happen next in a
// scenario's story, and every placement of up to K faults, explored breadth-first over the
// services' real SQLite transactions, identical states explored once.
//
// The search is stateless in the sense of VeriSoft and CHESS: a state is never copied. It is
// reached again by replaying the choices that led to it (a Schedule) in a fresh World; the world
// stops at the first state past the schedule where a choice remains and hands back that
// state's fingerprint. Replays cost time, not memory; a visited set of fingerprints stops the
// search from exploring any state twice. docs/model.md ("Exploration") says what the search
// covers, which reductions it makes and why they lose no violating order.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "domain/result.h"
#include "domain/scenario.h"
#include "kernel/fingerprint.h"

namespace inboxsim {

struct ExploreSettings {
  int64_t faults = 2;  // K: faults injected in one order, beyond the story's own
  std::array<bool, kFaultKindCount> fault_kinds{};  // the kinds injected (explorable ones only)
  // On a broker whose leases end by timer (broker.kind = jetstream): how many times in one
  // order an ack wait may run out, each a choice among the pending events (docs/model.md,
  // "Exploration"). Other brokers have none to run out, whatever this says.
  int64_t ack_wait_expiries = 1;
  int64_t max_states = 2'000'000;                  // stop (complete = false) past this many
  int64_t jobs = 1;
  // Sleep sets on (the default) or off: off explores every transition of every state, which
  // the tests use to check that sleep sets lose no state.
  bool sleep_sets = true;
  // Persistent sets of one event on (the default) or off: on, at a state where an ack or a
  // confirm commutes with everything that can still happen, only that event is taken there
  // (docs/model.md). Off explores every event of every state; the tests compare the two.
  bool persistent_sets = true;
  // Dynamic partial-order reduction (fuzz/dpor.h) instead of the breadth-first search with
  // sleep sets and persistent sets: depth-first, one order per equivalence class of orders
  // that differ only in independent events. It keeps sleep sets of its own (sleep_sets is not
  // read), takes persistent sets with persistent_sets, and runs on one thread (jobs is not
  // read). explore, matrix --exhaustive and the playground set it (their default); the struct's
  // default stays the breadth-first search, which the tests compare it with.
  bool dpor = false;
  // DPOR's own sleep sets, on unless a test turns them off: without them every race the
  // visited-state cache must replay shows in the final states (docs/model.md, "A preemption
  // bound"). No flag sets it.
  bool dpor_sleep_sets = true;
  // A preemption bound (CHESS's): only orders with at most this many preemptions, a preemption
  // being a step of a handler of one instance taken while a handler another instance started
  // has its next step ready. -1: no bound. What is proven is then proven up to the bound.
  // With dpor, bounded partial-order reduction (docs/model.md, "A preemption bound").
  int64_t preemptions = -1;
  // The operator the fuzzer's stories have (src/fuzz/generator.cpp, draw_ending): when faults
  // are injected (K > 0), the story is explored with rounds of "run until quiescent; redrive
  // every error and dead-letter queue" appended, K + its own faults + 1 of them, so a message a
  // fault parked is replayed as a real operator would, and what is left stuck after that is
  // the bank's fault. Off: nobody redrives, and any fault that parks a message breaks
  // termination.
  bool operator_redrives = true;
  // Tests: check that every event taken as void changes nothing (ExploreControl).
  bool check_void_events = false;
  // Tests: off, the step after a row lock's grant is an event of its own, to compare the
  // search with the one that fuses them (ExploreControl::fuse_lock_steps). Its counterexamples
  // replay only with it off.
  bool fuse_lock_steps = true;
  // Tests: off, every two mints and every two inserts into one table are ordered, as where
  // something reads their order (ExploreControl::names_commute).
  bool names_commute = true;
  // Tests: off, a void job's footprint is the one it would have if it acted
  // (ExploreControl::void_footprints).
  bool void_footprints = true;
  // Tests (dynamic partial-order reduction only): the broker's counters in the state
  // (ExploreControl::keep_broker_counters); `leaf_states` are then named without them, to
  // compare with the search that leaves them out.
  bool keep_broker_counters = false;
  // With persistent sets: a replay goes on through each state where one event is taken
  // alone, and the runs it makes on the way stand in for the replays of those states' one
  // child (ExploreControl::continue_alone). The same search with fewer replays; the tests
  // turn it off to compare.
  bool continue_alone = true;
  // Go on after the first violation, to find the shortest order for every invariant that
  // breaks (TLC's -continue); by default the search ends with the batch that found the first.
  bool keep_going = false;
  // The playground's "can it still break from here?": the search starts at this moment (its
  // choices taken step by step, Schedule::stepwise, with its hand actions) instead of the
  // story's start; `prefix_faults` faults were taken on the way there (they count towards the
  // operator's rounds, not towards `faults`).
  std::optional<Schedule> from;
  int64_t prefix_faults = 0;
  // Stop once a state where the story ended with every invariant holding is found (the point
  // of no return asks only whether one exists); violations then do not end the search.
  bool stop_at_good_leaf = false;
  // Stop (complete = false) past this much wall time; 0: no limit. The explored states and
  // what they found do not depend on it, only how far the search gets.
  int64_t max_wall_ms = 0;
  // The story's reachability goals (Expect::goals), which the search decides: each one reached
  // (with the shortest order found) or, when the search is complete, unreachable. An invariant
  // that a reachable goal expects to break does not end the search. Empty: none asked.
  std::vector<Goal> goals;
  // Set by explore(): how many steps the story has before the operator's rounds.
  size_t story_steps = 0;
  // Called now and then with the counters so far (a terminal's progress line); `violations`
  // is the invariants found broken so far.
  std::function<void(int64_t states, int64_t transitions, int64_t frontier, int64_t depth,
                     int64_t violations)>
      progress;
};

struct ExploreCounterexample {
  Invariant invariant = Invariant::conservation;
  std::string detail;
  Scenario scenario;  // the story with its `schedule`: `inboxsim run` replays it
  size_t choices = 0;
  std::string path;  // where it was written, when it was
};

// What a search decided about one reachability goal.
struct ExploreGoal {
  enum class Status : uint8_t { reached, unreachable, unknown };
  Goal goal;
  Status status = Status::unknown;  // unreachable only when the search was complete
  size_t choices = 0;               // reached: the shortest order found that reaches it
  Scenario witness;                 // reached: the story with that order's schedule
  std::string path;                 // where the witness was written, when it was
  // Whether the story's claim holds: a reachable goal reached, an unreachable one not reached
  // by any order. Unknown is neither met nor failed.
  bool met() const {
    return goal.reachable ? status == Status::reached : status == Status::unreachable;
  }
  bool failed() const { return status != Status::unknown && !met(); }
};

struct ExploreResult {
  std::string file;
  std::string name;
  int64_t states = 0;       // distinct states (fingerprints) reached
  int64_t transitions = 0;  // choices followed (edges of the state graph explored)
  int64_t revisits = 0;     // choices that led to a state already explored
  int64_t leaves = 0;       // distinct states where the story had ended, nothing pending
  int64_t good_leaves = 0;  // of those, where every invariant held
  int64_t replays = 0;      // worlds built to reach states
  int64_t max_depth = 0;    // the longest schedule explored, in choices
  bool complete = false;    // false when --max-states stopped it
  bool sleep_sets = false;       // the reductions used (ExploreSettings)
  bool persistent_sets = false;
  bool dpor = false;
  // With dpor: races reversed (backtrack points added), executions cut short because every
  // event left was asleep, and states where the search fell back to every event (an event it
  // could not name there, or a story step with events pending across it).
  int64_t races = 0;
  int64_t sleep_blocked = 0;
  int64_t full_expansions = 0;
  int64_t cache_hits = 0;  // with dpor: orders cut at a state explored before
  // With dpor: the races reversed, by the pair of events ("ack account-service#1 / resume
  // account-service#1"), for a report of what the search spends its states on.
  std::map<std::string, int64_t> races_by_pair;
  // A run left what persistent sets assume (a consumer could fill its prefetch, a relay its
  // batch): the search was made again without them (`persistent_sets` false).
  bool persistent_sets_unsound = false;
  int64_t faults = 0;
  std::array<bool, kFaultKindCount> fault_kinds{};
  // ExploreSettings::ack_wait_expiries on a jetstream story (the claim's bound); -1 on a broker
  // with no ack wait.
  int64_t ack_wait_expiries = -1;
  int64_t preemption_bound = -1;  // ExploreSettings::preemptions; -1: every order
  // The operator's rounds appended to the story (ExploreSettings::operator_redrives); 0: none.
  int64_t redrive_rounds = 0;
  // One per invariant found broken, the shortest schedule first found for it, in the order
  // found. Empty: no order of this story with at most `faults` faults breaks an invariant
  // (when complete).
  std::vector<ExploreCounterexample> counterexamples;
  // One per ExploreSettings::goals, in the story's order.
  std::vector<ExploreGoal> goals;
  // The distinct final states reached, sorted: the reductions keep every one (tests).
  std::vector<Fingerprint> leaf_states;
  // Per probe, how many of the states explored (and orders that broke an invariant) were
  // reached through an order that reached the probe.
  Coverage coverage;
  // ExploreSettings::check_void_events: the void events checked, over all replays.
  int64_t void_events_checked = 0;
  int64_t wall_ms = 0;
};

// Explores `scenario`. REQUIRES: !clockless_refusal(scenario) (scenario/runner.h).
ExploreResult explore(const Scenario& scenario, const ExploreSettings& settings);

// The story `explore` searches: `scenario` with the operator's rounds appended when
// `settings` injects faults and has operator_redrives on (ExploreResult::redrive_rounds says
// how many). Its counterexamples carry these steps, so `inboxsim run` replays them exactly.
Scenario explored_story(const Scenario& scenario, const ExploreSettings& settings);

}  // namespace inboxsim
