// Terminal narration of a run: one readable line per trace event, as it happens, and a summary.
//
// A Narrator is hooked to Trace::listener, so it sees events one at a time while the simulation
// runs. Each line carries the event's number, the same N as the HTML report's #event-N, and its
// moment in one format ("2 h 0 min 0.016 s"). Lines wait until the next event says where they
// end: the events one commit records are printed as a group, each `--show-rows` row under the
// line of that group that names its table. By default (the focus narration) a block of lines
// that repeats identically, apart from times, tags and delivery counts, is shown twice and then
// collapsed into one line with the count ("… 994 more identical redeliveries"); `verbose`
// prints every line. summary() prints what a reader wants at the end: balances, saga states,
// invariant verdicts, expectations, the lesson and a PASS/FAIL line. The Narrator owns no
// stream; the caller keeps the ostream alive for the Narrator's lifetime. What it keeps is
// bounded: one commit's lines, the last few lines' shapes and the open deliveries.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "domain/config.h"
#include "domain/result.h"
#include "domain/scenario.h"
#include "kernel/trace.h"
#include "report/why_lines.h"

namespace inboxsim {

struct DeliveryNaming;

struct NarratorOptions {
  bool color = false;    // ANSI colours; the CLI decides from --color, NO_COLOR and isatty
  bool quiet = false;    // print nothing but the verdict line
  bool legend = true;    // define the terms after the invariants (demo prints it once instead)
  bool verbose = false;  // print every line: no identical repeats collapsed (--verbose)
};

class Narrator {
 public:
  Narrator(std::ostream& out, NarratorOptions options);

  // Optional: the opening balances, so that effect lines also show the balance they leave.
  void set_opening_balances(const std::map<std::string, int64_t>& balances);

  // Optional: the run's config, so that lines can name what it decides (the dedupe key of
  // processed_messages, whether the relay mints a new id per attempt).
  void set_config(const Config& config);

  // Optional: the story's steps, so that a step header says its durations in the narration's
  // format (the trace's step text says "advance 259200000 ms"). The k-th step event is steps[k-1].
  void set_steps(const std::vector<Step>& steps);

  // Prints the line(s) of one event: a header for a step, one line for anything else, and where
  // a reader needs it the deciding line that follows from earlier events (an inbox row found
  // unconsumed after a crash, an id minted anew by the relay).
  void on_event(const TraceEvent& event);

  // Prints the rows an event changed, under the line of its commit that names their table
  // (`run --show-rows`).
  void on_row_changes(const RowHistory& history, const std::vector<RowChange>& changes);

  // Prints now every line it holds back, and ends a collapse of repeats after the lines
  // collapsed so far (before a pause: what the reader waits on must be on the screen).
  void flush();

  // Prints the end-of-run summary, or only the verdict line in quiet mode.
  void summary(const RunResult& result);

 private:
  // One event's lines, waiting for the next event to say whether the rows of its commit belong
  // under it or under a later line of the same commit.
  struct Entry {
    int64_t number = 0;  // the event's place in the trace, from 1: the report's #event-N
    TraceEvent event;
    std::string text;       // the event's sentence, with what the narration adds
    std::string deciding;   // the ↳ line under it, if any
    std::string signature;  // what two identical repeats share (no times, tags or counts)
    bool held = false;      // processed_messages' line, rewritten by the next event
    std::vector<std::pair<size_t, std::string>> rows;  // (arrival order, row line)
  };
  // A row waiting for a later line of its commit that names its table.
  struct PendingRow {
    size_t order = 0;
    size_t entry = 0;  // the entry it goes under when no later line names it
    std::string line;
    std::string source;
    std::string table;
    std::string message_id;  // a queue row's message
    std::string consumer;    // a queue row's consumer, if it has one
  };

  Entry make_entry(const TraceEvent& event);
  void rewrite_held(Entry& held, const TraceEvent& next);
  void rehome_rows(const TraceEvent& next, bool same, Entry& next_entry);
  void emit_group();
  void emit(Entry entry);
  void collapse(Entry entry);
  void end_repeats();
  void print_entry(const Entry& entry);
  void print_step_header(const Entry& entry);
  std::string step_text(const TraceEvent& event) const;
  int64_t channel_of(const TraceEvent& event) const;
  std::string sent_after(const TraceEvent& event) const;
  void track_delivery(const TraceEvent& event);
  std::string deciding_line(const TraceEvent& event);
  std::string minted_id_line(const TraceEvent& event);
  std::string processed_key(const TraceEvent& event) const;
  std::string processed_line(const TraceEvent& event, std::string_view how) const;
  std::string line_text(const TraceEvent& event, const DeliveryNaming& naming) const;
  void print_balances(const RunResult& result);
  void print_transfers(const RunResult& result);
  void print_invariants(const RunResult& result);
  void print_expectations(const RunResult& result);
  std::string paint(std::string_view text, std::string_view ansi) const;

  std::ostream& out_;
  NarratorOptions options_;
  int64_t step_count_ = 0;
  int64_t event_count_ = 0;  // events seen: the number of the last one
  bool balances_known_ = false;
  std::map<std::string, int64_t> running_balances_;
  bool config_known_ = false;
  Config config_;
  std::vector<Step> steps_;
  // The open group: the events of one commit (or one event), printed when the next event
  // arrives that is not part of it.
  std::vector<Entry> group_;
  std::vector<PendingRow> pending_rows_;
  size_t rows_seen_ = 0;
  bool last_printed_ = false;  // the last event's lines are on the screen (after a flush)
  // Collapsing identical repeats: the shapes of the last lines, and the run being collapsed.
  std::vector<std::string> recent_;
  size_t period_ = 0;             // the length of the repeating block while collapsing, else 0
  std::vector<Entry> collapsed_;  // the collapsed entries still needed to print them back
  int64_t collapsed_count_ = 0;
  int64_t collapsed_first_ = 0;  // number of the first collapsed event
  int64_t collapsed_last_ = 0;
  int64_t collapsed_first_ms_ = 0;
  int64_t collapsed_last_ms_ = 0;
  std::string collapsed_what_;  // "redeliveries of m-2", or empty: "repeats"
  // Each consumer's channel, counted from 1: a closed connection's consumer gets a new one, and
  // its tags start again at 1.
  std::map<std::string, int64_t, std::less<>> channels_;
  // Open deliveries, (consumer, message id, tag) → the channel they came on and the number and
  // moment of the consumer's last line about them (an ack is recorded when it reaches the
  // broker, after the wire).
  struct OpenDelivery {
    int64_t channel = 1;
    int64_t last_number = 0;
    int64_t last_ms = 0;
  };
  std::map<std::tuple<std::string, std::string, int64_t>, OpenDelivery> deliveries_;
  // Inbox rows committed with consumed still null, and why a later delivery finds them so:
  // their handler died, or faulted and rolled back (a row the cleanup never removes).
  enum class Unconsumed : uint8_t { pending, crashed, faulted };
  std::map<std::string, Unconsumed> unconsumed_rows_;  // message id → what became of it
  // The relay's first id for each (type, transfer), to show a minted id beside it.
  std::map<std::string, std::string> first_relay_ids_;
  WhyLines why_;  // the other decisions' ↳ lines: lock waits, a wait behind a pause, a decided transfer
};

// Returns one plain sentence for an event, without time or colour, e.g.
// "broker → account-service  deliver Transfer.Requested t1 (m-3, tag 1 on account-service's
// channel)  REDELIVERED". A delivery tag counts per channel, so it is always said with its
// consumer's channel.
// The HTML report shows the same sentence for the current event.
std::string describe_event(const TraceEvent& event);
// The same in the words of the run's broker: JetStream's when `jetstream`.
std::string describe_event(const TraceEvent& event, bool jetstream);
// A saga event's change, "REQUESTED → DEBITED" (" → REQUESTED" for a new saga).
std::string saga_change(const TraceEvent& event);

// The words the diagrams (HTML, Mermaid) use for a delivery on the run's broker: RabbitMQ's
// delivery tag and x-delivery-count, or JetStream's consumer sequence and NumDelivered.
bool ran_on_jetstream(const RunResult& result);
// "tag 3", or "consumer sequence 3".
std::string delivery_id_text(int64_t tag, bool jetstream);
// What a redelivery's count is called and says: "x-delivery-count 1" (empty on a classic queue,
// which counts nothing), or "NumDelivered 2" (JetStream counts this delivery too).
std::string delivery_count_text(const TraceEvent& event, bool jetstream);

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

// Formats a virtual duration or moment for people, the one format of the narration: "0.250 s",
// "31 min 40 s", "2 h 0 min 0.016 s", "3 d" (the largest unit first, every unit below it down
// to the seconds, trailing zero units left out; milliseconds as the seconds' decimals).
std::string human_duration(int64_t ms);

}  // namespace inboxsim
