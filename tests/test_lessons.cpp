// Lessons shown by their own run (issue 27, items 1 and 7): each lesson the library teaches is
// checked against the line of its narration that shows it, so a change that breaks the lesson
// (or the line a student reads it from) fails here. The lines are matched by their words, not
// their times or layout, which the narration is free to change.
#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "app/demo.h"
#include "scenario/parse.h"
#include "scenario/runner.h"
#include "scenario/write.h"
#include "support.h"

using namespace inboxsim;
using inboxsim::testing::library_files;
using inboxsim::testing::library_scenario;
using inboxsim::testing::parse_ok;

namespace {

// Runs a scenario narrated, as `inboxsim run` does, and returns what it printed.
std::string narrated(const Scenario& scenario, RunResult* result = nullptr) {
  std::ostringstream out;
  RunResult run = narrated_run(scenario, NarratedRunOptions{}, out);
  if (result != nullptr) *result = std::move(run);
  return out.str();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

size_t count_of(const std::string& text, const std::string& part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
    ++count;
  }
  return count;
}

// The narration's lines that contain `part`, joined (for INFO).
std::string lines_with(const std::string& text, const std::string& part) {
  std::istringstream in(text);
  std::string line;
  std::string out;
  while (std::getline(in, line)) {
    if (contains(line, part)) out += line + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("50: the copy the story says the broker made is narrated as the broker's", "[lessons]") {
  const Scenario scenario = library_scenario("50-explorer-proves-the-key.json");
  REQUIRE(contains(scenario.description, "the broker duplicates it"));
  const std::string text = narrated(scenario);
  INFO(lines_with(text, "publish Transfer.Requested"));
  CHECK(contains(text, "broker → broker  publish Transfer.Requested t1 (m-1)"));
  CHECK(contains(text, "a second copy made by the broker, same message id"));
  CHECK_FALSE(contains(text, "a copy by hand"));
}

TEST_CASE("a duplicate's `by` names who made the copy, and changes nothing else", "[lessons]") {
  const std::string base = R"({"accounts": {"alice": 10000, "bob": 0}, "steps": [
      {"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}},
      {"fault": {"kind": "duplicate", "match": {"type": "Transfer.Requested", "transfer": "t1"})";
  const Scenario by_operator = parse_ok(base + "}}]}");
  const Scenario by_network = parse_ok(base + R"(, "by": "network"}}]})");
  const Scenario by_broker = parse_ok(base + R"(, "by": "broker"}}]})");
  CHECK(by_operator.steps[1].fault.copied_by == CopySource::operator_);
  CHECK(by_network.steps[1].fault.copied_by == CopySource::network);

  RunResult operator_run;
  RunResult network_run;
  RunResult broker_run;
  CHECK(contains(narrated(by_operator, &operator_run), "(a copy by hand, same message id)"));
  const std::string network_text = narrated(by_network, &network_run);
  CHECK(contains(network_text, "network → broker  publish Transfer.Requested t1 (m-1)"));
  CHECK(contains(network_text, "a second copy from the network, same message id"));
  CHECK(contains(narrated(by_broker, &broker_run), "a second copy made by the broker"));
  // Who made the copy is a name in the story, not a different run: the same deliveries, dedupe
  // hits and money, and a different trace only because the publisher's name is in it.
  for (const RunResult* run : {&network_run, &broker_run}) {
    CHECK(run->balances == operator_run.balances);
    CHECK(run->stats.deliveries == operator_run.stats.deliveries);
    CHECK(run->stats.dedupe_hits == operator_run.stats.dedupe_hits);
    CHECK(run->sends == operator_run.sends);
    CHECK(run->trace_hash != operator_run.trace_hash);
  }

  // Saying the default changes nothing: the trace of an older file stays byte for byte.
  const Scenario said_operator = parse_ok(base + R"(, "by": "operator"}}]})");
  CHECK(run_scenario(said_operator, RunOptions{}).trace_hash == operator_run.trace_hash);

  // Written back only when it is not the default, so older files round-trip unchanged.
  CHECK(scenario_to_json(by_broker).dump().find(R"("by":"broker")") != std::string::npos);
  CHECK(scenario_to_json(by_operator).dump().find(R"("by")") == std::string::npos);
}

TEST_CASE("a duplicate's `by` and a nack's `cause` refuse other values, naming the pointer",
          "[lessons]") {
  const std::string base = R"({"accounts": {"alice": 10000, "bob": 0}, "steps": [
      {"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}},
      {"fault": {"kind": )";
  const ParseResult by = parse_scenario_text(
      base + R"("duplicate", "match": {"type": "Transfer.Requested"}, "by": "robot"}}]})",
      "x.json");
  REQUIRE(by.error);
  CHECK(by.error->pointer == "/steps/1/fault/by");
  CHECK_THAT(by.error->expected, Catch::Contains("one of operator, broker, network"));
  const ParseResult cause = parse_scenario_text(
      base + R"("nack", "match": {"type": "Account.Debited"}, "cause": "cosmic"}}]})", "x.json");
  REQUIRE(cause.error);
  CHECK(cause.error->pointer == "/steps/1/fault/cause");
  CHECK_THAT(cause.error->expected, Catch::Contains("one of transient, poison"));
  const ParseResult crash_by = parse_scenario_text(
      base + R"("crash", "service": "account-service", "at": "after_commit", "by": "broker"}}]})",
      "x.json");
  REQUIRE(crash_by.error);
  CHECK(crash_by.error->pointer == "/steps/1/fault/by");
}

TEST_CASE("40: a poison message is narrated as one, never as a busy database", "[lessons]") {
  // Every line (--verbose): the focus narration counts the repeats instead of printing them.
  NarratedRunOptions options;
  options.narrator.verbose = true;
  std::ostringstream out;
  narrated_run(library_scenario("40-poison-quorum-queue.json"), options, out);
  const std::string text = out.str();
  INFO(lines_with(text, "FAULT").substr(0, 600));
  CHECK_FALSE(contains(text, "database busy"));
  // One failure per delivery: the limit of 20 returns, plus the delivery that is dead-lettered.
  CHECK(count_of(text, "the handler throws on this message (poison); rolled back, will nack") ==
        21);
  CHECK(contains(text, "DEAD-LETTERED  Account.Debited t1"));
  // The focus narration shows the first failures and counts the rest as the same.
  const std::string focus = narrated(library_scenario("40-poison-quorum-queue.json"));
  CHECK_FALSE(contains(focus, "database busy"));
  CHECK(contains(focus, "the handler throws on this message (poison)"));
  CHECK(contains(focus, "more identical redeliveries of m-2"));
}

TEST_CASE("47: the replay is decided by the parked copy's row, which no cleanup removes",
          "[lessons]") {
  RunResult result;
  const std::string text = narrated(library_scenario("47-late-error-queue-replay.json"), &result);
  const std::string deciding =
      "consumed null: its consumer faulted and rolled back, and the cleanup deletes only "
      "delivered rows";
  INFO(lines_with(text, "↳"));
  REQUIRE(count_of(text, deciding) == 1);
  // The line comes at the replay, after the three days and the redrive.
  CHECK(text.find(deciding) > text.find("REDRIVE"));
  CHECK(result.stats.error_queued == 2);
  CHECK(result.violations.empty());
}

TEST_CASE(
    "48: the redelivery finds the row consumed, not delivered, and re-sends the stored "
    "message",
    "[lessons]") {
  const Scenario scenario = library_scenario("48-kafka-offset-commit-window.json");
  const std::string text = narrated(scenario);
  INFO(lines_with(text, "inbox:"));
  const std::string resend =
      "already consumed but its outbox not delivered: re-sending the stored messages";
  CHECK(contains(text, resend));
  CHECK(contains(scenario.description, "consumed but its outbox not delivered"));
  CHECK_FALSE(contains(scenario.description, "consumed and delivered"));
}

TEST_CASE("05: the seed's exercise 2 is a publish by hand, and the inbox catches the same id",
          "[lessons]") {
  RunResult result;
  const std::string text = narrated(library_scenario("05-duplicate-by-hand.json"), &result);
  INFO(lines_with(text, "operator"));
  CHECK(contains(text,
                 "operator → broker  publish Transfer.Requested t1 (m-1)  → by hand to "
                 "banking.events, routing key transfers.transfer.requested"));
  CHECK(contains(text, "inbox: message m-1 already consumed, acked without effect"));
  CHECK(result.balances.at("alice") == 7500);
  CHECK(result.passed);
}

TEST_CASE("68: the same envelope under a new id passes the inbox and stops at the ledger key",
          "[lessons]") {
  Scenario scenario = library_scenario("68-duplicate-by-hand-new-id.json");
  RunResult result;
  const std::string text = narrated(scenario, &result);
  INFO(lines_with(text, "manual-1"));
  CHECK(contains(text, "operator → broker  publish Transfer.Requested t1 (manual-1)"));
  CHECK_FALSE(contains(text, "inbox: message manual-1"));  // no dedupe hit: a new message
  CHECK(contains(lines_with(text, "manual-1"), "ERROR QUEUE"));
  CHECK(result.passed);
  CHECK(result.balances.at("alice") == 7500);

  // Without the key the same publish debits Alice twice.
  scenario.config.account_ledger_unique = false;
  const RunResult unkeyed = run_scenario(scenario, RunOptions{});
  CHECK(unkeyed.balances.at("alice") == 5000);
  CHECK_FALSE(unkeyed.violations.empty());
}

TEST_CASE("42: the nacked publish reached no queue, so account-service sees it once", "[lessons]") {
  RunResult result;
  const Scenario scenario = library_scenario("42-publish-nacked.json");
  const std::string text = narrated(scenario, &result);
  CHECK(count_of(text, "deliver Transfer.Requested t1") == 1);
  CHECK(result.sends.at(MessageType::transfer_requested) == 2);
  // The claim holds for a message bound to one queue; the description says what a fan-out does.
  CHECK(contains(scenario.description, "x-overflow: reject-publish"));
}

TEST_CASE("31: a Marten story names the Marten inbox's key, never MassTransit's inbox_state",
          "[lessons]") {
  const Scenario scenario = library_scenario("31-marten-without-backstop.json");
  const std::string text = narrated(scenario);
  CHECK_FALSE(contains(text, "inbox_state"));
  CHECK(contains(text, "INDEX DROPPED  inbox_documents' primary key (message_id)"));
  // The stream key refuses only an append that states the version it expects.
  CHECK(contains(scenario.description, "carries no expected version"));
}

TEST_CASE("36: both instances' checks print 'not marked' before either marks (check-then-add)",
          "[lessons]") {
  const Scenario scenario = library_scenario("36-redis-set-two-instances.json");
  const std::string text = narrated(scenario);
  const std::string check =
      "external seen-set: checked m-1, not marked (check-then-add: the mark is a separate call)";
  INFO(lines_with(text, "seen-set"));
  REQUIRE(count_of(text, check) == 2);
  const size_t second_check = text.find(check, text.find(check) + 1);
  CHECK(second_check < text.find("external seen-set: m-1 marked before the business commit"));
  CHECK(contains(scenario.description, "check-then-add"));
}

TEST_CASE("lessons say what is true now, never the project's history", "[lessons]") {
  for (const std::string& file : library_files()) {
    INFO(file);
    const Scenario scenario = library_scenario(file);
    for (const std::string& text : {scenario.description, scenario.lesson, scenario.title}) {
      for (const char* history : {"used to", "until this was fixed", "Changed in", "changed how"}) {
        CHECK_FALSE(contains(text, history));
      }
    }
  }
}

TEST_CASE("a checkpoint asks its question right after its event, before the answer", "[lessons]") {
  const Scenario scenario = library_scenario("09-crash-after-commit.json");
  REQUIRE(scenario.checkpoints.size() == 1);
  const std::string text = narrated(scenario);
  const size_t question = text.find("❓ transfer-service committed its handling");
  REQUIRE(question != std::string::npos);
  // After the redelivery of Account.Debited, before processed_messages refuses it.
  const size_t redelivery = text.rfind("deliver Account.Debited t1", question);
  REQUIRE(redelivery != std::string::npos);
  CHECK(contains(text.substr(redelivery, question - redelivery), "REDELIVERED"));
  const size_t answer = text.find("processed_messages", question);
  CHECK(answer != std::string::npos);
  CHECK(count_of(text, "❓") == 1);
  // Quiet: no question.
  NarratedRunOptions quiet;
  quiet.narrator.quiet = true;
  std::ostringstream out;
  narrated_run(scenario, quiet, out);
  CHECK_FALSE(contains(out.str(), "❓"));
}

TEST_CASE("checkpoints are written back as read, and a bad one says where", "[lessons]") {
  const std::string story = R"({"accounts": {"alice": 100, "bob": 0},
    "steps": [{"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 10}}],
    "checkpoints": [)";
  const Scenario parsed = parse_ok(
      story + R"({"after": {"kind": "dedupe_hit", "transfer": "t1", "occurrence": 2},
                  "question": "Which defence caught it?"}]})");
  REQUIRE(parsed.checkpoints.size() == 1);
  CHECK(parsed.checkpoints[0].kind == EventKind::dedupe_hit);
  CHECK(parsed.checkpoints[0].match.occurrence == 2);
  CHECK(scenario_to_json(parsed)["checkpoints"].dump() ==
        R"([{"after":{"kind":"dedupe_hit","transfer":"t1","occurrence":2},"question":"Which defence caught it?"}])");
  const auto error_of = [&](const std::string& checkpoint) {
    const ParseResult result = parse_scenario_text(story + checkpoint + "]}", "x.json");
    REQUIRE(result.error);
    return result.error->message();
  };
  CHECK_THAT(error_of(R"({"after": {"kind": "arrive"}, "question": "?"})"),
             Catch::Contains("/checkpoints/0/after/kind") && Catch::Contains("deliver"));
  CHECK_THAT(error_of(R"({"after": {"kind": "deliver", "transfer": "t9"}, "question": "?"})"),
             Catch::Contains("/checkpoints/0/after/transfer"));
  CHECK_THAT(error_of(R"({"after": {"kind": "deliver"}, "question": ""})"),
             Catch::Contains("/checkpoints/0/question"));
  CHECK_THAT(error_of(R"({"after": {"kind": "deliver"}, "ask": "?"})"),
             Catch::Contains("/checkpoints/0/ask"));
  CHECK_THAT(error_of(R"({"question": "?"})"), Catch::Contains("/checkpoints/0/after"));
}
