// The library as a course: the new config keys, the narration's money sentence,
// legend and deciding lines, and `demo` in the guide's lesson order.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>

#include "app/course.h"
#include "app/demo.h"
#include "domain/config.h"
#include "report/glossary.h"
#include "report/legend.h"
#include "report/narrate.h"
#include "scenario/parse.h"
#include "scenario/runner.h"
#include "support/scenarios.h"
#include "support/text.h"

using namespace inboxsim;
using inboxsim::testing::contains;
using inboxsim::testing::library_scenario;
using inboxsim::testing::narrated;

namespace {

const std::string kLibrary = INBOXSIM_SOURCE_DIR "/scenarios/";

}  // namespace

TEST_CASE("the course's config keys refuse bad values and name what they expect", "[course]") {
  Config config;
  CHECK(config_set(config, "account.remember_rejections", "yes") == "true or false");
  CHECK(config_set(config, "account.ledger_conflict", "ignore") == "a string, one of fault, ack");
  CHECK_FALSE(config.account_remember_rejections);
  CHECK(config.account_ledger_conflict == LedgerConflict::fault);
  CHECK(config_set_text(config, "account.ledger_conflict", "ack").empty());
  CHECK(config_set_text(config, "account.remember_rejections", "true").empty());
  CHECK(config_diff_json(config).dump() ==
        R"({"account.remember_rejections":true,"account.ledger_conflict":"ack"})");
}

TEST_CASE(
    "the default bank debits a rejected transfer replayed late, and remembered rejections stop it",
    "[course]") {
  Scenario scenario = library_scenario("29-late-duplicate-after-rejection.json");
  const RunResult seed_bank = run_scenario(scenario, RunOptions{});
  CHECK(seed_bank.passed);
  CHECK(seed_bank.balances.at("alice") == 3500);
  REQUIRE(seed_bank.violations.size() == 1);
  CHECK(seed_bank.violations[0].invariant == Invariant::saga_ledger);

  scenario.config.account_remember_rejections = true;
  const RunResult remembered = run_scenario(scenario, RunOptions{});
  CHECK(remembered.balances.at("alice") == 6000);
  CHECK(remembered.violations.empty());
  // Before the key had its own name, the ledger index switched the record on: the default bank
  // of turn 3 ran this trace, and the key restores it exactly. (Recorded again for the MassTransit
  // inbox's one-message passes and the 10 s cleanup tick, and for the typed trace fields:
  // CHANGELOG.md.)
  CHECK(remembered.trace_hash == "9ebbba62c7b7622b");
}

TEST_CASE("ledger_conflict = ack absorbs a duplicate the ledger key refuses, and fault parks it",
          "[course]") {
  Scenario scenario = library_scenario("22-defence-no-account-inbox.json");
  const RunResult faulted = run_scenario(scenario, RunOptions{});
  CHECK(faulted.stats.error_queued > 0);
  scenario.config.account_ledger_conflict = LedgerConflict::ack;
  const RunResult acked = run_scenario(scenario, RunOptions{});
  CHECK(acked.stats.error_queued == 0);
  CHECK(acked.stats.dedupe_hits == faulted.stats.dedupe_hits + faulted.stats.error_queued);
  CHECK(acked.balances == faulted.balances);
  CHECK(acked.violations.empty());
}

TEST_CASE("the narration says what happened to the money before the verdict", "[course]") {
  const std::string all_off = narrated(library_scenario("27-defence-all-off.json"));
  const size_t money = all_off.find("Money: first broke at");
  const size_t verdict = all_off.find("PASS  27-defence-all-off");
  REQUIRE(money != std::string::npos);
  REQUIRE(verdict != std::string::npos);
  CHECK(money < verdict);
  // Where it first broke (money destroyed) and how it ended (invented) are both said.
  CHECK(contains(all_off, "2500 invented by the end"));
  CHECK(contains(all_off, "This story is meant to show it"));

  const std::string late = narrated(library_scenario("29-late-duplicate-after-rejection.json"));
  CHECK(contains(late, "2500 of it is stuck in flight"));

  const std::string happy = narrated(library_scenario("01-happy-path.json"));
  CHECK(contains(happy, "Money: right at the end"));
  CHECK_FALSE(contains(happy, "meant to show it"));
}

TEST_CASE("the narration defines every invariant and the words it uses", "[course]") {
  // Scenario 66 runs the notifications consumer with its email, so every invariant applies.
  const std::string text = narrated(library_scenario("66-email-outside-the-transaction.json"));
  for (const LegendTerm& term : legend_terms()) {
    INFO(term.term);
    CHECK(contains(text, std::string(term.term) + " "));
    CHECK(contains(text, std::string(term.meaning)));
  }
  for (const std::string term : {"single_effect", "saga_ledger", "legal_transitions",
                                 "termination", "notified", "in flight", "quiescent"}) {
    INFO(term);
    bool found = false;
    for (const LegendTerm& entry : legend_terms()) found |= entry.term == term;
    CHECK(found);
  }
  CHECK(contains(legend_html(), "<dt>in flight</dt>"));
  // A run without notifications neither lists nor defines notified.
  CHECK_FALSE(contains(narrated(library_scenario("01-happy-path.json")), "notified"));
}

TEST_CASE("the deciding lines are on screen", "[course]") {
  const std::string ten = narrated(library_scenario("10-crash-between-inbox-steps.json"));
  CHECK(contains(ten, "inbox: row (m-1, account-consumer) found, consumed null: the consumer "
                      "never ran, so this delivery runs it"));
  CHECK(contains(ten, "REDELIVERED (x-delivery-count 1)"));
  CHECK_FALSE(contains(ten, "delivery #1"));

  const std::string twenty_one = narrated(library_scenario("21-dedupe-key-per-consumer.json"));
  CHECK(contains(twenty_one, "duplicate key (m-4, notifications)"));
  CHECK(contains(twenty_one, "duplicate key (m-4, saga)"));

  const std::string seventeen = narrated(library_scenario("17-unstable-message-id.json"));
  CHECK(contains(seventeen, "the relay minted a new id, m-5, for the outbox row it first "
                            "published as m-2"));

  // No "in one transaction with the saga update and its outbox row" right before a refusal.
  const std::string refused = narrated(library_scenario("24-defence-no-processed-messages.json"));
  CHECK_FALSE(contains(refused, "saga update and its outbox row\n"));
  const std::string sixty = narrated(library_scenario("44-late-debited-after-completed.json"));
  CHECK(contains(sixty, "in one transaction with the saga update (this edge sends no command)"));
}

TEST_CASE("every scenario of the library has a place in the guide's lesson order", "[course]") {
  std::set<std::string> numbers;
  for (const LessonBlock& block : lesson_blocks()) {
    for (const Lesson& lesson : block.lessons) {
      INFO(lesson.number);
      CHECK(numbers.insert(std::string(lesson.number)).second);  // named once
      CHECK(lesson.minutes > 0);  // every scenario has its minutes in class
    }
  }
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kLibrary)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    const std::string stem = entry.path().stem().string();
    INFO(stem);
    CHECK(numbers.count(stem.substr(0, stem.find('-'))) == 1);
  }
  CHECK(numbers.size() == files);
}

TEST_CASE("demo runs the scenarios named in the teacher's order, a legend first, a break per block",
          "[course]") {
  DemoOptions options;
  options.scenario_dir = kLibrary;
  options.only = {"04", "08", "01"};
  options.out_dir = (std::filesystem::temp_directory_path() / "inboxsim-course-demo").string();
  std::ostringstream out;
  std::ostringstream err;
  REQUIRE(run_demo(options, out, err) == 0);
  const std::string text = out.str();
  const size_t legend = text.find("The words the narration uses:");
  const size_t second_block = text.find("Lesson block 2 of");
  const size_t identical = text.find("== 04-two-identical-deliveries");
  const size_t lost_ack = text.find("== 08-lost-ack");
  const size_t first_block = text.find("Lesson block 1 of");
  const size_t happy = text.find("== 01-happy-path");
  REQUIRE(legend != std::string::npos);
  REQUIRE(happy != std::string::npos);
  // 04 and 08 are both in the second block: one break before them; 01 opens the first.
  CHECK(legend < second_block);
  CHECK(second_block < identical);
  CHECK(identical < lost_ack);
  CHECK(text.find("Lesson block", identical) == first_block);
  CHECK(lost_ack < first_block);
  CHECK(first_block < happy);
  // The legend is said once, not after every scenario.
  CHECK(text.find("The words the narration uses:", legend + 1) == std::string::npos);
  CHECK(text.find("\nLegend\n") == std::string::npos);
  std::filesystem::remove_all(options.out_dir);
}

TEST_CASE("the 50-minute plan fits 50 minutes and shows the explorer live", "[course][plan]") {
  const DemoPlan* plan = find_plan("50min");
  REQUIRE(plan != nullptr);
  CHECK(plan_minutes(*plan) <= 50);
  CHECK(plan_minutes(*plan) >= 40);  // a plan for a class, not a taste of one
  std::vector<std::string_view> numbers;
  for (const PlanBlock& block : plan->blocks) {
    for (const std::string_view number : block.numbers) {
      INFO(number);
      REQUIRE(find_lesson(number) != nullptr);
      numbers.push_back(number);
    }
  }
  // Lessons 50 and 52 are in it, with their explore runs: 50 as written (proven) and without
  // the ledger key (broken), 52 with two duplicates (proven).
  CHECK(std::find(numbers.begin(), numbers.end(), "50") != numbers.end());
  CHECK(std::find(numbers.begin(), numbers.end(), "52") != numbers.end());
  const Lesson& fifty = *find_lesson("50");
  REQUIRE(fifty.explores.size() == 2);
  CHECK(explore_flags_text(fifty.explores[0]) == "--faults 0");
  CHECK_FALSE(fifty.explores[0].broken);
  CHECK(explore_flags_text(fifty.explores[1]) ==
        "--faults 0 --set account.ledger_unique=false");
  CHECK(fifty.explores[1].broken);
  const Lesson& fifty_two = *find_lesson("52");
  REQUIRE(fifty_two.explores.size() == 2);
  CHECK(explore_flags_text(fifty_two.explores[0]) == "--faults 2 --fault-kinds duplicate");
  CHECK_FALSE(fifty_two.explores[0].broken);
  CHECK(explore_flags_text(fifty_two.explores[1]) ==
        "--faults 2 --fault-kinds duplicate --set account.ledger_unique=false");
  CHECK(fifty_two.explores[1].broken);
  // Every plan's scenarios are lessons, and the full plan is the whole guide.
  for (const DemoPlan& each : demo_plans()) CHECK(plan_minutes(each) > 0);
  int64_t guide = 0;
  for (const LessonBlock& block : lesson_blocks()) guide += block_minutes(block);
  CHECK(plan_minutes(*find_plan("full")) == guide);
  const std::string list = plan_list_text();
  CHECK(contains(list, "50min  " + std::to_string(plan_minutes(*plan)) + " min  "));
  CHECK(contains(list, "50 (6 min, with explore)"));
}

TEST_CASE("docs/scenarios.md states the plans' and the blocks' minutes as the course has them",
          "[course][plan]") {
  std::ifstream file(INBOXSIM_SOURCE_DIR "/docs/scenarios.md");
  const std::string guide((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  for (const DemoPlan& plan : demo_plans()) {
    INFO(plan.name);
    CHECK(contains(guide, "`" + std::string(plan.name) + "` (" +
                              std::to_string(plan_minutes(plan)) + " min)"));
  }
  const auto& blocks = lesson_blocks();
  for (size_t b = 0; b < blocks.size(); ++b) {
    INFO(blocks[b].title);
    CHECK(contains(guide, "\n" + std::to_string(b + 1) + ". (" +
                              std::to_string(block_minutes(blocks[b])) + " min) "));
  }
}

TEST_CASE("the 50-minute plan runs its scenarios in order with the explore runs live",
          "[.course_plan]") {
  DemoOptions options;
  options.scenario_dir = kLibrary;
  options.plan = "50min";
  options.run.narrator.color = false;
  options.out_dir = (std::filesystem::temp_directory_path() / "inboxsim-course-plan").string();
  std::ostringstream out;
  std::ostringstream err;
  REQUIRE(run_demo(options, out, err) == 0);
  const std::string text = out.str();
  size_t at = 0;
  for (const PlanBlock& block : find_plan("50min")->blocks) {
    for (const std::string_view number : block.numbers) {
      INFO(number);
      const size_t next = text.find("\n== " + std::string(number) + "-", at);
      REQUIRE(next != std::string::npos);
      at = next;
    }
  }
  CHECK(contains(text, "$ inboxsim explore " + kLibrary + "50-explorer-proves-the-key.json --faults 0\n"));
  CHECK(contains(text, "BROKEN single_effect"));
  CHECK(contains(text, "4 of 4 explore runs gave the verdict their lesson expects"));
  CHECK(contains(text, "In class: about " + std::to_string(plan_minutes(*find_plan("50min"))) +
                           " min."));
  CHECK(std::filesystem::exists(std::filesystem::path(options.out_dir) / "index.html"));
  CHECK(!std::filesystem::is_empty(std::filesystem::path(options.out_dir) / "counterexamples"));
  std::filesystem::remove_all(options.out_dir);
}

TEST_CASE("the glossary explains the narration's words, and the legend takes its words from it",
          "[course][glossary]") {
  for (const std::string term :
       {"tag", "m-N", "pass", "crash point", "prefetch", "quorum queue", "classic queue",
        "_error queue", ".dlq", "relay", "inbox", "outbox", "redelivered", "x-delivery-count"}) {
    INFO(term);
    const GlossaryEntry* entry = find_glossary_entry(term);
    REQUIRE(entry != nullptr);
    CHECK(entry->term == term);
    CHECK(entry->meaning.size() > 60);
  }
  CHECK(find_glossary_entry("Delivery Tag")->term == "tag");
  CHECK(find_glossary_entry("account-service_error")->term == "_error queue");
  CHECK(find_glossary_entry("single-effect")->term == "single_effect");
  CHECK(find_glossary_entry("no such word") == nullptr);
  CHECK(contains(find_glossary_entry("tag")->meaning, "each delivery on one channel"));
  // Every crash point is explained, by its name.
  const std::string crash = find_glossary_entry("crash point")->meaning;
  for (const std::string point : {"before_tx", "after_precheck", "after_dedupe", "after_effect",
                                  "after_commit", "after_outbox_send", "after_publish",
                                  "after_mark"}) {
    CHECK(contains(crash, point + ": "));
  }
  // Each name finds its own entry, and the anchors are distinct.
  std::set<std::string> anchors;
  for (const GlossaryEntry& entry : glossary()) {
    INFO(entry.term);
    CHECK(find_glossary_entry(entry.term) == &entry);
    for (const std::string& alias : entry.aliases) CHECK(find_glossary_entry(alias) == &entry);
    CHECK(anchors.insert(glossary_anchor(entry)).second);
    CHECK(contains(glossary_html(), "<dt id=\"" + glossary_anchor(entry) + "\">"));
  }
  // The legend's words are the glossary's, word for word, and it points to the rest.
  for (const LegendTerm& term : legend_terms()) {
    const GlossaryEntry* entry = find_glossary_entry(term.term);
    REQUIRE(entry != nullptr);
    if (entry->term == term.term && !contains(entry->meaning, "an invariant: ")) {
      CHECK(entry->meaning == term.meaning);
    }
  }
  CHECK(contains(legend_text(""), "inboxsim glossary"));
}

TEST_CASE("41 shows a classic queue's endless loop in a few dozen lines, and the loop halts",
          "[course][classic]") {
  RunResult result;
  const std::string text = narrated(library_scenario("41-poison-classic-queue.json"), &result);
  CHECK(result.passed);
  // A thousand deliveries: the focus narration shows the first and counts the rest.
  CHECK(std::count(text.begin(), text.end(), '\n') < 250);
  CHECK(contains(text, "more identical redeliveries of m-2"));
  CHECK(contains(text, "REDELIVERED"));  // a classic queue sends no x-delivery-count
  CHECK_FALSE(contains(text, "REDELIVERED (x-delivery-count"));
  // The run's bound ends the loop, and the termination violation names why nothing else did.
  REQUIRE(result.violations.size() == 1);
  CHECK(result.violations[0].invariant == Invariant::termination);
  CHECK(contains(result.violations[0].detail, "classic queue, which has no delivery limit"));
}
