#include "report/narrate.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <ostream>
#include <string_view>

#include "domain/participants.h"
#include "kernel/assert.h"
#include "kernel/text.h"
#include "report/legend.h"

namespace inboxsim {

namespace {

// ANSI styles. Kept few and distinct so that a projector or a dim terminal still shows them.
constexpr std::string_view kBold = "1";
constexpr std::string_view kDim = "2";
constexpr std::string_view kRed = "1;31";
constexpr std::string_view kGreen = "32";
constexpr std::string_view kBoldGreen = "1;32";
constexpr std::string_view kYellow = "33";
constexpr std::string_view kCyan = "36";
constexpr std::string_view kMagenta = "35";
constexpr std::string_view kInverseRed = "1;37;41";

std::string signed_amount(int64_t amount) {
  return (amount > 0 ? "+" : "") + std::to_string(amount);
}

// "Transfer.Requested t1 (m-3)" with the parts that are present.
std::string message_ref(const TraceEvent& event) {
  std::string text(event.type);
  if (!event.transfer.empty()) text += (text.empty() ? "" : " ") + event.transfer;
  if (!event.message_id.empty()) text += " (" + event.message_id + ")";
  return text;
}

std::string arrow(const TraceEvent& event) {
  return std::string(event.service) + " → " + std::string(event.target) + "  ";
}

std::string describe_deliver(const TraceEvent& event) {
  std::string text = arrow(event) + "deliver " + std::string(event.type) + " " + event.transfer +
                     " (" + event.message_id + ", tag " + std::to_string(event.delivery_tag) + ")";
  // A redelivery is the whole point of the pattern, so it is flagged in capitals. A classic
  // queue sends no x-delivery-count.
  // x-delivery-count counts the returns before this delivery (none on a first delivery), so it
  // is shown under its own name: "delivery #1" on a second delivery read as a contradiction.
  if (event.redelivered) {
    text += event.delivery_count > 0
                ? "  REDELIVERED (x-delivery-count " + std::to_string(event.delivery_count) + ")"
                : "  REDELIVERED";
  }
  return text;
}

std::string describe_publish(const TraceEvent& event) {
  std::string text = arrow(event) + "publish " + message_ref(event);
  if (!event.detail.empty()) text += "  → " + event.detail;
  // A duplicate fault's copy carries the routing key alone; a message published by hand (the
  // playground, a `publish` step) says so in its detail already, with its own message id.
  if (event.service == participant::operator_ && event.detail.rfind("by hand", 0) != 0) {
    text += "  (a copy by hand, same message id)";
  }
  // A `duplicate` fault whose story says who made the copy is published under that name.
  if (event.service == participant::broker)
    text += "  (a second copy made by the broker, same message id)";
  if (event.service == participant::network)
    text += "  (a second copy from the network, same message id)";
  return text;
}

std::string describe_ack(const TraceEvent& event, std::string_view verb) {
  return arrow(event) + std::string(verb) + " tag " + std::to_string(event.delivery_tag) + "  " +
         message_ref(event);
}

// "inbox: already consumed and delivered" becomes
// "inbox: message m-3 already consumed and delivered, acked without effect".
std::string describe_dedupe(const TraceEvent& event) {
  std::string mechanism = "dedupe";
  std::string reason = event.detail;
  if (const size_t colon = event.detail.find(':'); colon != std::string::npos) {
    mechanism = event.detail.substr(0, colon);
    reason = event.detail.substr(std::min(colon + 2, event.detail.size()));
  }
  // Services write whole sentences ("message m-1 already consumed, acked without effect"):
  // do not say the id or the verdict twice.
  const std::string id_prefix = "message " + event.message_id + " ";
  if (reason.rfind(id_prefix, 0) == 0) reason.erase(0, id_prefix.size());
  const std::string verdict = ", acked without effect";
  if (reason.size() >= verdict.size() &&
      reason.compare(reason.size() - verdict.size(), verdict.size(), verdict) == 0) {
    reason.erase(reason.size() - verdict.size());
  }
  if (reason.empty()) reason = "is a duplicate";
  return std::string(event.service) + "  " + mechanism + ": message " + event.message_id + " " +
         reason + ", acked without effect";
}

std::string describe_effect(const TraceEvent& event) {
  return event.account + "  " + signed_amount(event.amount) + "  (" + event.detail + " " +
         event.transfer + ")";
}

std::string describe_crash(const TraceEvent& event) {
  std::string text = "✖ CRASH  " + std::string(event.service) + " died at " + event.detail;
  const std::string what = message_ref(event);
  if (!what.empty()) text += " while handling " + what;
  return text;
}

std::string describe_saga(const TraceEvent& event) {
  std::string change = event.detail;
  if (const size_t pos = change.find("->"); pos != std::string::npos) {
    change.replace(pos, 2, " → ");
  }
  return std::string(event.service) + "  saga " + event.transfer + "  " + change;
}

std::string describe_messaging(const TraceEvent& event) {
  switch (event.kind) {
    case EventKind::request:
      return arrow(event) + "request " + event.transfer + ": " + event.detail + " " +
             std::to_string(event.amount);
    case EventKind::publish: return describe_publish(event);
    case EventKind::deliver: return describe_deliver(event);
    case EventKind::ack: return describe_ack(event, "ack");
    case EventKind::ack_lost: return describe_ack(event, "ack LOST on the wire,");
    case EventKind::nack:
      return describe_ack(event, "nack (requeue)") +
             (event.detail.empty() ? "" : ": " + event.detail);
    case EventKind::requeue:
      return std::string(event.service) + "  requeue " + message_ref(event) + ": " + event.detail;
    case EventKind::dead_letter:
      return "☠ DEAD-LETTERED  " + message_ref(event) + ": " + event.detail;
    case EventKind::dropped: return "✗ DROPPED  " + message_ref(event) + ": " + event.detail;
    case EventKind::confirm: return arrow(event) + "confirm " + message_ref(event);
    case EventKind::confirm_lost:
      return arrow(event) + "confirm LOST " + message_ref(event) + ": " + event.detail;
    default: return {};
  }
}

// Pauses, row locks and zombie acks: what only happens when handlers take time.
std::string describe_concurrency_event(const TraceEvent& event) {
  const std::string who(event.service);
  switch (event.kind) {
    case EventKind::paused:
      return "‖ PAUSE  " + who + " " + event.detail +
             (event.message_id.empty() ? "" : ", handling " + message_ref(event));
    case EventKind::resumed: return "▶ RESUME  " + who + " " + event.detail;
    case EventKind::lock_wait: return who + "  " + event.detail + " (" + message_ref(event) + ")";
    case EventKind::lock_granted:
      return who + "  " + event.detail + " (" + message_ref(event) + ")";
    case EventKind::ack_void:
      return arrow(event) + "ack tag " + std::to_string(event.delivery_tag) + " " +
             message_ref(event) + ": " + event.detail + " (a zombie consumer)";
    case EventKind::retry: return who + "  ↺ RETRY " + message_ref(event) + ": " + event.detail;
    case EventKind::error_queued:
      return "⚠ ERROR QUEUE  " + who + " " + message_ref(event) + ": " + event.detail;
    case EventKind::publish_nacked:
      return arrow(event) + "publish NACKED " + message_ref(event) + ": " + event.detail;
    case EventKind::redrive:
      return arrow(event) + "REDRIVE " + message_ref(event) + ": " + event.detail;
    default: return {};
  }
}

std::string describe_service_event(const TraceEvent& event) {
  const std::string who(event.service);
  switch (event.kind) {
    case EventKind::dedupe_hit: return describe_dedupe(event);
    case EventKind::dedupe_record: return who + "  " + event.detail;
    case EventKind::effect: return describe_effect(event);
    case EventKind::rejected:
      return who + "  rejected " + event.transfer + " (" + event.account + "): " + event.detail;
    case EventKind::saga: return describe_saga(event);
    case EventKind::illegal_transition:
      return who + "  state machine refused " + event.transfer + ": " + event.detail + " (" +
             event.message_id + ")";
    case EventKind::consumer_fault:
      // The world says what happens next ("...; rolled back, will nack").
      return who + "  FAULT on " + message_ref(event) + ": " + event.detail;
    case EventKind::notification: return who + "  notify " + event.transfer + ": " + event.detail;
    case EventKind::crash: return describe_crash(event);
    case EventKind::restart: return "↻ RESTART  " + who + " is back with its committed data";
    case EventKind::connection_closed:
      return who + " ✕ " + std::string(event.target) + "  connection closed: " + event.detail;
    case EventKind::index_dropped: return "✂ INDEX DROPPED  " + event.detail + " (" + who + ")";
    case EventKind::index_restored: return "⟲ INDEX RESTORE  " + event.detail + " (" + who + ")";
    case EventKind::advance: return "⇥ clock jumps " + human_duration(event.amount);
    case EventKind::cleanup:
      return who + "  cleanup deleted " + std::to_string(event.amount) + " row(s)" +
             (event.detail.empty() ? "" : ": " + event.detail);
    case EventKind::violation: return "‼ VIOLATION  " + event.detail;
    default: return describe_concurrency_event(event);
  }
}

// The colour of a whole line: loud for what a teacher wants the class to notice.
std::string_view line_style(const TraceEvent& event) {
  switch (event.kind) {
    case EventKind::deliver: return event.redelivered ? kYellow : std::string_view{};
    case EventKind::ack_lost:
    case EventKind::confirm_lost:
    case EventKind::nack:
    case EventKind::requeue:
    case EventKind::connection_closed: return kYellow;
    case EventKind::dedupe_hit: return kCyan;
    case EventKind::effect: return kBold;
    case EventKind::saga:
    case EventKind::notification: return kMagenta;
    case EventKind::crash:
    case EventKind::dead_letter:
    case EventKind::dropped:
    case EventKind::consumer_fault:
    case EventKind::illegal_transition:
    case EventKind::index_dropped: return kRed;
    case EventKind::restart:
    case EventKind::index_restored: return kBoldGreen;
    case EventKind::violation: return kInverseRed;
    case EventKind::paused:
    case EventKind::resumed:
    case EventKind::lock_wait:
    case EventKind::ack_void:
    case EventKind::retry:
    case EventKind::publish_nacked: return kYellow;
    case EventKind::error_queued: return kRed;
    case EventKind::redrive: return kCyan;
    default: return {};
  }
}

// Whether a saga change "FROM->TO" emits a command: only the edges into DEBITED
// (CreditRequested) and COMPENSATING (RefundRequested) do.
bool edge_sends_command(std::string_view change) {
  return change.ends_with("->DEBITED") || change.ends_with("->COMPENSATING");
}

constexpr std::string_view kSagaTransaction =
    "in one transaction with the saga update and its outbox row";

size_t widest_key(const std::map<std::string, int64_t>& map) {
  size_t width = 0;
  for (const auto& [key, value] : map) width = std::max(width, key.size());
  return width;
}

std::string pad_left(std::string text, size_t width) {
  if (text.size() < width) text.insert(0, width - text.size(), ' ');
  return text;
}

}  // namespace

std::string human_duration(int64_t ms) {
  std::string text = std::to_string(ms) + " ms";
  if (ms < 1000) return text;
  const int64_t seconds = ms / 1000;
  const int64_t hours = seconds / 3600;
  const int64_t minutes = (seconds % 3600) / 60;
  std::string human;
  if (hours > 0) human += std::to_string(hours) + " h ";
  if (hours > 0 || minutes > 0) human += std::to_string(minutes) + " min ";
  human += std::to_string(seconds % 60) + " s";
  return text + " (" + human + ")";
}

std::string describe_event(const TraceEvent& event) {
  if (event.kind == EventKind::step) return "step: " + event.detail;
  std::string text = describe_messaging(event);
  if (text.empty()) text = describe_service_event(event);
  INBOXSIM_ASSERT(!text.empty());
  return text;
}

namespace {

// Money in flight at the end: each transfer with a DEBIT and neither a CREDIT nor a REFUND.
// With `finished_only`, only such transfers whose saga is already final: money stuck there.
int64_t money_in_flight(const RunResult& result, bool finished_only = false) {
  std::map<std::string, std::array<int64_t, 3>> entries;  // DEBIT, CREDIT, REFUND counts
  for (const LedgerEntry& entry : result.ledger) {
    ++entries[entry.transfer][static_cast<size_t>(entry.type)];
  }
  int64_t in_flight = 0;
  for (const auto& [transfer, counts] : entries) {
    if (counts[0] == 0 || counts[1] > 0 || counts[2] > 0) continue;
    if (finished_only) {
      const auto state = result.transfers.find(transfer);
      if (state == result.transfers.end() || !is_terminal(state->second)) continue;
    }
    const auto amount = result.transfer_amounts.find(transfer);
    if (amount != result.transfer_amounts.end()) in_flight += amount->second;
  }
  return in_flight;
}

int64_t total_of(const std::map<std::string, int64_t>& balances) {
  int64_t total = 0;
  for (const auto& [account, balance] : balances) total += balance;
  return total;
}

const Violation* violation_of(const RunResult& result, Invariant invariant) {
  for (const Violation& violation : result.violations) {
    if (violation.invariant == invariant) return &violation;
  }
  return nullptr;
}

}  // namespace

bool money_right(const RunResult& result) {
  return violation_of(result, Invariant::conservation) == nullptr &&
         total_of(result.balances) + money_in_flight(result) == total_of(result.opening_balances) &&
         money_in_flight(result, true) == 0;
}

std::string money_sentence(const RunResult& result) {
  const int64_t opened = total_of(result.opening_balances);
  const int64_t balances = total_of(result.balances);
  const int64_t in_flight = money_in_flight(result);
  const int64_t difference = balances + in_flight - opened;
  std::string end = difference == 0   ? "right at the end"
                    : difference > 0 ? std::to_string(difference) + " invented by the end"
                                     : std::to_string(-difference) + " destroyed by the end";
  std::string text = "Money: ";
  // Where it first broke and how it ended can differ (destroyed first, invented by the end):
  // both are said.
  if (const Violation* broken = violation_of(result, Invariant::conservation)) {
    text += "first broke at " + std::to_string(broken->time_ms) + " ms (" + broken->detail +
            "); ";
  }
  text += end + " (balances " + std::to_string(balances) + ", in flight " +
          std::to_string(in_flight) + ", opened with " + std::to_string(opened) + ")";
  if (const int64_t stuck = money_in_flight(result, true); stuck > 0) {
    text += ", but " + std::to_string(stuck) +
            " of it is stuck in flight: debited for transfers that are already finished, and "
            "nothing will ever credit or refund it";
  }
  if (money_right(result)) return text + ".";
  // The verdict below says whether the expectations were met; a break-it story expects this.
  const bool expected = result.passed && !result.expectations.empty();
  return text + (expected ? ". This story is meant to show it: the verdict below says it broke "
                            "exactly as expected."
                          : ".");
}

std::string bank_verdict(const RunResult& result) {
  if (result.violations.empty() && money_right(result)) return "bank correct";
  std::string text = "bank broke";
  if (!result.violations.empty()) {
    const Violation* first = &result.violations.front();
    for (const Violation& violation : result.violations) {
      if (violation.time_ms < first->time_ms) first = &violation;
    }
    text += ": " + std::string(invariant_name(first->invariant)) + " at " +
            std::to_string(first->time_ms) + " ms";
    if (result.violations.size() > 1) {
      text += " (and " + std::to_string(result.violations.size() - 1) + " more)";
    }
  }
  const int64_t difference = total_of(result.balances) + money_in_flight(result) -
                             total_of(result.opening_balances);
  if (difference != 0) {
    text += (result.violations.empty() ? ": " : ", ") + std::to_string(std::abs(difference)) +
            (difference > 0 ? " invented" : " destroyed");
  } else if (const int64_t stuck = money_in_flight(result, true); stuck > 0) {
    text += (result.violations.empty() ? ": " : ", ") + std::to_string(stuck) + " stuck in flight";
  }
  return text;
}

std::string verdict_line(const RunResult& result) {
  std::string line = result.passed ? "PASS  " : "FAIL  ";
  line += result.name.empty() ? result.file : result.name;
  if (!result.title.empty()) line += ": " + result.title;
  const auto failed = std::count_if(result.expectations.begin(), result.expectations.end(),
                                    [](const ExpectationResult& e) { return !e.ok; });
  const std::string bank = bank_verdict(result);
  line += "  · " + bank;
  // A story that is meant to break the bank passes when it does: said, so a green PASS beside
  // a broken bank is not read as a bank that works.
  if (result.passed && bank != "bank correct" && !result.expectations.empty()) {
    line += ", as this story expects";
  }
  line += "  (";
  if (failed > 0) {
    line += std::to_string(failed) + " of " + std::to_string(result.expectations.size()) +
            " expectations failed, ";
  }
  line += "seed " + std::to_string(result.seed);
  if (!result.trace_hash.empty()) line += ", trace " + result.trace_hash;
  return line + ")";
}

Narrator::Narrator(std::ostream& out, NarratorOptions options) : out_(out), options_(options) {}

void Narrator::set_opening_balances(const std::map<std::string, int64_t>& balances) {
  running_balances_ = balances;
  balances_known_ = true;
}

// Everything the narration prints passes here or through printable(): the only escape
// sequences that reach the terminal are the colours added below.
std::string Narrator::paint(std::string_view text, std::string_view ansi) const {
  if (!options_.color || ansi.empty()) return printable(text);
  return "\x1b[" + std::string(ansi) + "m" + printable(text) + "\x1b[0m";
}

void Narrator::set_config(const Config& config) {
  config_ = config;
  config_known_ = true;
}

void Narrator::on_event(const TraceEvent& event) {
  if (options_.quiet) return;
  if (held_record_) print_held_line(&event);
  if (event.kind == EventKind::step) {
    print_step_header(event);
  } else {
    print_event_line(event);
  }
}

void Narrator::flush() {
  if (held_record_) print_held_line(nullptr);
}

// With relay.stable_message_id = false, a re-publication carries a new id: shown beside the id
// the same outbox row went out with first.
std::string Narrator::minted_id_line(const TraceEvent& event) {
  if (!config_known_ || config_.relay_stable_message_id) return {};
  if (event.service.rfind(participant::relay, 0) != 0) return {};
  const std::string key = std::string(event.type) + " " + event.transfer;
  const auto [first, inserted] = first_relay_ids_.emplace(key, event.message_id);
  if (inserted || first->second == event.message_id) return {};
  return "the relay minted a new id, " + event.message_id + ", for the outbox row it first "
         "published as " + first->second + ": to every inbox downstream this is a new message";
}

// processed_messages' key, spelt out where it decides the story: (id, consumer) when keyed per
// consumer, and "the message id alone" when two consumers share it.
std::string Narrator::with_context(const TraceEvent& event, std::string text) const {
  if (!config_known_ || config_.transfer_dedupe != TransferDedupe::processed_messages) return text;
  if (text.find("processed_messages: ") == std::string::npos) return text;
  const std::string id = event.message_id;
  const bool saga = event.service.rfind(participant::notifications, 0) != 0;
  std::string key = id;
  if (config_.transfer_dedupe_key == DedupeKey::message_id_and_consumer) {
    key = "(" + id + ", " + std::string(saga ? "saga" : "notifications") + ")";
  } else if (config_.transfer_notifications) {
    key = id + " (the message id alone, shared by both consumers)";
  }
  for (const std::string& before : {"duplicate key " + id, "processed_messages: " + id + " "}) {
    const size_t at = text.find(before);
    if (at == std::string::npos) continue;
    const std::string after = before.rfind("duplicate", 0) == 0
                                  ? "duplicate key " + key
                                  : "processed_messages: " + key + " ";
    text.replace(at, before.size(), after);
  }
  return text;
}

void Narrator::print_step_header(const TraceEvent& event) {
  ++step_count_;
  const std::string header = "── step " + std::to_string(step_count_) + " · " + event.detail +
                             "  (t = " + std::to_string(event.time_ms) + " ms)";
  out_ << '\n' << paint(header, kBold) << '\n';
}

void Narrator::print_event_line(const TraceEvent& event) {
  if (event.kind == EventKind::dedupe_record &&
      event.detail.find(kSagaTransaction) != std::string::npos) {
    held_record_ = event;
    return;
  }
  std::string text = with_context(event, describe_event(event));
  // With the opening balances known, an effect line also shows where the balance ends up,
  // which is what makes a double debit visible at a glance.
  if (event.kind == EventKind::effect && balances_known_) {
    running_balances_[event.account] += event.amount;
    text += "  → " + std::to_string(running_balances_[event.account]);
  }
  print_line(event, text);
  const std::string deciding = deciding_line(event);
  if (!deciding.empty()) {
    out_ << std::string(11, ' ') << paint("↳ " + deciding, kCyan) << '\n';
  }
}

void Narrator::print_line(const TraceEvent& event, const std::string& text) {
  const std::string time = pad_left(std::to_string(event.time_ms) + "ms", 9);
  out_ << paint(time, kDim) << "  " << paint(text, line_style(event)) << '\n';
}

// The service writes "inserted, in one transaction with the saga update and its outbox row"
// before it knows whether the state machine takes the event. When the next line is the state
// machine's refusal, only the row was written, and the line says so instead.
void Narrator::print_held_line(const TraceEvent* next) {
  const TraceEvent held = std::move(*held_record_);
  held_record_.reset();
  std::string text = with_context(held, describe_event(held));
  const bool same = next != nullptr && next->message_id == held.message_id;
  const size_t at = text.find(kSagaTransaction);
  if (same && next->kind == EventKind::illegal_transition) {
    text.replace(at, kSagaTransaction.size(),
                 "committed alone: the state machine refuses the event (next line), so the saga "
                 "and the outbox stay as they were");
  } else if (same && next->kind == EventKind::saga && !edge_sends_command(next->detail)) {
    text.replace(at, kSagaTransaction.size(),
                 "in one transaction with the saga update (this edge sends no command)");
  }
  print_line(held, text);
}

// The line that says why the next thing happens, where the trace only shows that it does.
std::string Narrator::deciding_line(const TraceEvent& event) {
  const std::string& id = event.message_id;
  switch (event.kind) {
    case EventKind::dedupe_record:
      if (event.detail.find("consumed still null") != std::string::npos) unconsumed_rows_[id];
      return {};
    case EventKind::effect:
    case EventKind::rejected:
    case EventKind::dedupe_hit: unconsumed_rows_.erase(id); return {};
    case EventKind::crash:
    case EventKind::consumer_fault:
      if (const auto row = unconsumed_rows_.find(id); row != unconsumed_rows_.end()) {
        row->second = event.kind == EventKind::crash ? Unconsumed::crashed : Unconsumed::faulted;
      }
      return {};
    case EventKind::deliver: {
      const auto row = unconsumed_rows_.find(id);
      if (row == unconsumed_rows_.end() || row->second == Unconsumed::pending) return {};
      const bool crashed = row->second == Unconsumed::crashed;
      row->second = Unconsumed::pending;
      if (crashed) {
        return "inbox: row (" + id +
               ", account-consumer) found, consumed null: the consumer never ran, so this "
               "delivery runs it (no business change was committed with the row)";
      }
      return "inbox: row (" + id +
             ", account-consumer) found, consumed null: its consumer faulted and rolled back, "
             "and the cleanup deletes only delivered rows, so at any age this delivery runs the "
             "consumer again";
    }
    case EventKind::publish: return minted_id_line(event);
    default: return {};
  }
}

void Narrator::print_balances(const RunResult& result) {
  out_ << paint("Balances (opening → final)", kBold) << '\n';
  const size_t width = widest_key(result.balances);
  for (const auto& [account, final_balance] : result.balances) {
    const auto opening = result.opening_balances.find(account);
    const int64_t start = opening == result.opening_balances.end() ? 0 : opening->second;
    std::string line = "  " + pad(account, width) + "  " + pad_left(std::to_string(start), 10) +
                       " → " + pad_left(std::to_string(final_balance), 10);
    if (final_balance != start) line += "  (" + signed_amount(final_balance - start) + ")";
    out_ << printable(line) << '\n';
  }
}

void Narrator::print_transfers(const RunResult& result) {
  if (result.transfers.empty()) return;
  out_ << paint("Transfers", kBold) << '\n';
  for (const auto& [id, state] : result.transfers) {
    const auto amount = result.transfer_amounts.find(id);
    std::string line = "  " + id;
    if (amount != result.transfer_amounts.end()) line += "  " + std::to_string(amount->second);
    line += "  " + std::string(saga_state_name(state));
    out_ << paint(line, is_terminal(state) ? std::string_view{} : kYellow) << '\n';
  }
}

void Narrator::print_invariants(const RunResult& result) {
  out_ << paint("Invariants", kBold) << '\n';
  for (size_t i = 0; i < kInvariantCount; ++i) {
    if (!result.invariant_applies[i]) continue;
    const auto invariant = static_cast<Invariant>(i);
    const auto broken = std::find_if(result.violations.begin(), result.violations.end(),
                                     [&](const Violation& v) { return v.invariant == invariant; });
    const std::string name(invariant_name(invariant));
    if (broken == result.violations.end()) {
      out_ << "  " << paint("held    ", kGreen) << "  " << printable(name) << '\n';
    } else {
      out_ << "  " << paint("VIOLATED", kRed) << "  " << printable(name) << ": "
           << printable(broken->detail) << "  (at " << broken->time_ms << " ms)\n";
    }
  }
}

void Narrator::print_expectations(const RunResult& result) {
  if (result.expectations.empty()) return;
  out_ << paint("Expectations", kBold) << '\n';
  for (const ExpectationResult& expectation : result.expectations) {
    out_ << "  " << (expectation.ok ? paint("ok    ", kGreen) : paint("FAILED", kRed)) << "  "
         << printable(expectation.what);
    if (!expectation.detail.empty()) out_ << ": " << printable(expectation.detail);
    out_ << '\n';
  }
}

void Narrator::summary(const RunResult& result) {
  if (held_record_) print_held_line(nullptr);
  if (!options_.quiet) {
    out_ << '\n';
    print_balances(result);
    print_transfers(result);
    print_invariants(result);
    print_expectations(result);
    const Stats& s = result.stats;
    out_ << paint("Counters", kBold) << "  published " << s.published << ", deliveries "
         << s.deliveries << " (" << s.redeliveries << " redelivered), acks " << s.acks
         << ", dedupe hits " << s.dedupe_hits << ", effects " << s.effects << ", crashes "
         << s.crashes << ", dead-lettered " << s.dead_lettered << ", to error queues "
         << s.error_queued << (s.dropped > 0 ? ", dropped " + std::to_string(s.dropped) : "")
         << '\n';
    for (const auto& [queue, count] : result.dead_letter_queues) {
      out_ << "Queue     " << printable(queue) << ": " << count << " moved in over the run\n";
    }
    for (const std::string& waiting : result.parked) {
      out_ << "          still waiting in " << printable(waiting) << '\n';
    }
    if (options_.legend) {
      out_ << paint("Legend", kBold) << '\n' << printable(legend_text("  ", &result.invariant_applies));
    }
    if (!result.lesson.empty()) {
      out_ << '\n' << paint("Lesson: ", kBold) << printable(result.lesson) << '\n';
    }
    out_ << '\n' << paint(money_sentence(result), money_right(result) ? kBold : kRed) << '\n';
  }
  out_ << paint(verdict_line(result), result.passed ? kBoldGreen : kInverseRed) << '\n';
  out_.flush();
}

}  // namespace inboxsim

namespace inboxsim {

// ---- --show-rows: the rows under each event ---------------------------------------------------

namespace {

// A remove names the row by its first few values: enough to recognise it.
constexpr size_t kRemovedValuesShown = 4;

std::string cell_text(const Cell& cell) { return cell ? *cell : "NULL"; }

std::string row_change_line(const TableColumns& table, const RowChange& change) {
  std::string text = table.source + "." + table.table + " #" + std::to_string(change.key) + " ";
  const size_t columns = table.columns.size();
  if (change.op == RowOp::insert) {
    text = "+ " + text;
    for (size_t i = 0; i < columns && i < change.after.size(); ++i) {
      if (change.after[i]) text += " " + table.columns[i] + "=" + *change.after[i];
    }
  } else if (change.op == RowOp::update) {
    text = "~ " + text;
    std::string sep = " ";
    for (size_t i = 0; i < columns && i < change.after.size() && i < change.before.size(); ++i) {
      if (change.before[i] == change.after[i]) continue;
      text += sep + table.columns[i] + ": " + cell_text(change.before[i]) + " → " +
              cell_text(change.after[i]);
      sep = ", ";
    }
  } else {
    text = "- " + text + " deleted (";
    size_t shown = 0;
    for (size_t i = 0; i < columns && i < change.before.size() && shown < kRemovedValuesShown;
         ++i) {
      if (!change.before[i]) continue;
      text += (shown++ > 0 ? " " : "") + table.columns[i] + "=" + *change.before[i];
    }
    text += ")";
  }
  return text;
}

}  // namespace

std::vector<std::string> describe_row_changes(const RowHistory& history,
                                              const std::vector<RowChange>& changes) {
  std::vector<std::string> lines;
  for (const RowChange& change : changes) {
    INBOXSIM_ASSERT(change.table < history.tables.size());
    lines.push_back(row_change_line(history.tables[change.table], change));
  }
  return lines;
}

void Narrator::on_row_changes(const RowHistory& history, const std::vector<RowChange>& changes) {
  if (options_.quiet) return;
  for (const std::string& line : describe_row_changes(history, changes)) {
    out_ << std::string(11, ' ') << paint(line, kCyan) << '\n';
  }
}

}  // namespace inboxsim
