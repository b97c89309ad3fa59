// Reachability goals (docs/contract.md §8.3): a story's `expect.reachable` and
// `expect.unreachable`, parsed with errors that say where, written back, ignored by `run`, and
// decided by `explore`: reached with an order that `run` replays to the goal, unreachable only
// after a complete search, unknown otherwise; the breadth-first search and DPOR agree.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

#include "support/scenarios.h"
#include "fuzz/explore.h"
#include "fuzz/goals.h"
#include "scenario/parse.h"
#include "scenario/runner.h"
#include "scenario/write.h"

namespace inboxsim {

using testing::library_scenario;
using testing::parse_ok;
namespace {

constexpr std::string_view kStory = R"({
  "accounts": {"alice": 1000, "bob": 0},
  "steps": [{"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}}],
  "expect": {)";

// A story of one transfer with `expect` keys `body` (the text inside "expect": {...}).
std::string story_with(const std::string& body) { return std::string(kStory) + body + "}}"; }

// The error a bad file gets: its pointer and message.
std::string parse_error(const std::string& text) {
  const ParseResult parsed = parse_scenario_text(text, "goals.json");
  REQUIRE(parsed.error.has_value());
  return parsed.error->message();
}

Goal goal_of(const std::string& json, bool reachable = true) {
  const Scenario scenario =
      parse_ok(story_with(std::string(reachable ? "\"reachable\"" : "\"unreachable\"") + ": [" +
                          json + "]"));
  REQUIRE(scenario.expect.goals.size() == 1);
  return scenario.expect.goals.front();
}

const ExploreGoal& outcome(const ExploreResult& result, size_t index) {
  REQUIRE(result.goals.size() > index);
  return result.goals[index];
}

// The witness as a user meets it: written, parsed back, run; it must reach its goal.
bool witness_reaches(const ExploreGoal& goal) {
  const RunResult run = testing::replay_written(goal.witness);
  return goal_reached(goal.goal, run.violations, run.coverage, &run);
}

ExploreSettings no_faults() {
  ExploreSettings settings;
  settings.faults = 0;
  return settings;
}

}  // namespace

TEST_CASE("goals parse in each of their four shapes and are written back as read", "[goals]") {
  const Goal broken = goal_of(R"({"broken": "single_effect"})");
  CHECK(broken.kind == Goal::Kind::broken);
  CHECK(broken.invariant == Invariant::single_effect);
  CHECK(broken.reachable);
  const Goal probe = goal_of(R"({"probe": "ledger.key_rejected"})", false);
  CHECK(probe.kind == Goal::Kind::probe);
  CHECK(probe.probe == Probe::ledger_key_rejected);
  CHECK_FALSE(probe.reachable);
  const Goal saga = goal_of(R"({"transfer": "t1", "state": "FAILED"})");
  CHECK(saga.kind == Goal::Kind::saga);
  CHECK(saga.subject == "t1");
  CHECK(saga.state == SagaState::failed);
  const Goal balance = goal_of(R"({"account": "alice", "balance": -1500})");
  CHECK(balance.kind == Goal::Kind::balance);
  CHECK(balance.balance == -1500);
  CHECK(goal_text(saga) == "t1 ends FAILED");
  CHECK(goal_text(balance) == "alice ends with -1500");

  const Scenario both = parse_ok(story_with(
      R"("reachable": [{"broken": "single_effect"}, {"account": "bob", "balance": 2500}],
         "unreachable": [{"transfer": "t1", "state": "COMPLETED"}])"));
  const nlohmann::ordered_json written = scenario_to_json(both)["expect"];
  CHECK(written["reachable"].dump() ==
        R"([{"broken":"single_effect"},{"account":"bob","balance":2500}])");
  CHECK(written["unreachable"].dump() == R"([{"transfer":"t1","state":"COMPLETED"}])");
  const Scenario again = parse_ok(scenario_to_json(both).dump());
  REQUIRE(again.expect.goals.size() == 3);
  CHECK(goal_text(again.expect.goals[2]) == "t1 ends COMPLETED");
  CHECK_FALSE(again.expect.goals[2].reachable);
}

TEST_CASE("a bad goal is refused with where it is and what was expected", "[goals]") {
  CHECK_THAT(parse_error(story_with(R"("reachable": {"broken": "single_effect"})")),
             Catch::Contains("/expect/reachable") && Catch::Contains("an array of reachability goals"));
  CHECK_THAT(parse_error(story_with(R"("reachable": [{"broken": "money"}])")),
             Catch::Contains("/expect/reachable/0/broken") && Catch::Contains("single_effect"));
  CHECK_THAT(parse_error(story_with(R"("unreachable": [{"probe": "nope"}])")),
             Catch::Contains("/expect/unreachable/0/probe") &&
                 Catch::Contains("ledger.key_rejected"));
  CHECK_THAT(parse_error(story_with(R"("reachable": [{"broken": "conservation", "probe": "ack.lost"}])")),
             Catch::Contains("/expect/reachable/0:") && Catch::Contains("one of {\"broken\""));
  CHECK_THAT(parse_error(story_with(R"("reachable": [{"transfer": "t9", "state": "FAILED"}])")),
             Catch::Contains("/expect/reachable/0/transfer") && Catch::Contains("t1"));
  CHECK_THAT(parse_error(story_with(R"("reachable": [{"transfer": "t1"}])")),
             Catch::Contains("/expect/reachable/0/state") && Catch::Contains("REJECTED"));
  CHECK_THAT(parse_error(story_with(R"("reachable": [{"account": "carol", "balance": 0}])")),
             Catch::Contains("/expect/reachable/0/account") && Catch::Contains("alice"));
  CHECK_THAT(parse_error(story_with(R"("reachable": [{"account": "bob"}])")),
             Catch::Contains("/expect/reachable/0/balance"));
  CHECK_THAT(parse_error(story_with(R"("reachable": [{"saga": "t1"}])")),
             Catch::Contains("/expect/reachable/0/saga") && Catch::Contains("reachability goal"));
  std::string many;
  for (size_t i = 0; i <= kGoalsMax; ++i) many += std::string(i > 0 ? "," : "") + R"({"broken": "conservation"})";
  CHECK_THAT(parse_error(story_with(R"("reachable": [)" + many + "]")),
             Catch::Contains("/expect/reachable/64") && Catch::Contains("at most 64"));
}

TEST_CASE("run does not check goals: one run shows one order", "[goals]") {
  // A goal no order reaches (bob never gets money here) changes nothing for `run`.
  const Scenario scenario = parse_ok(story_with(
      R"("transfers": {"t1": "REJECTED"}, "reachable": [{"account": "bob", "balance": 2500}])"));
  RunOptions options;
  options.keep_trace = false;
  const RunResult run = run_scenario(scenario, options);
  CHECK(run.passed);
  CHECK(std::none_of(run.expectations.begin(), run.expectations.end(),
                     [](const ExpectationResult& e) { return e.what.find("reach") != std::string::npos; }));
}

TEST_CASE("explore decides end-state goals: reached with an order run replays, or unreachable",
          "[goals][explore]") {
  // The rejected transfer: every order ends REJECTED with alice's money untouched.
  Scenario scenario = library_scenario("02-insufficient-funds.json");
  ExploreSettings settings = no_faults();
  settings.goals = parse_ok(story_with(R"("reachable": [{"transfer": "t1", "state": "REJECTED"},
                                                          {"account": "alice", "balance": 1000}],
                                          "unreachable": [{"transfer": "t1", "state": "COMPLETED"},
                                                          {"account": "bob", "balance": 2500}])"))
                       .expect.goals;
  for (const bool dpor : {false, true}) {
    settings.dpor = dpor;
    const ExploreResult result = explore(scenario, settings);
    INFO("dpor " << dpor);
    REQUIRE(result.complete);
    CHECK(result.counterexamples.empty());
    for (size_t i = 0; i < 2; ++i) {
      CHECK(outcome(result, i).status == ExploreGoal::Status::reached);
      CHECK(outcome(result, i).met());
      CHECK(witness_reaches(outcome(result, i)));
    }
    for (size_t i = 2; i < 4; ++i) {
      CHECK(outcome(result, i).status == ExploreGoal::Status::unreachable);
      CHECK(outcome(result, i).met());
    }
  }
  // A goal the file gets wrong is decided against it: "alice ends with 0" is unreachable.
  settings.dpor = false;
  settings.goals = parse_ok(story_with(R"("reachable": [{"account": "alice", "balance": 0}])"))
                       .expect.goals;
  const ExploreResult wrong = explore(scenario, settings);
  CHECK(outcome(wrong, 0).status == ExploreGoal::Status::unreachable);
  CHECK(outcome(wrong, 0).failed());
}

TEST_CASE("an expected break does not end the search, and the others still stop it", "[goals][explore]") {
  // Lesson 50 with the ledger key off: with no inbox either, both copies debit alice in every
  // order, and the money one of them took is destroyed.
  Scenario scenario = library_scenario("50-explorer-proves-the-key.json");
  scenario.config.account_ledger_unique = false;
  ExploreSettings settings = no_faults();
  settings.preemptions = 0;
  const auto goals_of = [](const std::string& expect) {
    return parse_ok(R"({"accounts": {"alice": 10000, "bob": 0},
                        "steps": [{"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}}],
                        "expect": {)" + expect + "}}")
        .expect.goals;
  };
  const ExploreResult plain = explore(scenario, settings);
  REQUIRE_FALSE(plain.counterexamples.empty());
  CHECK_FALSE(plain.complete);  // stopped at the first broken invariant
  // Every break expected (the double debit, the money destroyed, and the saga completed over
  // two debits, which some order within the bound reaches too): the search goes on to the end
  // and decides every goal.
  settings.goals = goals_of(R"("reachable": [{"broken": "single_effect"}, {"broken": "conservation"},
                                             {"broken": "saga_ledger"}],
                               "unreachable": [{"probe": "ledger.key_rejected"}])");
  const ExploreResult expected = explore(scenario, settings);
  CHECK(expected.complete);
  CHECK(expected.counterexamples.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(outcome(expected, i).status == ExploreGoal::Status::reached);
    CHECK(witness_reaches(outcome(expected, i)));
  }
  // With the key off, nothing can reject a second entry.
  CHECK(outcome(expected, 3).status == ExploreGoal::Status::unreachable);
  CHECK(std::all_of(expected.goals.begin(), expected.goals.end(),
                    [](const ExploreGoal& goal) { return goal.met(); }));
  // Only single_effect expected: conservation still ends the search, and what it had not
  // decided stays unknown.
  settings.goals = goals_of(R"("reachable": [{"broken": "single_effect"}],
                               "unreachable": [{"probe": "ledger.key_rejected"}])");
  const ExploreResult stopped = explore(scenario, settings);
  CHECK_FALSE(stopped.complete);
  CHECK(outcome(stopped, 0).status == ExploreGoal::Status::reached);
  CHECK(outcome(stopped, 1).status == ExploreGoal::Status::unknown);

  // With the key on, the second entry is refused in some order and nothing breaks; and, the
  // breaks no longer happening, their goals are decided against the file.
  scenario.config.account_ledger_unique = true;
  settings.goals = goals_of(R"("reachable": [{"probe": "ledger.key_rejected"},
                                             {"account": "alice", "balance": 7500},
                                             {"broken": "single_effect"}],
                               "unreachable": [{"transfer": "t1", "state": "REJECTED"}])");
  const ExploreResult keyed = explore(scenario, settings);
  CHECK(keyed.complete);
  CHECK(keyed.counterexamples.empty());
  CHECK(outcome(keyed, 0).status == ExploreGoal::Status::reached);
  CHECK(witness_reaches(outcome(keyed, 0)));
  CHECK(outcome(keyed, 1).status == ExploreGoal::Status::reached);
  CHECK(witness_reaches(outcome(keyed, 1)));
  CHECK(outcome(keyed, 2).status == ExploreGoal::Status::unreachable);
  CHECK(outcome(keyed, 2).failed());
  CHECK(outcome(keyed, 3).status == ExploreGoal::Status::unreachable);
  CHECK(outcome(keyed, 3).met());
}

TEST_CASE("a goal the search did not decide is unknown, never unreachable", "[goals][explore]") {
  const Scenario scenario = library_scenario("02-insufficient-funds.json");
  ExploreSettings settings = no_faults();
  settings.max_states = 2;
  settings.goals = parse_ok(story_with(R"("unreachable": [{"transfer": "t1", "state": "COMPLETED"}])"))
                       .expect.goals;
  const ExploreResult result = explore(scenario, settings);
  REQUIRE_FALSE(result.complete);
  CHECK(outcome(result, 0).status == ExploreGoal::Status::unknown);
  CHECK_FALSE(outcome(result, 0).met());
  CHECK_FALSE(outcome(result, 0).failed());
}

TEST_CASE("a probe goal under faults: the shortest order to a lost ack", "[goals][explore]") {
  const Scenario scenario = library_scenario("02-insufficient-funds.json");
  ExploreSettings settings;
  settings.faults = 1;
  settings.fault_kinds[static_cast<size_t>(FaultKind::drop_ack)] = true;
  settings.goals = parse_ok(story_with(R"("reachable": [{"probe": "ack.lost"}],
                                          "unreachable": [{"probe": "redelivery.after_commit"}])"))
                       .expect.goals;
  const ExploreResult bfs = explore(scenario, settings);
  REQUIRE(bfs.complete);
  CHECK(outcome(bfs, 0).status == ExploreGoal::Status::reached);
  CHECK(witness_reaches(outcome(bfs, 0)));
  // A dropped ack redelivers a message whose consumer committed, but nobody crashed.
  CHECK(outcome(bfs, 1).status == ExploreGoal::Status::unreachable);
  settings.dpor = true;
  const ExploreResult dpor = explore(scenario, settings);
  REQUIRE(dpor.complete);
  CHECK(outcome(dpor, 0).status == ExploreGoal::Status::reached);
  CHECK(outcome(dpor, 1).status == ExploreGoal::Status::unreachable);
  // Breadth-first finds a shortest order; depth-first, one no shorter than it.
  CHECK(outcome(dpor, 0).choices >= outcome(bfs, 0).choices);
  CHECK(witness_reaches(outcome(dpor, 0)));
}

TEST_CASE("the breadth-first search and DPOR decide lesson 50's goals alike", "[.explore_long]") {
  const Scenario scenario = library_scenario("50-explorer-proves-the-key.json");
  ExploreSettings settings = no_faults();
  settings.goals = parse_ok(story_with(R"("reachable": [{"probe": "ledger.key_rejected"},
                                                          {"probe": "redelivery.after_commit"},
                                                          {"account": "alice", "balance": 7500}],
                                          "unreachable": [{"broken": "single_effect"},
                                                          {"account": "bob", "balance": 5000}])"))
                       .expect.goals;
  const ExploreResult bfs = explore(scenario, settings);
  settings.dpor = true;
  const ExploreResult dpor = explore(scenario, settings);
  REQUIRE(bfs.complete);
  REQUIRE(dpor.complete);
  REQUIRE(bfs.goals.size() == dpor.goals.size());
  for (size_t i = 0; i < bfs.goals.size(); ++i) {
    INFO(goal_text(bfs.goals[i].goal));
    CHECK(bfs.goals[i].status == dpor.goals[i].status);
    if (dpor.goals[i].status == ExploreGoal::Status::reached) {
      CHECK(dpor.goals[i].choices >= bfs.goals[i].choices);
      CHECK(witness_reaches(dpor.goals[i]));
    }
  }
  CHECK(bfs.goals[0].status == ExploreGoal::Status::reached);
  CHECK(bfs.goals[2].status == ExploreGoal::Status::reached);
  CHECK(bfs.goals[3].status == ExploreGoal::Status::unreachable);
  CHECK(bfs.goals[4].status == ExploreGoal::Status::unreachable);
}

}  // namespace inboxsim
