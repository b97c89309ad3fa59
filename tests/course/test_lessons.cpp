// Lessons shown by their own run: each lesson the library teaches is
// checked against the line of its narration that shows it, so a change that breaks the lesson
// (or the line a student reads it from) fails here. The lines are matched by their words, not
// their times or layout, which the narration is free to change.
#include <catch2/catch.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "app/demo.h"
#include "fuzz/explore.h"
#include "report/description.h"
#include "report/html.h"
#include "report/mermaid.h"
#include "scenario/parse.h"
#include "scenario/runner.h"
#include "scenario/write.h"
#include "support/scenarios.h"
#include "support/text.h"

using namespace inboxsim;
using inboxsim::testing::contains;
using inboxsim::testing::library_files;
using inboxsim::testing::library_scenario;
using inboxsim::testing::narrated;
using inboxsim::testing::parse_ok;

namespace {

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

// The description as a student reads it, whichever form it has.
std::string described(const Scenario& scenario) {
  return description_paragraph(scenario.description, shown_parts(scenario));
}

// The narration's line of event `number` ("#12 "), or empty.
std::string line_of_event(const std::string& text, int64_t number) {
  const std::string mark = "#" + std::to_string(number) + " ";
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (contains(line, mark) && !contains(line, "👁")) return line;
  }
  return {};
}

size_t words_in(const std::string& text) {
  std::istringstream in(text);
  size_t count = 0;
  for (std::string word; in >> word;) ++count;
  return count;
}

}  // namespace

TEST_CASE("50: the copy the story says the broker made is narrated as the broker's", "[lessons]") {
  const Scenario scenario = library_scenario("50-explorer-proves-the-key.json");
  REQUIRE(contains(described(scenario), "the broker duplicates it"));
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
  CHECK(contains(described(scenario), "consumed but its outbox not delivered"));
  CHECK_FALSE(contains(described(scenario), "consumed and delivered"));
}

TEST_CASE("05: exercise 2 is a publish by hand, and the inbox catches the same id", "[lessons]") {
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
  CHECK(contains(described(scenario), "x-overflow: reject-publish"));
}

TEST_CASE("31: a Marten story names the Marten inbox's key, never MassTransit's inbox_state",
          "[lessons]") {
  const Scenario scenario = library_scenario("31-marten-without-backstop.json");
  const std::string text = narrated(scenario);
  CHECK_FALSE(contains(text, "inbox_state"));
  CHECK(contains(text, "INDEX DROPPED  inbox_documents' primary key (message_id)"));
  // The stream key refuses only an append that states the version it expects.
  CHECK(contains(described(scenario), "carries no expected version"));
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
  CHECK(contains(described(scenario), "check-then-add"));
}

TEST_CASE("lessons say what is true now, never the project's history", "[lessons]") {
  for (const std::string& file : library_files()) {
    INFO(file);
    const Scenario scenario = library_scenario(file);
    for (const std::string& text : {described(scenario), scenario.lesson, scenario.title}) {
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

// ---- Descriptions in three parts ----------------------------------------------

TEST_CASE("every library scenario has a setup, a watch for and a why, short enough to read out",
          "[lessons]") {
  constexpr size_t kPartWordsMax = 100;
  size_t split = 0;
  for (const std::string& file : library_files()) {
    INFO(file);
    const Scenario scenario = library_scenario(file);
    CHECK(scenario.description.empty());
    const DescriptionParts parts = shown_parts(scenario);
    CHECK_FALSE(parts.setup.empty());
    CHECK_FALSE(parts.watch_for.empty());
    CHECK_FALSE(parts.why.empty());
    CHECK(words_in(parts.setup) <= kPartWordsMax);
    CHECK(words_in(parts.watch_for) <= kPartWordsMax / 3);
    CHECK(words_in(parts.why) <= kPartWordsMax);
    ++split;
  }
  CHECK(split == library_files().size());
}

TEST_CASE("every library scenario's watch for names an event of its own run", "[lessons]") {
  for (const std::string& file : library_files()) {
    INFO(file);
    const Scenario scenario = library_scenario(file);
    RunOptions options;
    options.keep_trace = true;
    const RunResult result = run_scenario(scenario, options);
    const std::optional<size_t> index =
        selected_event(shown_parts(scenario).watch_for_event, result.events);
    CHECK(index.has_value());
  }
}

TEST_CASE("the narration marks the watch for at its event, with the number the report links to",
          "[lessons]") {
  const Scenario scenario = library_scenario("04-two-identical-deliveries.json");
  RunResult result;
  const std::string text = narrated(scenario, &result);
  // The header reads the three parts out.
  CHECK(contains(text, "Setup: " + scenario.description_parts.setup));
  CHECK(contains(text, "Watch for: " + scenario.description_parts.watch_for));
  CHECK(contains(text, "Why: " + scenario.description_parts.why));
  // The dedupe hit of the second Account.Debited is the event, and its line is the one above.
  RunOptions options;
  options.keep_trace = true;
  const RunResult traced = run_scenario(scenario, options);
  const std::optional<size_t> index =
      selected_event(scenario.description_parts.watch_for_event, traced.events);
  REQUIRE(index.has_value());
  CHECK(traced.events[*index].kind == EventKind::dedupe_hit);
  const int64_t number = static_cast<int64_t>(*index) + 1;
  const std::string mark = "👁 #" + std::to_string(number) + " watch for: ";
  const size_t at = text.find(mark);
  REQUIRE(at != std::string::npos);
  CHECK(count_of(text, "👁 #") == 1);
  const std::string event_line = line_of_event(text, number);
  CHECK(contains(event_line, "duplicate key m-2"));
  CHECK(text.find(event_line) < at);
  // The HTML report links the same text to the same event.
  const std::string html = render_html(traced);
  CHECK(contains(html, "href=\"#event-" + std::to_string(number) + "\""));
  CHECK(contains(html, escape_html(scenario.description_parts.watch_for)));
  // Quiet: no mark.
  NarratedRunOptions quiet;
  quiet.narrator.quiet = true;
  std::ostringstream out;
  narrated_run(scenario, quiet, out);
  CHECK_FALSE(contains(out.str(), "👁"));
}

TEST_CASE("a description in three parts is written back as read, and a bad one says where",
          "[lessons]") {
  const std::string story = R"({"accounts": {"alice": 100, "bob": 0},
    "steps": [{"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 10}}])";
  const std::string parts =
      R"(, "setup": "Alice pays.", "watch_for": {"event": {"kind": "saga", "transfer": "t1",
      "occurrence": 2}, "text": "the saga moving on"}, "why": "Nothing goes wrong.")";
  const Scenario parsed = parse_ok(story + parts + "}");
  CHECK(parsed.description.empty());
  CHECK(parsed.description_parts.setup == "Alice pays.");
  CHECK(parsed.description_parts.watch_for == "the saga moving on");
  CHECK(parsed.description_parts.watch_for_event.kind == EventKind::saga);
  CHECK(parsed.description_parts.watch_for_event.match.transfer == "t1");
  CHECK(parsed.description_parts.watch_for_event.match.occurrence == 2);
  CHECK(parsed.description_parts.why == "Nothing goes wrong.");
  const auto written = scenario_to_json(parsed);
  CHECK(written["setup"] == "Alice pays.");
  CHECK(written["watch_for"].dump() ==
        R"({"event":{"kind":"saga","transfer":"t1","occurrence":2},"text":"the saga moving on"})");
  CHECK(written["why"] == "Nothing goes wrong.");
  CHECK_FALSE(written.contains("description"));
  const Scenario again = parse_ok(written.dump());
  CHECK(again.description_parts.watch_for_event == parsed.description_parts.watch_for_event);
  // A program that sets the paragraph (explore's counterexamples) replaces the whole description.
  Scenario rewritten = parsed;
  rewritten.description = "Found by explore.";
  const auto counterexample = scenario_to_json(rewritten);
  CHECK(counterexample["description"] == "Found by explore.");
  CHECK_FALSE(counterexample.contains("setup"));
  CHECK_FALSE(counterexample.contains("watch_for"));
  CHECK(parse_ok(counterexample.dump()).description_parts.empty());
  // The paragraph still reads as before.
  CHECK(parse_ok(story + R"(, "description": "One paragraph."})").description == "One paragraph.");
  const auto error_of = [&](const std::string& text) {
    const ParseResult result = parse_scenario_text(story + text + "}", "x.json");
    REQUIRE(result.error);
    return result.error->message();
  };
  CHECK_THAT(error_of(parts + R"(, "description": "And a paragraph.")"),
             Catch::Contains("/description") && Catch::Contains("not both"));
  CHECK_THAT(error_of(R"(, "setup": "Alice pays.", "watch_for": {"event": {"kind": "saga"},
                        "text": "x"})"),
             Catch::Contains("/why") && Catch::Contains("together"));
  CHECK_THAT(error_of(R"(, "setup": "a", "why": "b", "watch_for": {"event": {"kind": "arrive"},
                        "text": "x"})"),
             Catch::Contains("/watch_for/event/kind") && Catch::Contains("dedupe_hit"));
  CHECK_THAT(error_of(R"(, "setup": "a", "why": "b", "watch_for": {"event": {"kind": "saga",
                        "transfer": "t9"}, "text": "x"})"),
             Catch::Contains("/watch_for/event/transfer"));
  CHECK_THAT(error_of(R"(, "setup": "a", "why": "b", "watch_for": {"event": {"kind": "saga"},
                        "txt": "x"})"),
             Catch::Contains("/watch_for/txt"));
  CHECK_THAT(error_of(R"(, "setup": "", "why": "b", "watch_for": {"event": {"kind": "saga"},
                        "text": "x"})"),
             Catch::Contains("/setup"));
  CHECK_THAT(error_of(R"(, "setup": "a", "why": "b", "watch_for": "the saga")"),
             Catch::Contains("/watch_for"));
}

// ---- Why-lines: every dedupe, skip or lock decision says why --------------------

TEST_CASE("30: the credit that waited behind #1's pause says it sat in #1's prefetch", "[lessons]") {
  const std::string text = narrated(library_scenario("30-marten-backstop.json"));
  INFO(lines_with(text, "m-3"));
  CHECK(contains(text, "↳ m-3 was published at 0.038 s, while account-service#1 was paused, and "
                       "the broker gave it to that instance"));
  // The backstop's own decision names its key on its line.
  CHECK(contains(text, "the document's primary key rejected it (the backstop)"));
}

TEST_CASE("32: each lock wait says why, the second one as a later pass of the same delivery",
          "[lessons]") {
  const std::string text = narrated(library_scenario("32-masstransit-row-lock.json"));
  INFO(lines_with(text, "lock"));
  CHECK(count_of(text, "↳ the row stays locked until the holder's transaction ends: before that "
                       "account-service#2 cannot read whether m-1 was consumed") == 1);
  CHECK(contains(text, "↳ account-service#1 is not done with m-1: MassTransit's inbox works in "
                       "passes, each a transaction of its own that first locks the inbox row "
                       "again"));
  CHECK(contains(text, "↳ account-service#2 is not done with m-1"));
  // One why-line per wait.
  CHECK(count_of(text, "waits for the row lock") ==
        count_of(text, "↳ the row stays locked") + count_of(text, "is not done with m-1"));
}

TEST_CASE("51: the late copy of a debited transfer says why it is not judged against the balance",
          "[lessons]") {
  const Scenario scenario = library_scenario("51-late-duplicate-after-debit.json");
  const std::string text = narrated(scenario);
  INFO(lines_with(text, "↳"));
  CHECK(contains(text, "↳ t1 already has a DEBIT (#10): a decided transfer is not judged again "
                       "against bob's balance now (3157, short of 4743); with "
                       "account.remember_rejections the copy is a second debit, which the ledger "
                       "key (transfer_id, DEBIT) refuses"));
  // Without the record of the decision, the copy is judged against today's balance, and says so.
  Scenario what_if = scenario;
  what_if.config.account_remember_rejections = false;
  const std::string broken = narrated(what_if);
  INFO(lines_with(broken, "↳"));
  CHECK(contains(broken, "↳ t1 already has a DEBIT (#10), but nothing tells this handler so: "
                         "judged against bob's balance as it is now, the copy is refused"));
}

// ---- The HTML report draws each source of a copy ------------------------------

TEST_CASE("the HTML report draws a broker's or the network's copy as its own labelled arrow",
          "[lessons][html]") {
  const std::string base = R"({"accounts": {"alice": 10000, "bob": 0}, "steps": [
      {"transfer": {"id": "t1", "from": "alice", "to": "bob", "amount": 2500}},
      {"fault": {"kind": "duplicate", "match": {"type": "Transfer.Requested", "transfer": "t1"})";
  RunOptions options;
  options.keep_trace = true;
  const auto html_of = [&](const std::string& by) {
    return render_html(run_scenario(parse_ok(base + by + "}}]}"), options));
  };
  // The broker copies a message it holds: a loop on its own lane, not an arrow of no length.
  const std::string broker = html_of(R"(, "by": "broker")");
  CHECK(contains(broker, "broker COPY Transfer.Requested t1 (m-1, same id)"));
  CHECK(contains(broker, "<path class=\"arrow a-copy"));
  const std::regex zero_length(R"re(<line class="arrow[^"]*" x1="(\d+)" y1="\d+" x2="\1")re");
  CHECK_FALSE(std::regex_search(broker, zero_length));
  // The network's copy comes from its own lane.
  const std::string network = html_of(R"(, "by": "network")");
  CHECK(contains(network, "network COPY Transfer.Requested t1 (m-1, same id)"));
  CHECK(contains(network, "<line class=\"arrow a-copy"));
  CHECK_FALSE(std::regex_search(network, zero_length));
  // The operator's copy keeps its label.
  const std::string by_hand = html_of("");
  CHECK(contains(by_hand, "publish COPY Transfer.Requested t1 (m-1)"));
  CHECK_FALSE(contains(by_hand, "class=\"arrow a-copy"));
}

// ---- A Marten story names the Marten inbox's key wherever a step names the index (item 5) ------

TEST_CASE("the index account.inbox_state is named as the story's inbox has it", "[lessons]") {
  Config marten;
  marten.account_inbox = AccountInbox::marten;
  const Config masstransit;
  Step drop;
  drop.kind = StepKind::drop_index;
  drop.index = IndexName::account_inbox_state;
  Step restore = drop;
  restore.kind = StepKind::restore_index;
  // The playground labels its moves and its index buttons with these.
  CHECK(contains(describe_step_in(drop, marten), "inbox_documents' primary key"));
  CHECK_FALSE(contains(describe_step_in(drop, marten), "inbox_state"));
  CHECK(contains(describe_step_in(restore, marten), "restore index"));
  CHECK(contains(describe_step_in(restore, marten), "inbox_documents' primary key"));
  CHECK(describe_step_in(drop, masstransit) == "drop index account.inbox_state");
  CHECK(contains(index_words(IndexName::account_inbox_state, marten), "inbox_documents"));
  CHECK(index_words(IndexName::account_inbox_state, masstransit) == "account.inbox_state");
  CHECK(index_words(IndexName::account_ledger, marten) == "account.ledger");
}

// ---- 50's counterexample, replayed: its times and its extra publishes explained ------

TEST_CASE("50's written counterexample says why it is all at 0 s and where its publishes come from",
          "[lessons][explore]") {
  Scenario scenario = library_scenario("50-explorer-proves-the-key.json");
  scenario.config.account_ledger_unique = false;
  ExploreSettings settings;
  settings.faults = 0;
  const ExploreResult result = explore(scenario, settings);
  REQUIRE_FALSE(result.counterexamples.empty());
  const Scenario& cx = result.counterexamples.front().scenario;
  // The explored story's own description is replaced, and the file says what a reader needs.
  CHECK_FALSE(cx.description.empty());
  CHECK(contains(cx.description, "An exploration has no clock"));
  CHECK(contains(cx.description, "every event of the replay happens at 0 s"));
  CHECK(contains(cx.description, "the relay publishes again a row whose confirm it lost"));
  CHECK(contains(cx.description, "each publish both rows"));
  // Written and read back, it is one paragraph and its narration says it has no clock.
  const Scenario written = parse_ok(scenario_to_json(cx).dump());
  CHECK(written.description_parts.empty());
  const std::string text = narrated(written);
  CHECK(contains(text, "(An explored order: it has no clock, so every event happens at 0 s"));
  CHECK_FALSE(contains(text, "👁"));
  // A story with a clock says nothing of the kind.
  CHECK_FALSE(contains(narrated(scenario), "An explored order"));
}

TEST_CASE("the demo's index links each watch for to its event in the scenario's report",
          "[lessons][course]") {
  const Scenario scenario = library_scenario("09-crash-after-commit.json");
  RunOptions options;
  options.keep_trace = true;
  const RunResult result = run_scenario(scenario, options);
  const std::optional<size_t> event =
      selected_event(scenario.description_parts.watch_for_event, result.events);
  REQUIRE(event.has_value());
  DemoIndexRow row;
  row.result = &result;
  row.block = "Crashes";
  const std::string index = render_demo_index({row});
  CHECK(contains(index, "href=\"09-crash-after-commit.html#event-" + std::to_string(*event + 1) +
                            "\">👁 " + escape_html(scenario.description_parts.watch_for)));
}

// ---- Redelivery by timer: the JetStream lessons ----------------------------------------------

TEST_CASE("74: the copy comes by ack wait with no fault, and the inbox acks it", "[lessons]") {
  RunResult result;
  const std::string text = narrated(library_scenario("74-jetstream-slow-consumer.json"), &result);
  INFO(lines_with(text, "m-1"));
  CHECK(contains(text, "redeliver Transfer.Requested t1 (m-1): account-service: no ack within the "
                       "ack wait (2000 ms): delivered again, as delivery 2, to account-service#2"));
  // In JetStream's words, not RabbitMQ's: a consumer sequence, not a channel's delivery tag; the
  // delivery metadata's NumDelivered, not x-delivery-count; a publish ack, not a confirm.
  CHECK(contains(text, "deliver Transfer.Requested t1 (m-1, consumer sequence 2)  REDELIVERED "
                       "(NumDelivered 2)"));
  CHECK(contains(text, "broker → transfer-relay  publish ack Transfer.Requested t1 (m-1)"));
  CHECK_FALSE(contains(text, "x-delivery-count"));
  CHECK_FALSE(contains(text, "'s channel"));
  CHECK_FALSE(contains(text, "requeue"));
  CHECK_FALSE(contains(text, "confirm Transfer"));
  // The diagrams too: Mermaid's arrows, the HTML report's tooltips and its metadata panel.
  const std::string diagram = render_mermaid(result);
  CHECK(contains(diagram, "deliver Transfer.Requested t1 (m-1) consumer sequence 2 REDELIVERED "
                          "(NumDelivered 2)"));
  CHECK(contains(diagram, "redeliver m-1: account-service: no ack within the ack wait"));
  CHECK_FALSE(contains(diagram, "x-delivery-count"));
  CHECK_FALSE(contains(diagram, " tag "));
  const std::string page = render_html(result);
  CHECK(contains(page, "consumer sequence: 2\nredelivered: true\nNumDelivered: 2"));
  CHECK(contains(page, "\"broker\":\"jetstream\""));
  CHECK_FALSE(contains(page, "\ndelivery tag: "));  // the tooltip's field, not the glossary
  CHECK(contains(text, "account-service#2  inbox: message m-1 already consumed"));
  CHECK_FALSE(contains(text, "CRASH"));
  CHECK_FALSE(contains(text, "LOST"));
  CHECK_FALSE(contains(text, "connection closed"));
  CHECK(result.passed);
}

TEST_CASE("76: a handler that says it is still working keeps its delivery: no copy", "[lessons]") {
  RunResult result;
  const std::string text = narrated(library_scenario("76-jetstream-in-progress.json"), &result);
  INFO(lines_with(text, "m-1"));
  CHECK(contains(text, "account-service#1 → broker  in progress (+WPI) consumer sequence 1  "
                       "Transfer.Requested t1 (m-1): still working on it, the ack wait (2000 ms) "
                       "starts again"));
  CHECK_FALSE(contains(text, "no ack within the ack wait"));
  CHECK_FALSE(contains(text, "REDELIVERED"));
  CHECK_FALSE(contains(text, "already consumed"));
  CHECK(contains(render_mermaid(result), "in progress consumer sequence 1 (+WPI)"));
  CHECK(contains(render_html(result), "in progress consumer sequence 1 (+WPI)"));
  CHECK(result.passed);
}

TEST_CASE("75: the stream drops t1's copy inside its window, and the inbox stops t2's after it",
          "[lessons]") {
  RunResult result;
  const std::string text = narrated(library_scenario("75-jetstream-dedupe-window.json"), &result);
  INFO(lines_with(text, "Transfer.Requested"));
  CHECK(contains(text, "DROPPED  Transfer.Requested t1 (m-1): TRANSFERS: a publish with "
                       "Nats-Msg-Id m-1 inside the stream's 120000 ms Duplicates window"));
  CHECK(count_of(text, "✗ DROPPED") == 1);  // t2's copy is past the window
  CHECK(contains(text, "account-service  inbox: message m-5 already consumed, acked without "
                       "effect"));
  CHECK(result.passed);
}
