// Tests of the teaching views: terminal narration, Mermaid and HTML, on a hand-built run.
//
// The run is the story a class sees most often: a transfer whose debit is committed, the
// account-service crashes before acking, the redelivery is caught by the inbox, the saga
// completes, and then an operator publishes a copy of Account.Debited by hand, which
// transfer-service's processed_messages catches.
#include <catch2/catch.hpp>
#include <regex>
#include <sstream>

#include "domain/crash.h"
#include "domain/participants.h"
#include "report/glossary.h"
#include "report/html.h"
#include "report/json_output.h"
#include "report/mermaid.h"
#include "report/narrate.h"
#include "support/text.h"

using namespace inboxsim;
using inboxsim::testing::contains;

namespace {

namespace p = participant;

// BEGIN sample_run (also used by a throwaway screenshot driver)
TraceEvent step(int64_t t, std::string detail) {
  TraceEvent e;
  e.time_ms = t;
  e.kind = EventKind::step;
  e.detail = std::move(detail);
  return e;
}

TraceEvent message(int64_t t, EventKind kind, std::string_view from, std::string_view to,
                   std::string id, std::string_view type, int64_t tag = 0,
                   bool redelivered = false) {
  TraceEvent e;
  e.time_ms = t;
  e.kind = kind;
  e.service = from;
  e.target = to;
  e.message_id = std::move(id);
  e.type = type;
  e.transfer = "t1";
  e.delivery_tag = tag;
  e.redelivered = redelivered;
  // A first delivery carries no x-delivery-count (the broker's count 0); this redelivery is
  // the message's third delivery.
  e.delivery_count = redelivered ? 2 : 0;
  return e;
}

TraceEvent inside(int64_t t, EventKind kind, std::string_view service, std::string detail) {
  TraceEvent e;
  e.time_ms = t;
  e.kind = kind;
  e.service = service;
  e.transfer = "t1";
  e.detail = std::move(detail);
  return e;
}

TraceEvent effect(int64_t t, std::string account, int64_t amount, EntryType entry) {
  TraceEvent e =
      inside(t, EventKind::effect, p::account_service, std::string(entry_type_name(entry)));
  e.account = std::move(account);
  e.amount = amount;
  e.entry = entry;
  return e;
}

std::vector<TraceEvent> sample_events() {
  using K = EventKind;
  constexpr std::string_view requested = "Transfer.Requested";
  constexpr std::string_view debited = "Account.Debited";
  constexpr std::string_view credit_requested = "Transfer.CreditRequested";
  constexpr std::string_view credited = "Account.Credited";
  std::vector<TraceEvent> events;
  events.push_back(step(0, "transfer t1: alice -> bob 2500"));
  TraceEvent request = message(0, K::request, p::client, p::transfer_service, "", "");
  request.amount = 2500;
  request.detail = "alice -> bob";
  events.push_back(request);
  events.push_back(
      step(0, "fault armed: crash account-service at after_commit on Transfer.Requested t1"));
  events.push_back(step(0, "run until quiescent"));
  TraceEvent publish = message(5, K::publish, p::relay, p::broker, "m-1", requested);
  publish.detail = "transfers.transfer.requested";
  events.push_back(publish);
  events.push_back(message(5, K::confirm, p::broker, p::relay, "m-1", requested));
  events.push_back(message(6, K::deliver, p::broker, p::account_service, "m-1", requested, 1));
  events.push_back(effect(7, "alice", -2500, EntryType::debit));
  TraceEvent debited_publish =
      message(8, K::publish, p::account_service, p::broker, "m-2", debited);
  debited_publish.detail = "accounts.account.debited";
  events.push_back(debited_publish);
  events.push_back(message(8, K::confirm, p::broker, p::account_service, "m-2", debited));
  TraceEvent crash = message(9, K::crash, p::account_service, "", "m-1", requested);
  crash.detail = "after_commit";
  crash.crash_point = CrashPoint::after_commit;
  events.push_back(crash);
  TraceEvent closed = inside(9, K::connection_closed, p::account_service, "crash");
  closed.target = p::broker;
  closed.transfer.clear();
  events.push_back(closed);
  TraceEvent requeue = message(9, K::requeue, p::broker, "", "m-1", requested);
  requeue.detail = "connection closed";
  events.push_back(requeue);
  TraceEvent restart = inside(1009, K::restart, p::account_service, "");
  restart.transfer.clear();
  events.push_back(restart);
  events.push_back(
      message(1010, K::deliver, p::broker, p::account_service, "m-1", requested, 1, true));
  TraceEvent hit = message(1011, K::dedupe_hit, p::account_service, "", "m-1", requested);
  hit.detail = "inbox: already consumed and delivered";
  hit.dedupe_step = DedupeStep::inbox_consumed;
  events.push_back(hit);
  events.push_back(message(1011, K::ack, p::account_service, p::broker, "m-1", requested, 1));
  events.push_back(message(1012, K::deliver, p::broker, p::transfer_service, "m-2", debited, 1));
  events.push_back(inside(1013, K::saga, p::transfer_service, "REQUESTED->DEBITED"));
  events.push_back(message(1013, K::ack, p::transfer_service, p::broker, "m-2", debited, 1));
  TraceEvent credit = message(1015, K::publish, p::relay, p::broker, "m-3", credit_requested);
  credit.detail = "transfers.credit.requested";
  events.push_back(credit);
  events.push_back(message(1015, K::confirm, p::broker, p::relay, "m-3", credit_requested));
  events.push_back(
      message(1016, K::deliver, p::broker, p::account_service, "m-3", credit_requested, 2));
  events.push_back(effect(1017, "bob", 2500, EntryType::credit));
  TraceEvent credited_publish =
      message(1018, K::publish, p::account_service, p::broker, "m-4", credited);
  credited_publish.detail = "accounts.account.credited";
  events.push_back(credited_publish);
  events.push_back(message(1018, K::confirm, p::broker, p::account_service, "m-4", credited));
  events.push_back(
      message(1018, K::ack, p::account_service, p::broker, "m-3", credit_requested, 2));
  events.push_back(message(1019, K::deliver, p::broker, p::transfer_service, "m-4", credited, 2));
  events.push_back(inside(1020, K::saga, p::transfer_service, "DEBITED->COMPLETED"));
  events.push_back(message(1020, K::ack, p::transfer_service, p::broker, "m-4", credited, 2));
  events.push_back(step(1020, "fault armed: duplicate Account.Debited t1"));
  TraceEvent copy = message(1020, K::publish, p::operator_, p::broker, "m-2", debited);
  copy.detail = "accounts.account.debited";
  events.push_back(copy);
  events.push_back(message(1021, K::deliver, p::broker, p::transfer_service, "m-2", debited, 3));
  TraceEvent duplicate = message(1022, K::dedupe_hit, p::transfer_service, "", "m-2", debited);
  duplicate.detail =
      "processed_messages: duplicate key m-2, transaction rolled back, acked without effect";
  duplicate.dedupe_step = DedupeStep::processed_duplicate_key;
  events.push_back(duplicate);
  events.push_back(message(1022, K::ack, p::transfer_service, p::broker, "m-2", debited, 3));
  return events;
}

RunResult sample_run() {
  RunResult run;
  run.file = "scenarios/crash-after-commit.json";
  run.name = "crash-after-commit";
  run.title = "A crash after commit: the redelivery is acked without effect";
  run.description =
      "account-service commits the debit and dies before its ack. RabbitMQ "
      "redelivers Transfer.Requested; the inbox recognises it.";
  run.lesson = "Dedupe does not mean ignore the message: it means ack without side effects.";
  run.seed = 1;
  run.trace_hash = "0123456789abcdef";
  run.virtual_ms = 1022;
  run.stats = Stats{.published = 5,
                    .deliveries = 6,
                    .redeliveries = 1,
                    .acks = 5,
                    .dedupe_hits = 2,
                    .effects = 2,
                    .crashes = 1,
                    .transactions = 6,
                    .dead_lettered = 0};
  run.opening_balances = {{"alice", 10000}, {"bob", 0}};
  run.balances = {{"alice", 7500}, {"bob", 2500}};
  run.transfers = {{"t1", SagaState::completed}};
  run.transfer_amounts = {{"t1", 2500}};
  run.invariant_applies.fill(true);
  run.invariant_applies[static_cast<size_t>(Invariant::notified)] = false;
  run.expectations = {{"balances.alice", true, ""},
                      {"balances.bob", true, ""},
                      {"transfers.t1", true, ""},
                      {"dedupe_hits.account-service", true, ""}};
  run.passed = true;
  run.events = sample_events();
  return run;
}
// END sample_run

std::string narrate(const RunResult& run, NarratorOptions options) {
  std::ostringstream out;
  Narrator narrator(out, options);
  narrator.set_opening_balances(run.opening_balances);
  for (const TraceEvent& event : run.events) narrator.on_event(event);
  narrator.summary(run);
  return out.str();
}

size_t occurrences(const std::string& text, std::string_view part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
    ++count;
  }
  return count;
}

}  // namespace

TEST_CASE("narration tells the story line by line, grouped under steps", "[report][narrate]") {
  const std::string text = narrate(sample_run(), NarratorOptions{});
  CHECK(contains(text, "inbox: message m-1 already consumed and delivered, acked without effect"));
  CHECK(contains(text,
                 "processed_messages: message m-2 duplicate key m-2, transaction rolled "
                 "back, acked without effect"));
  CHECK(contains(text, "broker → account-service  deliver Transfer.Requested t1 (m-1, tag 1 on "
                       "account-service's channel)"));
  CHECK(contains(text, "REDELIVERED (x-delivery-count 2)"));
  CHECK(contains(text, "alice  -2500  (DEBIT t1)  → 7500"));
  CHECK(contains(text, "CRASH  account-service died at after_commit"));
  CHECK(contains(text, "RESTART  account-service"));
  CHECK(contains(text, "── step 3 · run until quiescent"));
  CHECK(contains(text, "(a copy by hand, same message id)"));
}

TEST_CASE("narration only flags deliveries that really are redeliveries", "[report][narrate]") {
  const std::string text = narrate(sample_run(), NarratorOptions{});
  CHECK(occurrences(text, "REDELIVERED") == 1);
}

TEST_CASE("the summary shows balances, invariants, expectations, lesson and verdict",
          "[report][narrate]") {
  const std::string text = narrate(sample_run(), NarratorOptions{});
  CHECK(contains(text, "10000 →       7500  (-2500)"));
  CHECK(contains(text, "t1  2500  COMPLETED"));
  CHECK(contains(text, "held      single_effect"));
  CHECK_FALSE(contains(text, "notified"));  // does not apply to this run
  CHECK(contains(text, "ok      balances.alice"));
  CHECK(contains(text, "Lesson: Dedupe does not mean ignore the message"));
  CHECK(contains(text, "PASS  crash-after-commit: A crash after commit"));
}

TEST_CASE("a failed run says what failed and why", "[report][narrate]") {
  RunResult run = sample_run();
  run.passed = false;
  run.expectations[0] = {"balances.alice", false, "expected 7500, got 5000"};
  run.violations.push_back({Invariant::single_effect, "t1 DEBIT applied twice", 1011});
  const std::string text = narrate(run, NarratorOptions{});
  CHECK(contains(text, "FAILED  balances.alice: expected 7500, got 5000"));
  CHECK(contains(text, "VIOLATED  single_effect: t1 DEBIT applied twice"));
  CHECK(verdict_line(run).rfind("FAIL  crash-after-commit", 0) == 0);
  CHECK(contains(verdict_line(run), "1 of 4 expectations failed"));
}

TEST_CASE("the verdict says what became of the bank beside the expectations", "[report][narrate]") {
  RunResult run = sample_run();
  CHECK(bank_verdict(run) == "bank correct");
  CHECK(contains(verdict_line(run), "PASS  crash-after-commit: A crash after commit"));
  CHECK(contains(verdict_line(run), "· bank correct  (seed"));
  // A story meant to break the bank passes, and says the bank broke, where, and the money.
  run.balances["alice"] = 5000;  // debited twice, credited once: 2500 destroyed
  run.violations.push_back({Invariant::conservation, "2500 destroyed", 1200});
  run.violations.push_back({Invariant::single_effect, "t1 DEBIT applied twice", 1011});
  CHECK(bank_verdict(run) == "bank broke: single_effect at 1.011 s (and 1 more), 2500 destroyed");
  CHECK(contains(verdict_line(run), "PASS  crash-after-commit"));
  CHECK(contains(verdict_line(run), "· bank broke: single_effect at 1.011 s (and 1 more), 2500 "
                                    "destroyed, as this story expects  (seed"));
  // A what-if whose bank is fine but whose expectations fail says both.
  RunResult what_if = sample_run();
  what_if.passed = false;
  what_if.expectations[0] = {"balances.alice", false, "expected 5000, got 7500"};
  CHECK(contains(verdict_line(what_if), "FAIL  crash-after-commit"));
  CHECK(contains(verdict_line(what_if), "· bank correct  (1 of 4 expectations failed"));
  CHECK(contains(render_html(what_if), "<span class=\"bank ok\""));
  CHECK(contains(render_html(run), ">bank broke: single_effect at 1.011 s (and 1 more), 2500 destroyed</span>"));
}

TEST_CASE("narration has ANSI colour only when asked", "[report][narrate]") {
  CHECK_FALSE(contains(narrate(sample_run(), NarratorOptions{.color = false}), "\x1b["));
  CHECK(contains(narrate(sample_run(), NarratorOptions{.color = true}), "\x1b[1;31m"));
}

TEST_CASE("quiet narration prints only the verdict line", "[report][narrate]") {
  const RunResult run = sample_run();
  CHECK(narrate(run, NarratorOptions{.color = false, .quiet = true}) == verdict_line(run) + "\n");
}

TEST_CASE("durations and moments have one readable format, with their units", "[report][narrate]") {
  CHECK(human_duration(0) == "0 s");
  CHECK(human_duration(16) == "0.016 s");
  CHECK(human_duration(250) == "0.250 s");
  CHECK(human_duration(1'022) == "1.022 s");
  CHECK(human_duration(60'000) == "1 min");
  CHECK(human_duration(60'016) == "1 min 0.016 s");
  CHECK(human_duration(1'900'000) == "31 min 40 s");
  CHECK(human_duration(7'200'000) == "2 h");
  CHECK(human_duration(7'200'016) == "2 h 0 min 0.016 s");
  CHECK(human_duration(259'200'000) == "3 d");
  CHECK(human_duration(259'200'526) == "3 d 0 h 0 min 0.526 s");
}

TEST_CASE("mermaid draws one arrow per message event", "[report][mermaid]") {
  const RunResult run = sample_run();
  const std::string diagram = render_mermaid(run);
  REQUIRE(diagram.rfind("sequenceDiagram\n", 0) == 0);
  const std::regex arrow(R"(^\s*[A-Za-z]+(->>|-->>|--x|-x)[A-Za-z]+: )");
  size_t arrows = 0;
  std::istringstream lines(diagram);
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, arrow)) ++arrows;
  }
  const auto messages = std::count_if(run.events.begin(), run.events.end(),
                                      [](const TraceEvent& e) { return is_message_event(e.kind); });
  CHECK(arrows == static_cast<size_t>(messages));
  CHECK(contains(diagram, "participant Operator as operator"));
  CHECK_FALSE(contains(diagram, "Notifications"));  // absent from this run
  CHECK(contains(diagram, "REDELIVERED (x-delivery-count 2)"));
  CHECK(contains(diagram, "Note over AccountService: CRASH at after_commit"));
}

TEST_CASE("mermaid steps are balanced rect groups", "[report][mermaid]") {
  const std::string diagram = render_mermaid(sample_run());
  CHECK(occurrences(diagram, "    rect rgb(") == 4);
  CHECK(occurrences(diagram, "    end\n") == 4);
}

TEST_CASE("mermaid escapes what its parser chokes on", "[report][mermaid]") {
  RunResult run = sample_run();
  run.events[0].detail = "a;b #1 <x>\nnext";
  const std::string diagram = render_mermaid(run);
  CHECK(contains(diagram, "a#59;b #35;1 #60;x#62; next"));
}

TEST_CASE("html is self-contained", "[report][html]") {
  const std::string page = render_html(sample_run());
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK_FALSE(contains(page, "http://"));
  CHECK_FALSE(contains(page, "https://"));
  CHECK_FALSE(contains(page, "<script src"));
  CHECK_FALSE(contains(page, "<link"));
  CHECK_FALSE(contains(page, "@import"));
  CHECK(contains(page, "<svg id=\"swimlanes\""));
}

TEST_CASE("html carries the glossary, folded, each term with its anchor", "[report][html]") {
  const std::string page = render_html(sample_run());
  CHECK(contains(page, "<details class=\"glossary\"><summary>Glossary"));
  const GlossaryEntry* tag = find_glossary_entry("tag");
  REQUIRE(tag != nullptr);
  CHECK(contains(page, "<dt id=\"" + glossary_anchor(*tag) + "\">"));
  CHECK(contains(page, glossary_html()));
}

TEST_CASE("html shows the story and embeds every event", "[report][html]") {
  const RunResult run = sample_run();
  const std::string page = render_html(run);
  for (const char* id : {"m-1", "m-2", "m-3", "m-4"}) CHECK(contains(page, id));
  CHECK(contains(page, "A crash after commit: the redelivery is acked without effect"));
  CHECK(contains(page, "Dedupe does not mean ignore the message"));
  CHECK(occurrences(page, "<g class=\"ev ") == run.events.size());
  CHECK(contains(page, "REDELIVERED (x-delivery-count 2)"));
  CHECK(contains(page, "CRASH at after_commit"));
}

TEST_CASE("reports show no x-delivery-count where RabbitMQ sends none", "[report][conformance]") {
  // A first delivery carries no x-delivery-count header, and a classic queue never sends one
  // (tests/conformance/scripts 09 and 10).
  RunResult run = sample_run();
  CHECK(contains(render_html(run), "x-delivery-count: none (a first delivery"));
  CHECK_FALSE(contains(render_html(run), "x-delivery-count: 0"));
  for (TraceEvent& event : run.events) {
    if (event.kind == EventKind::deliver && event.redelivered) event.delivery_count = 0;
  }
  const std::string page = render_html(run);
  CHECK(contains(page, "REDELIVERED · "));
  CHECK_FALSE(contains(page, "REDELIVERED (x-delivery-count 0)"));
  const std::string diagram = render_mermaid(run);
  CHECK(contains(diagram, " REDELIVERED"));
  CHECK_FALSE(contains(diagram, "(delivery 0)"));
}

TEST_CASE("html escapes event text in markup and in the embedded JSON", "[report][html]") {
  RunResult run = sample_run();
  run.events[0].detail = "</script><script>alert(1)</script>";
  const std::string page = render_html(run);
  // Only the page's own two script elements may close.
  CHECK(occurrences(page, "</script>") == 2);
  CHECK(contains(page, "\\u003c/script>\\u003cscript>alert(1)"));
  CHECK(contains(page, "&lt;/script&gt;&lt;script&gt;alert(1)"));
}

TEST_CASE("reports still render when the run kept no trace", "[report]") {
  RunResult run = sample_run();
  run.events.clear();
  CHECK(render_mermaid(run).rfind("sequenceDiagram\n", 0) == 0);
  const std::string page = render_html(run);
  CHECK(contains(page, "<svg id=\"swimlanes\""));
  CHECK(contains(page, "\"events\":[]"));
}

// Building the --json object was quadratic in the number of accounts (a linear lookup per key):
// 300,000 accounts took minutes. Linear, it takes well under a second; the test asserts the
// object, and a runaway fails on the test's timeout.
TEST_CASE("the --json object of a run with 300,000 accounts and transfers is complete",
          "[report][json][large]") {
  RunResult run;
  run.name = "large";
  constexpr int kAccounts = 300'000;
  for (int i = 0; i < kAccounts; ++i) {
    const std::string name = "a" + std::to_string(i);
    run.opening_balances[name] = i;
    run.balances[name] = i + 1;
    run.transfers["t" + std::to_string(i)] = SagaState::completed;
  }
  const nlohmann::ordered_json result = run_result_json(run);
  REQUIRE(result.at("balances").size() == kAccounts);
  REQUIRE(result.at("transfers").size() == kAccounts);
  CHECK(result.at("balances").at("a299999") == 300'000);
  CHECK(result.at("transfers").at("t123456") == "COMPLETED");
  // Keys keep the result's (sorted) order: the first two are a0 and a1, then a10.
  auto key = result.at("balances").begin();
  CHECK(key.key() == "a0");
  CHECK((++key).key() == "a1");
  CHECK((++key).key() == "a10");
}

// A story of thousands of transfers: drawn in full its page weighed 130 MB and no browser opened
// it. Past a few thousand events the page draws a window (the start, the end, the notable
// events with their context), says so, and keeps each drawn event's trace number.
TEST_CASE("a long run's page draws a window of its events and says so", "[report][html][large]") {
  RunResult run = sample_run();
  run.events.clear();
  constexpr int kTransfers = 5000;
  for (int i = 0; i < kTransfers; ++i) {
    const std::string id = "m-" + std::to_string(i + 1);
    run.events.push_back(step(i, "transfer t" + std::to_string(i + 1)));
    run.events.push_back(
        message(i, EventKind::publish, p::relay, p::broker, id, "Transfer.Requested"));
    run.events.push_back(message(i, EventKind::deliver, p::broker, p::account_service, id,
                                 "Transfer.Requested", i + 1));
    run.events.push_back(
        message(i, EventKind::ack, p::account_service, p::broker, id, "Transfer.Requested", i + 1));
    if (i == kTransfers / 2) {
      run.events.push_back(inside(i, EventKind::crash, p::account_service, "after_commit"));
      run.events.push_back(inside(i + 1, EventKind::restart, p::account_service, "restarted"));
    }
  }
  const std::string page = render_html(run);
  CHECK(page == render_html(run));
  CHECK(page.size() < 3'000'000);
  CHECK(contains(page, "<b>A window of the run.</b> Of its 20002 events the diagram draws "));
  CHECK(occurrences(page, "<g class=\"ev ") <= 3000);
  CHECK(contains(page, "<g class=\"ev k-crash\""));
  CHECK(contains(page, "<g class=\"span s-down\""));
  CHECK(contains(page, "events not drawn (#"));
  CHECK(contains(page, "\"total\":20002,\"number\":[0,1,2,"));
  // A short run is drawn whole, with no notice.
  CHECK_FALSE(contains(render_html(sample_run()), "window-notice"));
}
