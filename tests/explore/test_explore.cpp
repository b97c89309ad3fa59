// `inboxsim explore` (docs/contract.md §8.3): the search reaches every state, its reductions
// lose none, what it reports does not depend on --jobs, and every counterexample it writes is
// replayed by `run` to the violation it was found for.
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "support/explore.h"
#include "support/scenarios.h"
#include "fuzz/explore.h"
#include "fuzz/matrix.h"
#include "scenario/parse.h"
#include "scenario/runner.h"
#include "scenario/write.h"

namespace inboxsim {

using testing::breaks;
using testing::broken_invariants;
using testing::check_same_outcomes;
using testing::library_scenario;
using testing::replay_breaks;
using testing::with_faults;
namespace {

RunResult replay(const ExploreCounterexample& cx) { return testing::replay_written(cx.scenario); }

TEST_CASE("explore proves the rejected transfer for every order of its events", "[explore]") {
  const Scenario scenario = library_scenario("02-insufficient-funds.json");
  ExploreSettings every_order = with_faults(0, {});
  every_order.persistent_sets = false;
  const ExploreResult result = explore(scenario, every_order);
  CHECK(result.complete);
  CHECK(result.counterexamples.empty());
  // The relay's confirm, the acks and the handlers' steps interleave: many states, one end.
  CHECK(result.states > 20);
  CHECK(result.leaves == 1);
  CHECK(result.transitions >= result.states);
  // Taking an ack or a confirm first where nothing can race it: the same end, fewer states.
  const ExploreResult reduced = explore(scenario, with_faults(0, {}));
  CHECK(reduced.complete);
  CHECK(reduced.counterexamples.empty());
  CHECK(reduced.leaves == 1);
  CHECK(reduced.states < result.states);
}

// Two searches that must be the same one: the same states reached in the same order, the
// same ends, probes and counterexamples.
void check_same_search(const ExploreResult& a, const ExploreResult& b) {
  CHECK(a.states == b.states);
  CHECK(a.transitions == b.transitions);
  CHECK(a.revisits == b.revisits);
  CHECK(a.leaves == b.leaves);
  CHECK(a.max_depth == b.max_depth);
  CHECK(a.leaf_states == b.leaf_states);
  CHECK(a.coverage.counts == b.coverage.counts);
  REQUIRE(a.counterexamples.size() == b.counterexamples.size());
  for (size_t i = 0; i < a.counterexamples.size(); ++i) {
    CHECK(a.counterexamples[i].invariant == b.counterexamples[i].invariant);
    CHECK(a.counterexamples[i].scenario.schedule->choices ==
          b.counterexamples[i].scenario.schedule->choices);
  }
}

TEST_CASE("explore reports the same search with any number of jobs", "[explore]") {
  const Scenario scenario = library_scenario("02-insufficient-funds.json");
  ExploreSettings one = with_faults(0, {});
  ExploreSettings four = one;
  four.jobs = 4;
  check_same_search(explore(scenario, one), explore(scenario, four));
}

// The same search, found with fewer replays: a replay that goes on through the states where
// one event is taken alone stands in for the replays of their one child (continue_alone).
void check_going_on_is_the_same_search(const Scenario& scenario, ExploreSettings settings) {
  settings.keep_going = true;
  settings.jobs = 2;
  ExploreSettings stopping = settings;
  stopping.continue_alone = false;
  const ExploreResult on = explore(scenario, settings);
  const ExploreResult off = explore(scenario, stopping);
  check_same_search(on, off);
  CHECK(on.replays < off.replays);
  CHECK(off.replays == off.transitions);
}

// About 5 s in Release (the five-pass outbox's searches, twice each): with the long tests, not
// the unit tests, which under the sanitizers it outgrew.
TEST_CASE("a replay that goes on through states taken alone makes the same search",
          "[.explore_long]") {
  check_going_on_is_the_same_search(
      library_scenario("02-insufficient-funds.json"),
      with_faults(1, {FaultKind::crash, FaultKind::drop_ack, FaultKind::nack}));
  // With violations: the counterexamples are the same orders, found at the same point.
  Scenario scenario = library_scenario("05-duplicate-by-hand.json");
  REQUIRE(config_set_text(scenario.config, "account.inbox", "none").empty());
  REQUIRE(config_set_text(scenario.config, "account.ledger_unique", "false").empty());
  check_going_on_is_the_same_search(scenario, with_faults(1, {FaultKind::duplicate}));
}

// Explores `file` with and without sleep sets (persistent sets off in both, since they do cut
// states): the same states, fewer transitions, where two events commute only if either order
// reaches the very same state. Where two messages' ids and inserts commute, either order
// reaches the same state up to which got which number, and sleep sets visit one of each such
// pair: fewer states, the same final states (named canonically).
void check_sleep_sets_lose_no_state(const std::string& file, int64_t jobs) {
  const Scenario scenario = library_scenario(file);
  ExploreSettings with = with_faults(0, {});
  with.jobs = jobs;
  with.persistent_sets = false;
  with.names_commute = false;
  ExploreSettings without = with;
  without.sleep_sets = false;
  const ExploreResult reduced = explore(scenario, with);
  const ExploreResult full = explore(scenario, without);
  CHECK(reduced.states == full.states);
  CHECK(reduced.leaves == full.leaves);
  CHECK(reduced.transitions < full.transitions);
  with.names_commute = true;
  const ExploreResult commuting = explore(scenario, with);
  CHECK(commuting.leaf_states == full.leaf_states);
  CHECK(commuting.states <= full.states);
}

TEST_CASE("sleep sets explore fewer transitions and lose no state", "[explore]") {
  check_sleep_sets_lose_no_state("02-insufficient-funds.json", 1);
}

// The same search with the settings' persistent sets and without them.
struct BothWays {
  ExploreResult reduced;
  ExploreResult full;
};
BothWays explore_both_ways(const Scenario& scenario, const ExploreSettings& settings) {
  ExploreSettings without = settings;
  without.persistent_sets = false;
  return BothWays{explore(scenario, settings), explore(scenario, without)};
}

// Explores with and without persistent sets, going on past violations: the same final states
// (fingerprints) and the same broken invariants, through fewer states. Returns the reduced
// search.
ExploreResult check_persistent_sets_lose_nothing(const Scenario& scenario,
                                                 ExploreSettings settings) {
  settings.keep_going = true;
  const auto [reduced, full] = explore_both_ways(scenario, settings);
  check_same_outcomes(reduced, full);
  CHECK_FALSE(reduced.persistent_sets_unsound);
  CHECK(reduced.leaves == full.leaves);
  CHECK(reduced.states < full.states);
  return reduced;
}

TEST_CASE("persistent sets lose no final state of the rejected transfer", "[explore]") {
  check_persistent_sets_lose_nothing(library_scenario("02-insufficient-funds.json"),
                                     with_faults(0, {}));
}

TEST_CASE("persistent sets lose no final state and no violation with a duplicate anywhere",
          "[explore]") {
  const ExploreResult result = check_persistent_sets_lose_nothing(
      library_scenario("02-insufficient-funds.json"), with_faults(1, {FaultKind::duplicate}));
  CHECK(result.counterexamples.empty());
}

TEST_CASE("persistent sets lose no violation of a defenceless bank", "[explore]") {
  Scenario scenario = library_scenario("05-duplicate-by-hand.json");
  REQUIRE(config_set_text(scenario.config, "account.inbox", "none").empty());
  REQUIRE(config_set_text(scenario.config, "account.ledger_unique", "false").empty());
  const ExploreResult result = check_persistent_sets_lose_nothing(scenario, with_faults(0, {}));
  CHECK(breaks(result, Invariant::single_effect));
}

// The reduced search (sleep sets and persistent sets, the default) against every event of
// every state (`--reduction none`), going on past violations: the same final states by
// fingerprint and the same broken invariants.
void check_reductions_lose_nothing(const Scenario& scenario, ExploreSettings settings) {
  settings.keep_going = true;
  ExploreSettings none = settings;
  none.sleep_sets = false;
  none.persistent_sets = false;
  const ExploreResult reduced = explore(scenario, settings);
  const ExploreResult full = explore(scenario, none);
  check_same_outcomes(reduced, full);
  CHECK_FALSE(reduced.persistent_sets_unsound);
  CHECK(reduced.states < full.states);
}

TEST_CASE("the reduced search loses nothing against every event of every state", "[explore]") {
  check_reductions_lose_nothing(library_scenario("02-insufficient-funds.json"),
                                with_faults(0, {}));
  // A nack parks the message in the error queue and the operator's redrive replays it.
  check_reductions_lose_nothing(library_scenario("02-insufficient-funds.json"),
                                with_faults(1, {FaultKind::nack}, 2));
}

TEST_CASE("where a consumer's prefetch can fill, the search goes without persistent sets",
          "[explore]") {
  Scenario scenario = library_scenario("02-insufficient-funds.json");
  REQUIRE(config_set_text(scenario.config, "broker.prefetch", "1").empty());
  const auto [guarded, full] = explore_both_ways(scenario, with_faults(0, {}));
  CHECK(guarded.persistent_sets_unsound);
  CHECK_FALSE(guarded.persistent_sets);
  CHECK(guarded.states == full.states);
  CHECK(guarded.leaf_states == full.leaf_states);
}

TEST_CASE("the operator redrives what a nack parked, and without one the transfer stays stuck",
          "[explore]") {
  const Scenario scenario = library_scenario("01-happy-path.json");
  // A nack ("database busy") with no retry policy parks the message in the error queue, as
  // MassTransit does; the fuzzer's stories end with an operator replaying it, and so do the
  // explorer's when it injects faults: K + the story's own faults + 1 rounds.
  const ExploreResult operated = explore(scenario, with_faults(1, {FaultKind::nack}));
  CHECK(operated.complete);
  CHECK(operated.redrive_rounds == 2);
  CHECK(operated.counterexamples.empty());
  CHECK(operated.coverage.counts[static_cast<size_t>(Probe::operator_redrive)] > 0);
  ExploreSettings nobody = with_faults(1, {FaultKind::nack});
  nobody.operator_redrives = false;
  const ExploreResult stuck = explore(scenario, nobody);
  CHECK(stuck.redrive_rounds == 0);
  REQUIRE(breaks(stuck, Invariant::termination));
  const RunResult run = replay(stuck.counterexamples.front());
  CHECK(std::any_of(run.violations.begin(), run.violations.end(),
                    [](const Violation& v) { return v.invariant == Invariant::termination; }));
  // With no fault injected there is nothing for an operator to do: the story is explored as
  // written.
  CHECK(explore(scenario, with_faults(0, {FaultKind::nack})).redrive_rounds == 0);
  // Where nothing is parked, a redrive of empty queues changes no state: the story with the
  // rounds written out, explored with no fault, has the same states and the same ends.
  const Scenario rejected = library_scenario("02-insufficient-funds.json");
  const Scenario with_rounds = explored_story(rejected, with_faults(1, {FaultKind::nack}));
  REQUIRE(with_rounds.steps.size() == rejected.steps.size() + 4);
  const ExploreResult rounds = explore(with_rounds, with_faults(0, {}));
  const ExploreResult as_written = explore(rejected, with_faults(0, {}));
  CHECK(rounds.complete);
  CHECK(rounds.states == as_written.states);
  CHECK(rounds.leaf_states == as_written.leaf_states);
}

TEST_CASE("a counterexample carries the operator's rounds, and run replays it through them",
          "[explore]") {
  Scenario scenario = library_scenario("50-explorer-proves-the-key.json");
  scenario.config.account_ledger_unique = false;
  const ExploreResult result = explore(scenario, with_faults(1, {FaultKind::nack}));
  // The story's own duplicate counts: 1 + 1 + 1 rounds.
  CHECK(result.redrive_rounds == 3);
  REQUIRE(breaks(result, Invariant::single_effect));
  for (const ExploreCounterexample& cx : result.counterexamples) {
    INFO(invariant_name(cx.invariant));
    REQUIRE(cx.scenario.steps.size() == scenario.steps.size() + 6);
    CHECK(cx.scenario.steps.back().kind == StepKind::redrive);
    CHECK(cx.scenario.steps.back().queue == "all");
    CHECK(replay_breaks(cx));
  }
}

// World::void_forever repeats the early return of each job's handler (an ack on a closed
// channel, the step of a dead handler, a poll of an earlier incarnation, ...); persistent sets
// take such an event alone, which is sound only if it really does nothing. Every void event of
// these searches is run between two fingerprints that must be equal.
void check_void_events_of(const std::string& file, ExploreSettings settings) {
  INFO(file);
  settings.check_void_events = true;
  settings.jobs = 2;
  const ExploreResult result = explore(library_scenario(file), settings);
  CHECK(result.complete);
  CHECK(result.counterexamples.empty());
  CHECK(result.void_events_checked > 0);
}


TEST_CASE("a preemption bound explores fewer orders, and what it proves is bounded",
          "[explore]") {
  // Lesson 50: two account-service instances take two copies of one message side by side.
  const Scenario scenario = library_scenario("50-explorer-proves-the-key.json");
  const ExploreResult every = explore(scenario, with_faults(0, {}));
  REQUIRE(every.complete);
  CHECK(every.preemption_bound == -1);
  ExploreSettings settings = with_faults(0, {});
  settings.preemptions = 0;
  const ExploreResult none = explore(scenario, settings);
  settings.preemptions = 1;
  const ExploreResult one = explore(scenario, settings);
  for (const ExploreResult* result : {&none, &one}) {
    CHECK(result->complete);
    CHECK(result->counterexamples.empty());
    // Every final state of a bounded search is one of the full search's.
    CHECK(std::includes(every.leaf_states.begin(), every.leaf_states.end(),
                        result->leaf_states.begin(), result->leaf_states.end()));
  }
  CHECK(none.preemption_bound == 0);
  CHECK(one.preemption_bound == 1);
  // Pinned: each bound takes fewer orders than the next. A state is counted once per preemption
  // count and runner it is reached with (whether or not the runner has a step ready: a delivery
  // may give it one), and only inert events sleep, so a bound of 1 already costs more than half
  // the full search.
  CHECK(none.states == 141);
  CHECK(one.states == 746);
  CHECK(every.states == 1156);  // 1,580 with a service's database as one resource
  CHECK(none.states < one.states);
  CHECK(one.states < every.states);
  // A bound above any order's preemptions is the full search (the rejected transfer with one
  // nack anywhere and the operator's redrive, for speed).
  const Scenario rejected = library_scenario("02-insufficient-funds.json");
  const ExploreResult full = explore(rejected, with_faults(1, {FaultKind::nack}));
  ExploreSettings high = with_faults(1, {FaultKind::nack});
  high.preemptions = 10'000;
  const ExploreResult bounded = explore(rejected, high);
  CHECK(bounded.complete);
  CHECK(bounded.leaf_states == full.leaf_states);
  // A state reached with two preemption counts is two states of a bounded search.
  CHECK(bounded.states >= full.states);
}

// A bounded search with its sleep sets (only inert events sleep) against the same bound
// without them, going on past violations: the same final states and the same broken
// invariants, in fewer transitions.
void check_bounded_sleep_sets_lose_nothing(const Scenario& scenario, ExploreSettings settings) {
  settings.keep_going = true;
  ExploreSettings awake = settings;
  awake.sleep_sets = false;
  const ExploreResult reduced = explore(scenario, settings);
  const ExploreResult full = explore(scenario, awake);
  check_same_outcomes(reduced, full);
  CHECK(reduced.preemption_bound == settings.preemptions);
  CHECK(reduced.transitions < full.transitions);
}

TEST_CASE("under a preemption bound, sleep sets lose nothing the bound allows", "[explore]") {
  const Scenario lesson50 = library_scenario("50-explorer-proves-the-key.json");
  for (const int64_t bound : {0, 1, 2}) {
    INFO("bound " << bound);
    ExploreSettings settings = with_faults(0, {}, 2);
    settings.preemptions = bound;
    check_bounded_sleep_sets_lose_nothing(lesson50, settings);
  }
  // Two instances race, with their ledger key off: the same breaks are found with or without.
  Scenario defenceless = lesson50;
  defenceless.config.account_ledger_unique = false;
  ExploreSettings zero = with_faults(0, {}, 2);
  zero.preemptions = 0;
  check_bounded_sleep_sets_lose_nothing(defenceless, zero);
  // A fault of any kind anywhere, and the operator's redrive.
  ExploreSettings one = with_faults(1, {}, 2);
  one.fault_kinds = explorable_fault_kinds();
  one.preemptions = 1;
  check_bounded_sleep_sets_lose_nothing(library_scenario("02-insufficient-funds.json"), one);
}

TEST_CASE("a bounded search still finds what breaks within its bound, and run replays it",
          "[explore]") {
  Scenario scenario = library_scenario("50-explorer-proves-the-key.json");
  scenario.config.account_ledger_unique = false;
  ExploreSettings settings = with_faults(0, {});
  settings.preemptions = 0;
  const ExploreResult result = explore(scenario, settings);
  REQUIRE(breaks(result, Invariant::single_effect));
  for (const ExploreCounterexample& cx : result.counterexamples) {
    CHECK(replay_breaks(cx));
  }
}

TEST_CASE("the search stops at --max-states and says it is incomplete", "[explore]") {
  const Scenario scenario = library_scenario("02-insufficient-funds.json");
  ExploreSettings settings = with_faults(0, {});
  settings.max_states = 5;
  const ExploreResult result = explore(scenario, settings);
  CHECK_FALSE(result.complete);
  CHECK(result.states == 5);
}

TEST_CASE("a schedule that does not fit its story is reported, not followed", "[explore]") {
  Scenario scenario = library_scenario("02-insufficient-funds.json");
  scenario.schedule = Schedule{};
  scenario.schedule->choices = {60000};
  RunOptions options;
  options.keep_trace = false;
  const RunResult result = run_scenario(scenario, options);
  REQUIRE_FALSE(result.violations.empty());
  CHECK(result.violations.back().invariant == Invariant::termination);
  CHECK_THAT(result.violations.back().detail, Catch::Contains("the schedule does not fit"));
}

TEST_CASE("stories that need a clock cannot be explored", "[explore]") {
  const Scenario timed = library_scenario("14-window-too-short.json");
  const std::optional<Refusal> refusal = clockless_refusal(timed);
  REQUIRE(refusal.has_value());
  CHECK_THAT(refusal->pointer, Catch::StartsWith("/steps/"));
  CHECK_FALSE(clockless_refusal(library_scenario("01-happy-path.json")).has_value());
}

// ---- longer: run as the ctest entry explore_long ----------------------------------------------

// About 15 s in Release (10,494 states for 09 alone), so not a unit test.
TEST_CASE("an event taken as void changes nothing when it runs", "[.explore_long]") {
  check_void_events_of("02-insufficient-funds.json",
                       with_faults(1, {FaultKind::crash, FaultKind::drop_connection,
                                         FaultKind::drop_ack, FaultKind::lose_confirm,
                                         FaultKind::publish_nack, FaultKind::nack}));
  // The story's own crash after account-service's commit: every pending event of the dead
  // instance (its handlers' next steps, its acks, its sweep) is void.
  check_void_events_of("09-crash-after-commit.json", with_faults(0, {}));
}

TEST_CASE("with no preemption a handler runs on, and every order still reaches its end",
          "[.explore_long]") {
  // Lesson 77: two transfers, one instance of each service. With P = 0 an instance's handler
  // keeps the processor while it has a step ready; the others' steps wait, but deliveries, acks
  // and polls go on around it, and no order is stranded with only preemptions left (the runner's
  // own step never is one). It reaches every final state the full search reaches.
  const Scenario scenario = library_scenario("77-explorer-two-transfers.json");
  ExploreSettings full = with_faults(0, {}, 2);
  full.dpor = true;
  full.jobs = 1;
  const ExploreResult every = explore(scenario, full);
  ExploreSettings bounded = with_faults(0, {}, 2);
  bounded.preemptions = 0;
  const ExploreResult none = explore(scenario, bounded);
  REQUIRE(every.complete);
  REQUIRE(none.complete);
  CHECK(none.leaf_states == every.leaf_states);
  CHECK(none.states == 7536);  // pinned: a merged state or a stranded order changes it
}

TEST_CASE("with its defences off, a duplicate by hand is found to debit twice, and run replays it",
          "[.explore_long]") {
  Scenario scenario = library_scenario("05-duplicate-by-hand.json");
  REQUIRE(config_set_text(scenario.config, "account.inbox", "none").empty());
  REQUIRE(config_set_text(scenario.config, "account.ledger_unique", "false").empty());
  ExploreSettings settings = with_faults(0, {}, 2);
  settings.keep_going = true;
  const ExploreResult result = explore(scenario, settings);
  REQUIRE(breaks(result, Invariant::single_effect));
  for (const ExploreCounterexample& cx : result.counterexamples) {
    INFO(invariant_name(cx.invariant));
    const RunResult run = replay(cx);
    CHECK_FALSE(run.passed);
    CHECK(std::any_of(run.violations.begin(), run.violations.end(),
                      [&](const Violation& v) { return v.invariant == cx.invariant; }));
  }
}

TEST_CASE("with every defence on, the same story is proven for every order", "[.explore_long]") {
  const Scenario scenario = library_scenario("05-duplicate-by-hand.json");
  const ExploreResult result = explore(scenario, with_faults(0, {}));
  CHECK(result.complete);
  CHECK(result.counterexamples.empty());
}

TEST_CASE("sleep sets lose no state of the happy path", "[.explore_long]") {
  check_sleep_sets_lose_no_state("01-happy-path.json", 2);
}

TEST_CASE("explore reports the probes its orders reached", "[.explore_long]") {
  const Scenario scenario = library_scenario("02-insufficient-funds.json");
  const ExploreResult quiet = explore(scenario, with_faults(0, {}));
  CHECK(quiet.coverage == Coverage{});
  ExploreSettings settings = with_faults(1, {FaultKind::duplicate}, 2);
  const ExploreResult duplicated = explore(scenario, settings);
  CHECK(duplicated.complete);
  // A copy of Transfer.Requested meets the MassTransit inbox; some orders race two first
  // deliveries into its key, and a copy arriving later finds the row consumed.
  CHECK(duplicated.coverage[Probe::dedupe_masstransit] > 0);
  CHECK(duplicated.coverage[Probe::masstransit_inbox_key] > 0);
  CHECK(duplicated.coverage[Probe::masstransit_row_lock] > 0);
  CHECK(duplicated.coverage[Probe::dedupe_marten_precheck] == 0);
}

// Found by the explorer: a relay that died after publishing left a confirm of its dead channel
// on the way, which used to take the place of the new incarnation's confirm, so the row stayed
// unsent forever. Every order with one crash now settles.
TEST_CASE("a late confirm of a crashed relay's channel is void: every crash order settles",
          "[.explore_long]") {
  const Scenario scenario = library_scenario("02-insufficient-funds.json");
  ExploreSettings settings = with_faults(1, {FaultKind::crash}, 2);
  const ExploreResult result = explore(scenario, settings);
  CHECK(result.complete);
  CHECK_FALSE(breaks(result, Invariant::termination));
}

TEST_CASE("persistent sets lose nothing with a crash anywhere (void acks and confirms after it)",
          "[.explore_long]") {
  ExploreSettings settings = with_faults(1, {FaultKind::crash}, 2);
  const ExploreResult result =
      check_persistent_sets_lose_nothing(library_scenario("02-insufficient-funds.json"), settings);
  CHECK(result.counterexamples.empty());
}

TEST_CASE("the reduced search loses nothing against every event of every state with a crash",
          "[.explore_long]") {
  check_reductions_lose_nothing(library_scenario("02-insufficient-funds.json"),
                                with_faults(1, {FaultKind::crash}, 2));
}

TEST_CASE("persistent sets lose nothing where two instances race two copies (lesson 50)",
          "[.explore_long]") {
  ExploreSettings settings = with_faults(0, {}, 2);
  Scenario scenario = library_scenario("50-explorer-proves-the-key.json");
  check_persistent_sets_lose_nothing(scenario, settings);
  scenario.config.account_ledger_unique = false;
  const ExploreResult broken = check_persistent_sets_lose_nothing(scenario, settings);
  CHECK(breaks(broken, Invariant::single_effect));
}

// The lessons' claim: with the ledger key the story is proven (no order breaks it), and without
// it the explorer finds the double debit, in orders `run` replays to the same violation.
ExploreResult check_the_key_proves_it(Scenario scenario, const ExploreSettings& settings) {
  const ExploreResult proven = explore(scenario, settings);
  CHECK(proven.complete);
  CHECK(proven.counterexamples.empty());
  scenario.config.account_ledger_unique = false;
  const ExploreResult broken = explore(scenario, settings);
  REQUIRE(breaks(broken, Invariant::single_effect));
  for (const ExploreCounterexample& cx : broken.counterexamples) {
    CHECK(replay_breaks(cx));
  }
  return proven;
}

TEST_CASE("lesson 50: the ledger key alone is proven for every order, and breaks without it",
          "[.explore_long]") {
  const Scenario scenario = library_scenario("50-explorer-proves-the-key.json");
  // Two instances take the two copies side by side: the race the unique index is there for.
  REQUIRE(scenario.config.account_instances == 2);
  ExploreSettings settings = with_faults(0, {}, 2);
  check_the_key_proves_it(scenario, settings);
}

TEST_CASE("lesson 52: one transfer with the ledger key alone is proven up to two duplicates",
          "[.explore_long]") {
  const Scenario scenario = library_scenario("52-explorer-two-faults.json");
  ExploreSettings settings = with_faults(2, {FaultKind::duplicate}, 2);
  const ExploreResult proven = check_the_key_proves_it(scenario, settings);
  // Two copies in flight at once, of one message or of two: far more than one fault's states.
  CHECK(proven.states > 10 * explore(scenario, with_faults(1, {FaultKind::duplicate})).states);
}

TEST_CASE("matrix --exhaustive with dpor spreads its rows over the jobs and is the same search",
          "[explore]") {
  // No fault: about 50 states a row, so the 32 rows take about a second.
  ExploreSettings settings = with_faults(0, {}, 1);
  settings.dpor = true;
  std::vector<size_t> done;
  const std::vector<ExhaustiveRow> one =
      run_exhaustive_matrix(exhaustive_matrix_story(), settings, nullptr);
  settings.jobs = 2;
  const std::vector<ExhaustiveRow> two = run_exhaustive_matrix(
      exhaustive_matrix_story(), settings,
      [&](size_t index, ExhaustiveRow& row) {
        CHECK(row.story.name == one[index].story.name);
        done.push_back(index);
      });
  REQUIRE(one.size() == 32);
  REQUIRE(two.size() == 32);
  std::sort(done.begin(), done.end());
  CHECK(done.size() == 32);
  CHECK(std::adjacent_find(done.begin(), done.end()) == done.end());  // each row once
  for (size_t index = 0; index < one.size(); ++index) {
    INFO(one[index].story.name);
    CHECK(two[index].defences == one[index].defences);
    CHECK(two[index].result.states == one[index].result.states);
    CHECK(two[index].result.leaf_states == one[index].result.leaf_states);
    CHECK(two[index].result.counterexamples.size() == one[index].result.counterexamples.size());
    for (size_t cx = 0; cx < one[index].result.counterexamples.size(); ++cx) {
      CHECK(two[index].result.counterexamples[cx].choices ==
            one[index].result.counterexamples[cx].choices);
    }
  }
  // The rows this story breaks with no fault: neither the account inbox, nor the processed
  // index, nor the state machine.
  CHECK(std::count_if(one.begin(), one.end(), [](const ExhaustiveRow& row) {
          return !row.result.counterexamples.empty();
        }) == 4);
}

TEST_CASE("matrix --exhaustive: all defences proven, and a defence never makes a row worse",
          "[.explore_long]") {
  ExploreSettings settings = with_faults(0, {}, 2);
  const std::vector<ExhaustiveRow> rows =
      run_exhaustive_matrix(exhaustive_matrix_story(), settings, nullptr);
  REQUIRE(rows.size() == 32);
  CHECK(rows.front().result.complete);
  CHECK(rows.front().result.counterexamples.empty());
  // Even without faults the concurrent services race (the account outbox's sweep against the
  // handler's own publish): some rows with defences off break.
  const auto broken = [](const ExhaustiveRow& row) { return !row.result.counterexamples.empty(); };
  CHECK(std::any_of(rows.begin(), rows.end(), broken));
  for (const ExhaustiveRow& row : rows) {
    INFO(row.story.name);
    // Nothing unfinished: every row is a proof (complete) or a counterexample (which ends it).
    CHECK((row.result.complete || !row.result.counterexamples.empty()));
    for (const ExploreCounterexample& cx : row.result.counterexamples) {
      CHECK(replay_breaks(cx));
    }
    // Switching one more defence off never turns a broken row into a proven one.
    if (!broken(row)) continue;
    for (const ExhaustiveRow& weaker : rows) {
      bool subset = true;
      for (size_t i = 0; i < kDefenceCount; ++i) subset &= !weaker.defences[i] || row.defences[i];
      if (subset) CHECK(broken(weaker));
    }
  }
}

}  // namespace
}  // namespace inboxsim
