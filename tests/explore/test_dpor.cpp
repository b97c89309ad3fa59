// Dynamic partial-order reduction (`explore --reduction dpor[,persistent]`, fuzz/dpor.h): the
// event log it reads, and that it loses no final state and no violation against every event of
// every state (`--reduction none`) on the stories where both finish, with faults, with two
// instances racing on one row, and with the operator's redrive.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "fuzz/explore.h"
#include "kernel/footprint.h"
#include "report/explore_view.h"
#include "scenario/parse.h"
#include "scenario/runner.h"
#include "scenario/write.h"
#include "support/explore.h"
#include "support/scenarios.h"
#include "world/world.h"

namespace inboxsim {

using testing::breaks;
using testing::broken_invariants;
using testing::check_same_outcomes;
using testing::library_scenario;
using testing::replay_breaks;
using testing::with_faults;
namespace {

ExploreSettings dpor(ExploreSettings settings, bool persistent) {
  settings.dpor = true;
  settings.persistent_sets = persistent;
  return settings;
}

// DPOR, with and without persistent sets, against a breadth-first search of the same story
// under the same bound (if any), going on past violations: the same final states by
// fingerprint, the same broken invariants, and every counterexample replays to its violation.
// The reference takes every event of every state, or (`reference_reduces`) its sleep sets and
// persistent sets. Returns the search with persistent sets; `without_persistent` false leaves
// out the one without them (out of reach where acks race everything: lesson 50 with a fault).
ExploreResult check_dpor_loses_nothing(const Scenario& scenario, ExploreSettings settings,
                                       bool reference_reduces = false,
                                       bool without_persistent = true) {
  settings.keep_going = true;
  ExploreSettings reference = settings;
  reference.sleep_sets = reference_reduces;
  reference.persistent_sets = reference_reduces;
  const ExploreResult full = explore(scenario, reference);
  REQUIRE(full.complete);
  ExploreResult kept;
  for (const bool persistent : {false, true}) {
    if (!persistent && !without_persistent) continue;
    ExploreResult reduced = explore(scenario, dpor(settings, persistent));
    INFO("persistent sets " << persistent);
    check_same_outcomes(reduced, full);
    CHECK(reduced.dpor);
    CHECK(reduced.preemption_bound == settings.preemptions);
    // Unbounded, DPOR takes no state the search of every event does not. (Under a bound a state
    // is counted once per count and runner, and the backtrack points at the last switch add
    // orders, so there it need not.)
    if (settings.preemptions < 0 && !reference_reduces) CHECK(reduced.states <= full.states);
    for (const ExploreCounterexample& cx : reduced.counterexamples) {
      CHECK(replay_breaks(cx));
    }
    if (persistent) kept = std::move(reduced);
  }
  return kept;
}

}  // namespace

TEST_CASE("the event log: every event after what made it, footprints sorted, story steps marked",
          "[dpor]") {
  const Scenario scenario = library_scenario("01-happy-path.json");
  WorldOptions options;
  options.keep_trace = false;
  options.explore.enabled = true;
  options.explore.log_events = true;
  World world(scenario, scenario.config, options);
  ExploreSettings settings;
  settings.story_steps = scenario.steps.size();
  for (const Step& step : scenario.steps) {
    if (step.kind != StepKind::run) world.story_point();
    play_step(world, step);
  }
  world.run_until_quiescent();
  const EventLog& log = world.event_log();
  REQUIRE(log.events.size() > 10);
  // The transfer request is the story's; everything after it descends from it.
  CHECK(log.events.front().story);
  CHECK_FALSE(log.events.front().pending);
  std::map<std::string_view, std::set<uint64_t>> minting;  // each service's mint entries
  for (size_t index = 1; index < log.events.size(); ++index) {
    const LoggedEvent& event = log.events[index];
    INFO("event " << index << ": " << event.kind << " " << event.who);
    CHECK_FALSE(event.story);
    CHECK(event.creator >= 0);
    CHECK(event.creator < static_cast<int64_t>(index));
    CHECK(std::is_sorted(event.footprint.begin(), event.footprint.end()));
    CHECK(std::adjacent_find(event.footprint.begin(), event.footprint.end()) ==
          event.footprint.end());
    CHECK_FALSE(event.footprint.empty());
    for (const uint64_t entry : event.footprint) {
      if (entry >> 58 == static_cast<uint64_t>(ResourceClass::mint)) {
        minting[event.who].insert(entry);
      }
    }
  }
  // account-service mints Account.Debited's id and transfer-service the credit request's. Each
  // mint is ordered only with the other mints of its cause (World's MessageNames): the two
  // services' mints are for two messages, so they commute.
  REQUIRE(minting.size() == 2);
  const std::set<uint64_t>& account_mints = minting.begin()->second;
  const std::set<uint64_t>& transfer_mints = std::next(minting.begin())->second;
  CHECK(std::none_of(account_mints.begin(), account_mints.end(),
                     [&](uint64_t entry) { return transfer_mints.count(entry) > 0; }));
  // An event picked among several names the event choice that picked it, in order.
  int64_t last_choice = -1;
  for (const LoggedEvent& event : log.events) {
    if (event.choice < 0) continue;
    REQUIRE(static_cast<size_t>(event.choice) < log.choices.size());
    CHECK(log.choices[static_cast<size_t>(event.choice)].event);
    CHECK(event.choice > last_choice);
    last_choice = event.choice;
  }
  CHECK(last_choice >= 0);
}

namespace {

// A story run once with no choice made and its events logged.
EventLog logged_run(const Scenario& scenario, bool void_footprints = true) {
  WorldOptions options;
  options.keep_trace = false;
  options.explore.enabled = true;
  options.explore.log_events = true;
  options.explore.void_footprints = void_footprints;
  World world(scenario, scenario.config, options);
  for (const Step& step : scenario.steps) {
    if (step.kind != StepKind::run) world.story_point();
    play_step(world, step);
  }
  world.run_until_quiescent();
  return world.event_log();
}

// The happy path run once with its events logged, with `relays` transfer-service instances
// whose relays claim what they publish or not.
EventLog logged_happy_path(int64_t relays, RelayClaim claim = RelayClaim::none) {
  Scenario scenario = library_scenario("01-happy-path.json");
  scenario.config.transfer_instances = relays;
  scenario.config.relay_claim = claim;
  return logged_run(scenario);
}

bool footprints_meet(const LoggedEvent& a, const LoggedEvent& b) {
  return for_each_meeting(a.footprint, b.footprint, [](uint64_t) { return true; });
}

}  // namespace

TEST_CASE("a relay's poll and a confirm of another row commute only where one relay polls",
          "[dpor][footprint]") {
  // With one transfer-service instance its poll reads a row awaiting a confirm and skips it, or
  // reads it sent and does not see it: the confirm's mark stays out of its footprint, and the
  // two commute. A second relay would publish the awaited row again if it polled first: there a
  // confirm that marks its row meets every poll of the outbox. Unless relays claim their rows
  // (relay.claim = skip_locked): the other relay skips the row as claimed before the confirm
  // and as sent after it, so the mark stays out again.
  struct Case {
    int64_t relays;
    RelayClaim claim;
  };
  for (const Case& story :
       {Case{1, RelayClaim::none}, Case{2, RelayClaim::none}, Case{2, RelayClaim::skip_locked}}) {
    const int64_t relays = story.relays;
    const bool claims = story.claim == RelayClaim::skip_locked;
    INFO(relays << " transfer-service instance(s), claims " << claims);
    const EventLog log = logged_happy_path(relays, story.claim);
    std::vector<const LoggedEvent*> polls;
    std::vector<const LoggedEvent*> marking;  // confirms whose footprint has a row changed
    size_t confirms = 0;
    for (const LoggedEvent& event : log.events) {
      if (event.kind == "relay_poll") polls.push_back(&event);
      if (event.kind != "confirm") continue;
      ++confirms;
      // A confirm whose row another relay's confirm marked first changes nothing.
      const bool marks = std::any_of(event.footprint.begin(), event.footprint.end(), [](uint64_t e) {
        return e >> 58 == static_cast<uint64_t>(ResourceClass::table_scan) &&
               (e & 3) != static_cast<uint64_t>(Access::query);
      });
      if (marks) marking.push_back(&event);
    }
    REQUIRE(confirms >= 2);
    REQUIRE_FALSE(polls.empty());
    size_t commuting = 0;
    for (const LoggedEvent* poll : polls) {
      for (const LoggedEvent* confirm : marking) {
        if (!footprints_meet(*poll, *confirm)) ++commuting;
      }
    }
    if (relays == 1 || claims) {
      CHECK(marking.empty());
    } else {
      REQUIRE_FALSE(marking.empty());
      CHECK(commuting == 0);
    }
  }
}

TEST_CASE("dpor loses no final state of the rejected transfer, and its counts are pinned",
          "[dpor]") {
  const ExploreResult result =
      check_dpor_loses_nothing(library_scenario("02-insufficient-funds.json"), with_faults(0, {}));
  CHECK(result.states == 8);
  CHECK(result.leaves == 1);
}

TEST_CASE("dpor loses nothing with a nack the operator redrives", "[dpor]") {
  check_dpor_loses_nothing(library_scenario("02-insufficient-funds.json"),
                           with_faults(1, {FaultKind::nack}));
}

TEST_CASE("dpor finds a defenceless bank's double debit, and run replays it", "[dpor]") {
  Scenario scenario = library_scenario("05-duplicate-by-hand.json");
  REQUIRE(config_set_text(scenario.config, "account.inbox", "none").empty());
  REQUIRE(config_set_text(scenario.config, "account.ledger_unique", "false").empty());
  ExploreSettings settings = with_faults(0, {});
  settings.keep_going = true;
  // Held to the breadth-first search, which the explore tests hold to the search without
  // persistent sets on this story.
  const ExploreResult breadth = explore(scenario, settings);
  const ExploreResult reduced = explore(scenario, dpor(settings, true));
  check_same_outcomes(reduced, breadth);
  CHECK(breaks(reduced, Invariant::single_effect));
  for (const ExploreCounterexample& cx : reduced.counterexamples) {
    CHECK(replay_breaks(cx));
  }
}

TEST_CASE("dpor tries a fault before the order without it and finds a short counterexample first",
          "[dpor]") {
  // Lesson 52 without its ledger key: the broker delivers Transfer.Requested twice and both
  // copies debit. The breadth-first search's shortest order takes 3 choices; the depth-first
  // search, which stops at its first violation, finds one as short, after a handful of states.
  Scenario scenario = library_scenario("52-explorer-two-faults.json");
  scenario.config.account_ledger_unique = false;
  scenario.expect = Expect{};
  const ExploreSettings settings = with_faults(2, {FaultKind::duplicate});
  const ExploreResult breadth = explore(scenario, settings);
  const ExploreResult reduced = explore(scenario, dpor(settings, true));
  REQUIRE_FALSE(breadth.counterexamples.empty());
  REQUIRE_FALSE(reduced.counterexamples.empty());
  const auto shortest = [](const ExploreResult& result) {
    size_t choices = SIZE_MAX;
    for (const ExploreCounterexample& cx : result.counterexamples) {
      choices = std::min(choices, cx.choices);
    }
    return choices;
  };
  CHECK(shortest(breadth) == 3);
  CHECK(shortest(reduced) == shortest(breadth));
  CHECK(reduced.states < 20);
}

TEST_CASE("dpor with persistent sets explores fewer states than the breadth-first search",
          "[dpor]") {
  const Scenario scenario = library_scenario("02-insufficient-funds.json");
  const ExploreSettings settings =
      with_faults(1, {FaultKind::nack, FaultKind::publish_nack, FaultKind::drop_ack});
  const ExploreResult breadth = explore(scenario, settings);
  const ExploreResult reduced = explore(scenario, dpor(settings, true));
  check_same_outcomes(reduced, breadth);
  CHECK(reduced.counterexamples.empty());
  // Pinned: a fingerprint that merges too much, or a footprint that misses a conflict, moves
  // them (40 and 140 with a row lock's grant and the step after it as two events; 36, 6 final
  // states and 98 with channel numbers in the state).
  CHECK(reduced.states == 33);
  CHECK(reduced.leaves == 3);
  CHECK(breadth.states == 95);
  CHECK(reduced.replays < breadth.replays);
}

TEST_CASE("dpor reports the same search with any number of jobs", "[dpor]") {
  const Scenario scenario = library_scenario("02-insufficient-funds.json");
  ExploreSettings settings = dpor(with_faults(1, {FaultKind::nack}), true);
  const ExploreResult one = explore(scenario, settings);
  settings.jobs = 2;
  const ExploreResult two = explore(scenario, settings);
  CHECK(one.states == two.states);
  CHECK(one.transitions == two.transitions);
  CHECK(one.races == two.races);
  CHECK(one.leaf_states == two.leaf_states);
}

TEST_CASE("dpor loses nothing with a crash anywhere, nor with one fault of any kind",
          "[.explore_long]") {
  const Scenario scenario = library_scenario("02-insufficient-funds.json");
  check_dpor_loses_nothing(scenario, with_faults(1, {FaultKind::crash}));
  // One fault of any kind, against the breadth-first search: fewer states, pinned.
  ExploreSettings settings = with_faults(1, {});
  settings.fault_kinds = explorable_fault_kinds();
  const ExploreResult breadth = explore(scenario, settings);
  const ExploreResult reduced = explore(scenario, dpor(settings, true));
  check_same_outcomes(reduced, breadth);
  // 2,529 and 3,908 with a service's database as one resource; 1,266 and 3,843 with rows but
  // keyed reads of one value ordered with each other; 1,252 with each fault tried second;
  // 1,232 and 3,807 with a row lock's grant and the step after it as two events; 802 and 2,046
  // with channel numbers, next tags and the next position in the state; 530 with every ack
  // ordered with its queue's deliveries.
  CHECK(reduced.states == 527);
  CHECK(breadth.states == 1322);
}

TEST_CASE("dpor loses nothing where two instances race two copies on one row (lesson 50)",
          "[.explore_long]") {
  Scenario scenario = library_scenario("50-explorer-proves-the-key.json");
  REQUIRE(scenario.config.account_instances == 2);
  // Held to the breadth-first search, going on past violations (the explore tests hold that
  // one to the search without persistent sets on this story).
  for (const bool key : {true, false}) {
    INFO("ledger key " << key);
    scenario.config.account_ledger_unique = key;
    ExploreSettings settings = with_faults(0, {});
    settings.keep_going = true;
    const ExploreResult breadth = explore(scenario, settings);
    const ExploreResult reduced = explore(scenario, dpor(settings, true));
    check_same_outcomes(reduced, breadth);
    CHECK(breaks(reduced, Invariant::single_effect) == !key);
    for (const ExploreCounterexample& cx : reduced.counterexamples) {
      CHECK(replay_breaks(cx));
    }
  }
}

TEST_CASE("dpor loses nothing where two transfers' chains take turns (lesson 77)",
          "[.explore_long]") {
  // Two transfers, each instance taking one message at a time: the relay's confirms of the two
  // transfers' rows are in flight at once, and each confirm meets only its own row of the
  // relay's memory, so two of them commute, and a poll that reads no full batch commutes with
  // them.
  const Scenario scenario = library_scenario("77-explorer-two-transfers.json");
  REQUIRE(scenario.config.broker_prefetch == 1);
  const ExploreResult reduced = check_dpor_loses_nothing(scenario, with_faults(0, {}));
  CHECK(broken_invariants(reduced).empty());
  CHECK(reduced.leaf_states.size() == 1);
  // Pinned: 3,631 with a confirm ordered with every other event of the relay, 3,065 with a poll
  // ordered with every confirm, 609 (and 4 final states) with every two mints and inserts
  // ordered and final states told apart by their rowids and ids.
  CHECK(reduced.states == 433);
}

namespace {

// Lesson 77's two transfers (one message at a time) with transfer-service crashing at `at` in
// its handling of t1's `type`: the relay's confirms still on the wire when it dies are void
// after it.
Scenario two_transfers_with_a_relay_crash(const std::string& type, const std::string& at) {
  return testing::parse_ok(
      R"({"accounts": {"alice": 10000, "bob": 0, "carol": 5000, "dave": 0},
          "config": {"broker.prefetch": 1},
          "steps": [{"fault": {"kind": "crash", "service": "transfer-service", "at": ")" +
      at + R"(", "match": {"type": ")" + type + R"(", "transfer": "t1"}}},
                    {"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}},
                    {"transfer": {"id": "t2", "from": "carol", "to": "dave", "amount": 1000}}]})");
}

// DPOR (persistent sets, past violations, every void event checked) with a void job's
// footprint cut to what voided it, and with the footprint it would act with: the same final
// states and broken invariants. Returns the two searches, cut first.
std::pair<ExploreResult, ExploreResult> explore_void_footprints_both_ways(
    const Scenario& scenario) {
  ExploreSettings settings = with_faults(0, {});
  settings.dpor = true;
  settings.persistent_sets = true;
  settings.keep_going = true;
  settings.check_void_events = true;
  ExploreResult cut = explore(scenario, settings);
  settings.void_footprints = false;
  ExploreResult acting = explore(scenario, settings);
  check_same_outcomes(cut, acting);
  return {std::move(cut), std::move(acting)};
}

}  // namespace

TEST_CASE("a confirm of a dead relay's channel meets the crash and not the restart",
          "[dpor][footprint]") {
  // The run as it goes with no choice made: transfer-service dies right after its relay
  // publishes t1's debit command, whose confirm is still on the wire; it comes after the crash,
  // void. Each meets the crash (which of the two comes first decides whether the row
  // is marked sent), and nothing else: not the restart, nor the new relay's poll and confirms.
  for (const bool void_footprints : {true, false}) {
    INFO("void footprints " << void_footprints);
    const EventLog log = logged_run(
        two_transfers_with_a_relay_crash("Transfer.Requested", "after_publish"), void_footprints);
    const auto restart = std::find_if(log.events.begin(), log.events.end(),
                                      [](const LoggedEvent& e) { return e.kind == "restart"; });
    REQUIRE(restart != log.events.end());
    REQUIRE(restart->creator >= 0);
    const auto crash_at = static_cast<size_t>(restart->creator);
    const LoggedEvent& crash = log.events[crash_at];
    size_t void_confirms = 0;
    size_t later_meetings = 0;
    for (size_t index = crash_at + 1; index < log.events.size(); ++index) {
      const LoggedEvent& event = log.events[index];
      if (event.kind != "confirm" || event.creator > static_cast<int64_t>(crash_at)) continue;
      ++void_confirms;
      CHECK(footprints_meet(event, crash));
      for (size_t other = crash_at + 1; other < log.events.size(); ++other) {
        if (other != index && footprints_meet(event, log.events[other])) ++later_meetings;
      }
    }
    REQUIRE(void_confirms > 0);
    if (void_footprints) {
      CHECK(later_meetings == 0);
    } else {
      CHECK(later_meetings > 0);
    }
  }
}

TEST_CASE("a reconnect without a clock reads its process, and that loses nothing", "[dpor]") {
  // transfer-service's ack of Account.Debited is lost with its connection; the client opens a
  // new one. Of its process the reconnect changes only the heartbeat's phase, which only a
  // pause's heartbeat reads, and an explored story has no clock: it reads the process (is it
  // up?) and meets a crash or a restart, not the confirms and handler steps of its instance.
  const EventLog log = logged_run(testing::parse_ok(testing::text_of("{}", R"(
      {"fault": {"kind": "drop_ack", "service": "transfer-service",
                 "match": {"type": "Account.Debited"}}},
      {"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}},
      {"run": {"until": "quiescent"}})")));
  size_t reconnects = 0;
  for (const LoggedEvent& event : log.events) {
    if (event.kind != "reconnect") continue;
    ++reconnects;
    const auto process =
        std::find_if(event.footprint.begin(), event.footprint.end(), [](uint64_t entry) {
          return entry >> 58 == static_cast<uint64_t>(ResourceClass::instance);
        });
    REQUIRE(process != event.footprint.end());
    CHECK((*process & 3) == static_cast<uint64_t>(Access::read));
  }
  CHECK(reconnects == 1);
  // Lesson 77 with one dropped connection anywhere, pinned (20,924 states when a reconnect
  // writes its process: it raced every confirm of its relay).
  Scenario lesson = library_scenario("77-explorer-two-transfers.json");
  const ExploreResult result =
      explore(lesson, dpor(with_faults(1, {FaultKind::drop_connection}), true));
  CHECK(result.complete);
  CHECK(broken_invariants(result).empty());
  CHECK(result.states == 3050);
  CHECK(result.leaves == 2);
}

TEST_CASE("dpor loses nothing with a lost ack anywhere, against every event of every state",
          "[.explore_long]") {
  // The happy path with one drop_ack anywhere: the connection and its channels close, the
  // client reconnects. Every event of every state takes 59,843 states; DPOR 1,392 (1,424 with
  // every ack ordered with its queue's deliveries, and 1,466 when a reconnect also writes its
  // process).
  const ExploreResult reduced = check_dpor_loses_nothing(library_scenario("01-happy-path.json"),
                                                         with_faults(1, {FaultKind::drop_ack}));
  CHECK(reduced.states == 1392);
}

TEST_CASE("a job void for good touches only what voided it, and that loses nothing", "[dpor]") {
  // A confirm of the dead relay's channel, or a loop's turn of the dead incarnation, changes
  // nothing wherever it goes from then on: its footprint is the channel or the incarnation it
  // reads, which the crash wrote. With the footprint it has when it acts, it races the restart,
  // the new relay's poll that publishes its row again, and that publication's confirm.
  const auto [reduced, acting] = explore_void_footprints_both_ways(
      two_transfers_with_a_relay_crash("Transfer.Requested", "after_publish"));
  CHECK(broken_invariants(reduced).empty());
  CHECK(reduced.states == 532);
  CHECK(acting.states == 631);
}

TEST_CASE("dpor loses nothing where two relays claim their rows, and the claims cut the copies",
          "[dpor]") {
  // One transfer through two transfer-service instances whose relays claim what they publish
  // (relay.claim = skip_locked): a confirm's mark stays out of the footprint (the other relay
  // skips the row as claimed, then as sent), so that rule is held here to the breadth-first
  // search. The claims are what make the story small: without them both relays publish the
  // rows and the copies' inbox passes interleave (about 40,000 states).
  Scenario scenario = library_scenario("01-happy-path.json");
  scenario.config.transfer_instances = 2;
  scenario.config.relay_claim = RelayClaim::skip_locked;
  const ExploreResult claiming = check_dpor_loses_nothing(scenario, with_faults(0, {}), true);
  CHECK(broken_invariants(claiming).empty());
  // 99 states and 1 final state with every two mints and inserts ordered. A row marked sent
  // keeps no claim, so which relay sent it is not a state of its own.
  CHECK(claiming.states == 92);
  CHECK(claiming.leaves == 1);
  scenario.config.relay_claim = RelayClaim::none;
  ExploreSettings settings = with_faults(0, {});
  settings.dpor = true;
  settings.max_states = 1000;
  CHECK_FALSE(explore(scenario, settings).complete);
}

TEST_CASE("a search that stops short says which races it reversed most", "[dpor]") {
  // Two relays that claim nothing: each command goes out twice and the copies' inbox passes
  // race (about 25,000 states), so 1,000 states stop the search short.
  Scenario scenario = library_scenario("01-happy-path.json");
  scenario.config.transfer_instances = 2;
  ExploreSettings settings = with_faults(0, {});
  settings.dpor = true;
  settings.max_states = 1000;
  const ExploreResult stopped = explore(scenario, settings);
  REQUIRE_FALSE(stopped.complete);
  const nlohmann::ordered_json most = explore_json(stopped)["reduction"]["races_most_reversed"];
  REQUIRE(most.size() >= 3);
  CHECK(most[0]["races"].get<int64_t>() >= most[1]["races"].get<int64_t>());
  CHECK(most[1]["races"].get<int64_t>() >= most[2]["races"].get<int64_t>());
  // The text names the three the JSON puts first, with their counts, in that order, before
  // the verdict.
  std::string line = "\n  races it reversed most: ";
  for (size_t i = 0; i < 3; ++i) {
    if (i > 0) line += "; ";
    line += most[i]["events"].get<std::string>() + " (" +
            std::to_string(most[i]["races"].get<int64_t>()) + ")";
  }
  std::ostringstream text;
  print_explore(text, stopped);
  CHECK_THAT(text.str(), Catch::Contains(line + "\nINCOMPLETE: "));
  // A complete search's verdict is its answer, and so is a break the search stopped at: no
  // such line.
  scenario.config.transfer_instances = 1;
  const ExploreResult complete = explore(scenario, settings);
  REQUIRE(complete.complete);
  std::ostringstream proven;
  print_explore(proven, complete);
  CHECK_THAT(proven.str(), !Catch::Contains("races it reversed most"));
  ExploreSettings duplicate = with_faults(1, {FaultKind::duplicate});
  duplicate.dpor = true;
  const ExploreResult broken = explore(library_scenario("27-defence-all-off.json"), duplicate);
  REQUIRE_FALSE(broken.complete);
  REQUIRE_FALSE(broken.counterexamples.empty());
  REQUIRE_FALSE(broken.races_by_pair.empty());
  std::ostringstream violated;
  print_explore(violated, broken);
  CHECK_THAT(violated.str(), Catch::Contains("VIOLATED"));
  CHECK_THAT(violated.str(), !Catch::Contains("races it reversed most"));
}

TEST_CASE(
    "a job void for good touches only what voided it: against the breadth-first search, "
    "and where it cuts most",
    "[.explore_long]") {
  // The story of the [dpor] test above, held to the breadth-first search (13,503 states with
  // sleep sets and persistent sets); then the crash after the commit of t1's Account.Debited,
  // where the void confirms cut two thirds of the states, with the same 4 final states.
  check_dpor_loses_nothing(two_transfers_with_a_relay_crash("Transfer.Requested", "after_publish"),
                           with_faults(0, {}), true);
  const auto [reduced, acting] = explore_void_footprints_both_ways(
      two_transfers_with_a_relay_crash("Account.Debited", "after_commit"));
  CHECK(reduced.leaf_states.size() == 4);
  CHECK(reduced.states == 2928);
  CHECK(acting.states == 8644);
}

TEST_CASE("under a preemption bound, DPOR reaches what the bound allows", "[dpor]") {
  // Two instances on one row, against the breadth-first search with its own reductions.
  const Scenario lesson50 = library_scenario("50-explorer-proves-the-key.json");
  // Pinned, so that a key that merges states with other futures, a lost backtrack point, or a
  // cache hit that does not replay its subtree's races with the order that reached it, shows:
  // 48, 157 and 321 states. Without persistent sets, bounds 1 and 2 take seconds (more under
  // the sanitizers): the long test below runs them, as it runs 02 with a fault.
  const std::vector<int64_t> pinned = {48, 157, 321};
  for (const int64_t bound : {0, 1, 2}) {
    INFO("lesson 50, bound " << bound);
    ExploreSettings settings = with_faults(0, {});
    settings.preemptions = bound;
    const ExploreResult result = check_dpor_loses_nothing(lesson50, settings, true, bound == 0);
    CHECK(result.states == pinned[static_cast<size_t>(bound)]);
  }
  Scenario defenceless = lesson50;
  defenceless.config.account_ledger_unique = false;
  for (const int64_t bound : {0, 1}) {
    INFO("lesson 50 with its ledger key off, bound " << bound);
    ExploreSettings settings = with_faults(0, {});
    settings.preemptions = bound;
    const ExploreResult result = check_dpor_loses_nothing(defenceless, settings, true, bound == 0);
    CHECK(breaks(result, Invariant::single_effect));
  }
}

TEST_CASE("under a preemption bound, a state reached again replays its subtree's races", "[dpor]") {
  // With DPOR's sleep sets off, an order that reaches a cached state after a lost confirm
  // races events inside the state's subtree; unless the cache replays those races, one of the
  // 5 final states within the bound is lost (3 of lesson 50's 10).
  ExploreSettings settings = with_faults(1, {FaultKind::lose_confirm});
  settings.preemptions = 0;
  settings.dpor_sleep_sets = false;
  const ExploreResult result =
      check_dpor_loses_nothing(library_scenario("01-happy-path.json"), settings, true, false);
  CHECK(result.leaf_states.size() == 5);
  CHECK_FALSE(result.sleep_sets);
}

TEST_CASE("under a preemption bound, DPOR reaches what the bound allows: two instances with a "
          "fault, two transfers",
          "[.explore_long]") {
  // With a fault of any kind, the search as `explore --preemptions` runs it (with persistent
  // sets; without them lesson 50 takes over ten minutes, as it does with no bound). Pinned: a
  // cache hit that does not replay its subtree's races takes fewer.
  ExploreSettings one = with_faults(1, {});
  one.fault_kinds = explorable_fault_kinds();
  one.preemptions = 0;
  CHECK(check_dpor_loses_nothing(library_scenario("50-explorer-proves-the-key.json"), one, true,
                                 false)
            .states == 18388);
  ExploreSettings two = with_faults(2, {});
  two.fault_kinds = explorable_fault_kinds();
  two.preemptions = 1;
  CHECK(check_dpor_loses_nothing(library_scenario("02-insufficient-funds.json"), two, true, false)
            .states == 41054);
  ExploreSettings none = with_faults(0, {});
  none.preemptions = 0;
  check_dpor_loses_nothing(library_scenario("77-explorer-two-transfers.json"), none, true);
  // Against every event of every state.
  ExploreSettings fault = with_faults(1, {});
  fault.fault_kinds = explorable_fault_kinds();
  fault.preemptions = 1;
  check_dpor_loses_nothing(library_scenario("02-insufficient-funds.json"), fault);
  none.preemptions = 1;
  check_dpor_loses_nothing(library_scenario("50-explorer-proves-the-key.json"), none);
  // Lesson 50 with bounds 1 and 2, and with its ledger key off and bound 1, without persistent
  // sets too.
  Scenario lesson50 = library_scenario("50-explorer-proves-the-key.json");
  for (const int64_t bound : {1, 2}) {
    INFO("lesson 50, bound " << bound);
    ExploreSettings settings = with_faults(0, {});
    settings.preemptions = bound;
    check_dpor_loses_nothing(lesson50, settings, true);
  }
  lesson50.config.account_ledger_unique = false;
  none.preemptions = 1;
  CHECK(breaks(check_dpor_loses_nothing(lesson50, none, true), Invariant::single_effect));
  // 02 with a fault of any kind anywhere and bound 0, against every event of every state.
  fault.preemptions = 0;
  check_dpor_loses_nothing(library_scenario("02-insufficient-funds.json"), fault);
}

namespace {

// The bench's story (two transfers between two accounts, in opposite directions) with `config`
// (a JSON object's members), searched to its end as `explore` searches by default.
ExploreResult explore_bench_story(const std::string& config) {
  const std::string story = R"({"name": "two-transfers", "accounts": {"alice": 10000, "bob": 0},
    "config": {)" + config + R"(},
    "steps": [{"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}},
              {"transfer": {"id": "t2", "from": "bob", "to": "alice", "amount": 100}}]})";
  ExploreSettings settings = with_faults(0, {});
  settings.dpor = true;
  return explore(testing::parse_ok(story), settings);
}

}  // namespace

TEST_CASE(
    "two transfers with two account-service instances and one transfer-service instance "
    "are proven for every order",
    "[.explore_long]") {
  // The bench's story (two transfers between two accounts, in opposite directions). With two
  // account-service instances and one transfer-service instance every order completes: pinned,
  // so a reduction that loses a race or a fingerprint that merges too much shows.
  const ExploreResult two_accounts =
      explore_bench_story(R"("account.instances": 2, "transfer.instances": 1)");
  CHECK(two_accounts.complete);
  CHECK(broken_invariants(two_accounts).empty());
  // 13,169 states with every two mints and inserts ordered; 2,127 with every ack ordered with
  // its queue's deliveries.
  CHECK(two_accounts.states == 510);
  CHECK(two_accounts.leaves == 2);
}

TEST_CASE("the bench's story with two instances of each service is proven when relays claim",
          "[.explore_claims]") {
  // Two transfers in opposite directions, two account-service and two transfer-service
  // instances, relays that claim the rows they publish (relay.claim = skip_locked): every order
  // completes. With relays that claim nothing both publish a row and the two copies' inbox
  // passes interleave; that search is not finished at 300,000 states (docs/model.md).
  const ExploreResult result = explore_bench_story(
      R"("account.instances": 2, "transfer.instances": 2, "relay.claim": "skip_locked")");
  CHECK(result.complete);
  CHECK(broken_invariants(result).empty());
  // 38,515 states and 2 final states with every two mints and inserts ordered.
  CHECK(result.states == 5129);
  CHECK(result.leaves == 2);
}

}  // namespace inboxsim
