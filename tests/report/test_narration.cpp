// The focus narration, as a teacher reads it on a projector: identical
// repeats collapsed with their count, moments and durations in one readable format, delivery
// tags named with their channel, `--show-rows` rows under the line that names their table,
// event numbers that are the HTML report's #event-N, and `--verbose` printing every line.
#include <catch2/catch.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "app/demo.h"
#include "report/narrate.h"
#include "support/scenarios.h"
#include "support/text.h"

using namespace inboxsim;
using inboxsim::testing::contains;
using inboxsim::testing::library_scenario;

namespace {

struct Narration {
  std::string text;
  std::vector<std::string> lines;
  RunResult result;
};

// Runs a library file narrated, as `inboxsim run` does (the events kept, as --html keeps them).
Narration narrate_file(const std::string& file, bool verbose = false, bool show_rows = false) {
  std::ostringstream out;
  NarratedRunOptions options;
  options.narrator.verbose = verbose;
  options.show_rows = show_rows;
  options.record_rows = show_rows;
  Narration narration;
  narration.result = narrated_run(library_scenario(file), options, out);
  narration.text = out.str();
  std::istringstream lines(narration.text);
  for (std::string line; std::getline(lines, line);) narration.lines.push_back(line);
  return narration;
}

// The index of the first line containing `part`, or lines.size().
size_t line_with(const std::vector<std::string>& lines, const std::string& part, size_t from = 0) {
  for (size_t i = from; i < lines.size(); ++i) {
    if (contains(lines[i], part)) return i;
  }
  return lines.size();
}

// An event line: its moment, "#N", the sentence.
const std::regex kEventLine(R"(^ *(.+ s)  #([0-9]+) +(.*)$)");
// A step header: "── step 3 · run until quiescent  (#5, t = 0 s)".
const std::regex kStepHeader(R"(^── step [0-9]+ · .*  \(#([0-9]+), t = (.+ s)\)$)");

}  // namespace

TEST_CASE("the focus narration collapses scenario 41's loop into one line with its count",
          "[narrate][focus]") {
  const Narration focus = narrate_file("41-poison-classic-queue.json");
  // The loop is shown twice, then counted; the numbers are the report's events.
  CHECK(contains(focus.text,
                 "                  … 996 more identical redeliveries of m-2 (4 lines "
                 "each): #27 to #4010, 0.032 s to 5.039 s (--verbose prints them)\n"));
  CHECK(focus.lines.size() < 100);
  // What follows the loop, and the verdict of the bank, are still there.
  CHECK(contains(focus.text,
                 "#4012  broker → transfer-service  deliver Account.Debited t1 (m-2, "
                 "tag 1000 on transfer-service's channel)  REDELIVERED"));
  CHECK(contains(focus.text, "‼ VIOLATION  termination"));
  // Scenario 40's 21 deliveries of its poison message: two shown, 18 counted.
  const Narration forty = narrate_file("40-poison-quorum-queue.json");
  CHECK(contains(forty.text, "… 18 more identical redeliveries of m-2 (4 lines each)"));
  CHECK(contains(forty.text, "☠ DEAD-LETTERED  Account.Debited t1 (m-2)"));
  // A story with no repeats loses nothing: as many event lines as the verbose narration.
  const Narration nine = narrate_file("09-crash-after-commit.json");
  CHECK(nine.text == narrate_file("09-crash-after-commit.json", true).text);
}

TEST_CASE("run --verbose prints every event of the trace, each on its own numbered line",
          "[narrate][focus]") {
  const Narration verbose = narrate_file("41-poison-classic-queue.json", true);
  CHECK_FALSE(contains(verbose.text, "more identical"));
  std::vector<int64_t> numbers;
  for (const std::string& line : verbose.lines) {
    std::smatch match;
    if (std::regex_match(line, match, kEventLine) || std::regex_match(line, match, kStepHeader)) {
      numbers.push_back(std::stoll(match[match.size() == 4 ? 2 : 1].str()));
    }
  }
  REQUIRE(numbers.size() == verbose.result.events.size());
  for (size_t i = 0; i < numbers.size(); ++i) CHECK(numbers[i] == static_cast<int64_t>(i + 1));
}

TEST_CASE("the narration's event numbers are the report's #event-N, with the event's moment",
          "[narrate][focus]") {
  // The report opens #event-N at result.events[N - 1] (its script: go(N - 1)).
  for (const std::string file : {"09-crash-after-commit.json", "47-late-error-queue-replay.json",
                                 "32-masstransit-row-lock.json"}) {
    CAPTURE(file);
    const Narration narration = narrate_file(file);
    const std::vector<TraceEvent>& events = narration.result.events;
    size_t checked = 0;
    for (const std::string& line : narration.lines) {
      std::smatch match;
      if (std::regex_match(line, match, kStepHeader)) {
        const size_t number = std::stoul(match[1].str());
        REQUIRE(number >= 1);
        REQUIRE(number <= events.size());
        CHECK(events[number - 1].kind == EventKind::step);
        CHECK(match[2].str() == human_duration(events[number - 1].time_ms));
        ++checked;
      } else if (std::regex_match(line, match, kEventLine)) {
        const size_t number = std::stoul(match[2].str());
        REQUIRE(number >= 1);
        REQUIRE(number <= events.size());
        const TraceEvent& event = events[number - 1];
        CAPTURE(line, describe_event(event));
        CHECK(match[1].str() == human_duration(event.time_ms));
        // The sentence is the event's (the narration adds to it, never another event's).
        const std::string sentence = describe_event(event);
        CHECK(match[3].str().compare(0, 12, sentence, 0, 12) == 0);
        ++checked;
      }
    }
    CHECK(checked == events.size());  // nothing collapsed in these stories
  }
}

TEST_CASE("moments and durations read as hours and days, not milliseconds", "[narrate][focus]") {
  // Scenario 47 replays a parked copy three days later.
  const Narration late = narrate_file("47-late-error-queue-replay.json");
  CHECK(contains(late.text, "· advance 3 d  (#41, t = 0.526 s)\n"));
  CHECK(contains(late.text, "⇥ clock runs on 3 d, until 3 d 0 h 0 min 0.526 s; what falls due "
                            "meanwhile follows\n"));
  CHECK(line_with(late.lines, "3 d 0 h 0 min 0.5") < late.lines.size());
  CHECK_FALSE(contains(late.text, "259200"));
  // Scenario 14's five-minute jump, and its moments after it.
  const Narration window = narrate_file("14-window-too-short.json");
  CHECK(contains(window.text, "⇥ clock runs on 5 min, until 5 min"));
  CHECK(contains(window.text,
                 "\n5 min 0.041 s  #39    broker → account-service  deliver "
                 "Transfer.Requested t1 (m-1, tag 3 on account-service's channel)"));
}

TEST_CASE("a delivery tag is said with its consumer's channel, a new one after a reconnect",
          "[narrate][focus]") {
  const Narration nine = narrate_file("09-crash-after-commit.json");
  CHECK(contains(nine.text,
                 "broker → transfer-service  deliver Account.Debited t1 (m-2, tag 1 on "
                 "transfer-service's channel)\n"));
  // transfer-service crashed: its tags start again at 1 on the channel it opens after restart.
  CHECK(contains(nine.text,
                 "broker → transfer-service  deliver Account.Debited t1 (m-2, tag 1 on "
                 "transfer-service's 2nd channel)  REDELIVERED (x-delivery-count 1)"));
  CHECK(contains(nine.text,
                 "transfer-service → broker  ack tag 1 on transfer-service's 2nd "
                 "channel  Account.Debited t1 (m-2)"));
  // Two instances: each tag names its instance.
  const Narration two = narrate_file("30-marten-backstop.json");
  CHECK(contains(two.text, "on account-service#2's channel"));
  CHECK(contains(two.text, "on account-service#1's channel"));
}

TEST_CASE("an ack that reaches the broker after other lines says when it was sent",
          "[narrate][focus]") {
  // account-service's ack of m-1 leaves when its handler ends (#13) and reaches the broker
  // after transfer-service has already handled m-2: the line says so, the trace order stays.
  const Narration nine = narrate_file("09-crash-after-commit.json");
  const size_t ack = line_with(nine.lines, "ack tag 1 on account-service's channel");
  REQUIRE(ack < nine.lines.size());
  CHECK(contains(nine.lines[ack],
                 "#21    account-service → broker  ack tag 1 on account-service's "
                 "channel  Transfer.Requested t1 (m-1)  (sent after #13 at "
                 "0.019 s; it reaches the broker now)"));
  CHECK(line_with(nine.lines, "#13    account-service  inbox: m-1 marked delivered") < ack);
}

TEST_CASE("run --show-rows prints each row under the line that names its table", "[narrate][focus]") {
  const Narration rows = narrate_file("09-crash-after-commit.json", false, true);
  const std::vector<std::string>& lines = rows.lines;
  const std::string indent(18, ' ');
  // transfer-service's commit: its processed_messages row under the processed_messages line,
  // the saga's row and its command's outbox row under the saga line.
  const size_t recorded = line_with(lines, "processed_messages: m-2 inserted");
  REQUIRE(recorded + 4 < lines.size());
  CHECK(lines[recorded + 1].rfind(indent + "+ transfer-service.processed_messages #1  id=1 "
                                           "message_id=m-2",
                                  0) == 0);
  CHECK(contains(lines[recorded + 2], "saga t1  REQUESTED → DEBITED"));
  CHECK(lines[recorded + 3].rfind(indent + "~ transfer-service.sagas #1  state: REQUESTED → "
                                           "DEBITED",
                                  0) == 0);
  CHECK(lines[recorded + 4].rfind(indent + "+ transfer-service.outbox #2  seq=2 message_id=m-3",
                                  0) == 0);
  // account-service's effect commit: the ledger and the balance under the effect line.
  const size_t debit = line_with(lines, "alice  -2500  (DEBIT t1)  → 7500");
  REQUIRE(debit + 2 < lines.size());
  CHECK(lines[debit + 1].rfind(indent + "+ account-service.ledger #1", 0) == 0);
  CHECK(lines[debit + 2].rfind(indent + "~ account-service.accounts #1  balance: 10000 → 7500",
                               0) == 0);
  // The requeued message taken again: under its redelivery, not under the restart before it.
  const size_t redelivered = line_with(lines, "REDELIVERED (x-delivery-count 1)");
  REQUIRE(redelivered + 1 < lines.size());
  CHECK(contains(lines[redelivered - 1], "↻ RESTART  transfer-service"));
  CHECK(lines[redelivered + 1].rfind(indent + "~ broker.transfer-service #2  state: returned → "
                                              "unacked",
                                     0) == 0);
}
