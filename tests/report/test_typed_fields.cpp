// The trace's typed fields (kernel/trace.h): what the views act on is data, never a sentence.
// Every event of a kind that has one carries it, in every story of the library, and the views
// read it: a sentence reworded cannot change what they show.
#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "domain/crash.h"
#include "domain/saga.h"
#include "domain/scenario.h"
#include "kernel/trace.h"
#include "report/narrate.h"
#include "scenario/runner.h"
#include "support/scenarios.h"
#include "support/text.h"

using namespace inboxsim;
using inboxsim::testing::library_files;
using inboxsim::testing::library_scenario;
using inboxsim::testing::narrated_events;

namespace {

// A story's run with its trace kept.
RunResult traced(const Scenario& scenario) {
  RunOptions options;
  options.keep_trace = true;
  return run_scenario(scenario, options);
}

// `run` with the sentence of every event of `kinds` reworded.
RunResult reworded(RunResult run, std::initializer_list<EventKind> kinds) {
  for (TraceEvent& event : run.events) {
    if (std::find(kinds.begin(), kinds.end(), event.kind) != kinds.end()) {
      event.detail = "(reworded)";
    }
  }
  return run;
}

// The lines of `text` that contain `part`.
std::string lines_with(const std::string& text, std::string_view part) {
  std::istringstream in(text);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    if (line.find(part) != std::string::npos) out += line + "\n";
  }
  return out;
}

}  // namespace

TEST_CASE("every dedupe record, consumer fault and saga change of the library has its typed "
          "field",
          "[trace][typed]") {
  size_t records = 0, faults = 0, sagas = 0, violations = 0, hits = 0, crashes = 0, effects = 0,
         timed = 0;
  for (const std::string& file : library_files()) {
    CAPTURE(file);
    const RunResult result = traced(library_scenario(file));
    for (const TraceEvent& event : result.events) {
      CAPTURE(event.detail);
      switch (event.kind) {
        case EventKind::dedupe_record:
          ++records;
          CHECK(event.record != DedupeRecord::none);
          CHECK(trace_event_json(event).find(",\"record\":\"" +
                                             std::string(dedupe_record_name(event.record)) +
                                             "\"") != std::string::npos);
          break;
        case EventKind::consumer_fault:
          ++faults;
          CHECK(event.cause != FaultCause::none);
          break;
        case EventKind::violation:
          ++violations;
          CHECK(parse_invariant(event.invariant).has_value());
          CHECK(event.detail.rfind(std::string(event.invariant) + ": ", 0) == 0);
          break;
        case EventKind::saga:
          ++sagas;
          CHECK(parse_saga_state(event.saga_to).has_value());
          CHECK((event.saga_from.empty() || parse_saga_state(event.saga_from).has_value()));
          break;
        case EventKind::dedupe_hit:
          ++hits;
          CHECK(event.dedupe_step != DedupeStep::none);
          break;
        case EventKind::crash:
          ++crashes;
          REQUIRE(event.crash_point.has_value());
          CHECK(event.detail == crash_point_name(*event.crash_point));
          break;
        case EventKind::effect:
          ++effects;
          REQUIRE(event.entry.has_value());
          CHECK(event.detail == entry_type_name(*event.entry));
          break;
        case EventKind::advance:
        case EventKind::paused:
          ++timed;
          CHECK(event.duration_ms > 0);
          CHECK(event.amount == 0);
          break;
        case EventKind::cleanup: CHECK(event.amount == 0); break;
        default:
          CHECK(event.record == DedupeRecord::none);
          CHECK(event.cause == FaultCause::none);
          CHECK(event.saga_to.empty());
          CHECK(event.invariant.empty());
          CHECK(event.dedupe_step == DedupeStep::none);
          CHECK_FALSE(event.crash_point.has_value());
          CHECK_FALSE(event.entry.has_value());
          CHECK(event.duration_ms == 0);
          CHECK(event.rows_deleted == 0);
          CHECK((!event.by_hand || event.kind == EventKind::publish));
      }
    }
  }
  CHECK(records > 100);
  CHECK(faults > 10);
  CHECK(sagas > 100);
  CHECK(violations > 10);
  CHECK(hits > 40);
  CHECK(crashes > 10);
  CHECK(effects > 100);
  CHECK(timed > 10);
}

TEST_CASE("the views read the typed fields, not the sentence", "[trace][typed]") {
  TraceEvent saga;
  saga.kind = EventKind::saga;
  saga.service = "transfer-service";
  saga.transfer = "t1";
  saga.saga_from = "REQUESTED";
  saga.saga_to = "DEBITED";
  saga.detail = "reworded for people";
  CHECK(describe_event(saga) == "transfer-service  saga t1  REQUESTED → DEBITED");
  saga.saga_from = {};
  saga.saga_to = "REQUESTED";
  CHECK(describe_event(saga) == "transfer-service  saga t1   → REQUESTED");

  // The ↳ line under an account-service crash after its inbox row: it reads the record, so a
  // reworded sentence changes nothing.
  const Scenario scenario = library_scenario("10-crash-between-inbox-steps.json");
  const RunResult result = traced(scenario);
  const std::string plain = narrated_events(scenario, result);
  const std::string again = narrated_events(
      scenario, reworded(result, {EventKind::dedupe_record, EventKind::consumer_fault,
                                  EventKind::dedupe_hit, EventKind::effect, EventKind::crash}));
  const std::string why = lines_with(plain, "↳");
  CHECK(why.find("found, consumed null: the consumer never ran") != std::string::npos);
  CHECK(why == lines_with(again, "↳"));
}

TEST_CASE("processed_messages' lines are written from the typed fields, with the key spelt out",
          "[trace][typed]") {
  // 21: the key is (message id, consumer); 29: a row the state machine refuses is committed
  // alone. Neither line may follow a reworded sentence.
  for (const std::string file :
       {"21-dedupe-key-per-consumer.json", "29-late-duplicate-after-rejection.json"}) {
    CAPTURE(file);
    const Scenario scenario = library_scenario(file);
    const RunResult result = traced(scenario);
    const std::string plain = lines_with(narrated_events(scenario, result), "processed_messages: ");
    CHECK_FALSE(plain.empty());
    CHECK(plain == lines_with(narrated_events(scenario, reworded(result, {EventKind::dedupe_record,
                                                                          EventKind::dedupe_hit})),
                              "processed_messages: "));
  }
  const Scenario per_consumer = library_scenario("21-dedupe-key-per-consumer.json");
  const std::string keyed = narrated_events(per_consumer, traced(per_consumer));
  CHECK(keyed.find(", saga) inserted") != std::string::npos);
  CHECK(keyed.find(", notifications) inserted") != std::string::npos);
  const Scenario late = library_scenario("29-late-duplicate-after-rejection.json");
  const std::string refused = narrated_events(late, traced(late));
  CHECK(refused.find("inserted, committed alone: the state machine refuses the event") !=
        std::string::npos);
}

TEST_CASE("a publish by hand and a fault's copy are told apart by the typed flag",
          "[trace][typed]") {
  TraceEvent copy;
  copy.kind = EventKind::publish;
  copy.service = "operator";
  copy.target = "broker";
  copy.type = "Account.Debited";
  copy.message_id = "m-2";
  copy.detail = "by hand, reworded";
  CHECK(describe_event(copy).find("(a copy by hand, same message id)") != std::string::npos);
  copy.by_hand = true;
  copy.detail = "reworded";
  CHECK(describe_event(copy).find("(a copy by hand") == std::string::npos);
}
