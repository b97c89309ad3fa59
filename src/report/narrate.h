// Terminal narration of a run: one readable line per trace event, as it happens, and a summary.
//
// A Narrator is hooked to Trace::listener, so it sees events one at a time while the simulation
// runs and keeps only what it needs to group lines under their step (a step counter and, when
// given, running balances). summary() prints what a reader wants at the end: balances, saga
// states, invariant verdicts, expectations, the lesson and a PASS/FAIL line. The Narrator owns
// no stream; the caller keeps the ostream alive for the Narrator's lifetime.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "domain/config.h"
#include "domain/result.h"
#include "kernel/trace.h"

namespace inboxsim {

struct NarratorOptions {
  bool color = false;  // ANSI colours; the CLI decides from --color, NO_COLOR and isatty
  bool quiet = false;  // print nothing but the verdict line
  bool legend = true;  // define the terms after the invariants (demo prints it once instead)
};

class Narrator {
 public:
  Narrator(std::ostream& out, NarratorOptions options);

  // Optional: the opening balances, so that effect lines also show the balance they leave.
  void set_opening_balances(const std::map<std::string, int64_t>& balances);

  // Optional: the run's config, so that lines can name what it decides (the dedupe key of
  // processed_messages, whether the relay mints a new id per attempt).
  void set_config(const Config& config);

  // Prints the line(s) of one event: a header for a step, one line for anything else, and where
  // a reader needs it the deciding line that follows from earlier events (an inbox row found
  // unconsumed after a crash, an id minted anew by the relay).
  void on_event(const TraceEvent& event);

  // Prints the rows an event changed, under its line (`run --step --show-rows`).
  void on_row_changes(const RowHistory& history, const std::vector<RowChange>& changes);

  // Prints now a line it holds back to merge with the next event's (before a pause: what the
  // reader waits on must be on the screen).
  void flush();

  // Prints the end-of-run summary, or only the verdict line in quiet mode.
  void summary(const RunResult& result);

 private:
  void print_step_header(const TraceEvent& event);
  void print_event_line(const TraceEvent& event);
  void print_line(const TraceEvent& event, const std::string& text);
  void print_held_line(const TraceEvent* next);
  std::string deciding_line(const TraceEvent& event);
  std::string minted_id_line(const TraceEvent& event);
  std::string with_context(const TraceEvent& event, std::string text) const;
  void print_balances(const RunResult& result);
  void print_transfers(const RunResult& result);
  void print_invariants(const RunResult& result);
  void print_expectations(const RunResult& result);
  std::string paint(std::string_view text, std::string_view ansi) const;

  std::ostream& out_;
  NarratorOptions options_;
  int64_t step_count_ = 0;
  bool balances_known_ = false;
  std::map<std::string, int64_t> running_balances_;
  bool config_known_ = false;
  Config config_;
  // processed_messages' "inserted" line, held until the next event says whether the state
  // machine refused the event (then nothing but the row was written).
  std::optional<TraceEvent> held_record_;
  // Inbox rows committed with consumed still null, and why a later delivery finds them so:
  // their handler died, or faulted and rolled back (a row the cleanup never removes).
  enum class Unconsumed : uint8_t { pending, crashed, faulted };
  std::map<std::string, Unconsumed> unconsumed_rows_;  // message id → what became of it
  // The relay's first id for each (type, transfer), to show a minted id beside it.
  std::map<std::string, std::string> first_relay_ids_;
};

// Returns one plain sentence for an event, without time or colour, e.g.
// "broker → account-service  deliver Transfer.Requested t1 (m-3, tag 1) REDELIVERED #2".
// The HTML report shows the same sentence for the current event.
std::string describe_event(const TraceEvent& event);

// Returns one plain line per changed row, e.g.
// "+ account-service.inbox_state #1  message_id=m-1 consumer_id=account receive_count=0" or
// "~ transfer-service.sagas #1  state: REQUESTED → DEBITED"; updates name only what changed.
std::vector<std::string> describe_row_changes(const RowHistory& history,
                                              const std::vector<RowChange>& changes);

// Returns what became of the bank, whatever the story expected: "bank correct", or "bank broke:
// single_effect at 41 ms, 2500 destroyed" (the first invariant broken, when, and the money
// invented or destroyed by the end, if any).
std::string bank_verdict(const RunResult& result);

// Returns the one-line verdict, without colour: whether the expectations were met, and the
// bank's verdict beside it: "PASS  duplicate-debited: Two identical deliveries, one
// CreditRequested  · bank correct  (seed 1, trace …)".
std::string verdict_line(const RunResult& result);

// Returns what happened to the money, one sentence, e.g. "Money: 2500 invented by the end
// (balances 12500, in flight 0, opened with 10000); it first broke at 812 ms: …". Said before
// the verdict, because a story that is meant to break it passes when it breaks.
std::string money_sentence(const RunResult& result);

// True when no money was invented or destroyed: conservation held throughout and, at the end,
// the balances plus the money in flight equal the opening total.
bool money_right(const RunResult& result);

// Formats a virtual duration for people: "1900000 ms (31 min 40 s)", "250 ms".
std::string human_duration(int64_t ms);

}  // namespace inboxsim
