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

// "2nd", "3rd", "11th", "21st".
std::string ordinal(int64_t number) {
  const int64_t last_two = number % 100;
  const int64_t last = number % 10;
  const char* suffix = (last_two >= 11 && last_two <= 13) ? "th"
                       : last == 1                      ? "st"
                       : last == 2                      ? "nd"
                       : last == 3                      ? "rd"
                                                        : "th";
  return std::to_string(number) + suffix;
}

// A delivery tag counts from 1 on each channel, so it is said with its channel: "tag 1 on
// account-service#2's channel", and "… on transfer-service's 2nd channel" once the consumer's
// connection closed and it opened another (`channel` counts them from 1).
std::string tag_text(int64_t tag, std::string_view consumer, int64_t channel) {
  std::string text = "tag " + std::to_string(tag) + " on " + std::string(consumer) + "'s ";
  if (channel > 1) text += ordinal(channel) + " ";
  return text + "channel";
}

std::string describe_deliver(const TraceEvent& event, int64_t channel) {
  std::string text = arrow(event) + "deliver " + std::string(event.type) + " " + event.transfer +
                     " (" + event.message_id + ", " +
                     tag_text(event.delivery_tag, event.target, channel) + ")";
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

// An ack that came back on a closed channel names no tag (the world says which in its detail).
std::string describe_ack(const TraceEvent& event, std::string_view verb, int64_t channel) {
  std::string text = arrow(event) + std::string(verb);
  if (event.delivery_tag > 0) text += " " + tag_text(event.delivery_tag, event.service, channel);
  return text + "  " + message_ref(event);
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

std::string describe_messaging(const TraceEvent& event, int64_t channel) {
  switch (event.kind) {
    case EventKind::request:
      return arrow(event) + "request " + event.transfer + ": " + event.detail + " " +
             std::to_string(event.amount);
    case EventKind::publish: return describe_publish(event);
    case EventKind::deliver: return describe_deliver(event, channel);
    case EventKind::ack: return describe_ack(event, "ack", channel);
    case EventKind::ack_lost: return describe_ack(event, "ack LOST on the wire,", channel);
    case EventKind::nack:
      return describe_ack(event, "nack (requeue)", channel) +
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
std::string describe_concurrency_event(const TraceEvent& event, int64_t channel) {
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
      return arrow(event) + "ack " + tag_text(event.delivery_tag, event.service, channel) + " " +
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

std::string describe_service_event(const TraceEvent& event, int64_t channel) {
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
    case EventKind::recovered: return "⟳ RECOVERED  " + who + " " + event.detail;
    // The run goes on through the advance: what falls due inside it is printed after this line,
    // at its own moment.
    case EventKind::advance:
      return "⇥ clock runs on " + human_duration(event.amount) + ", until " +
             human_duration(event.time_ms + event.amount) + "; what falls due meanwhile follows";
    case EventKind::cleanup:
      return who + "  cleanup deleted " + std::to_string(event.amount) + " row(s)" +
             (event.detail.empty() ? "" : ": " + event.detail);
    case EventKind::violation: return "‼ VIOLATION  " + event.detail;
    default: return describe_concurrency_event(event, channel);
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
    case EventKind::redrive:
    case EventKind::recovered: return kCyan;
    default: return {};
  }
}

// Whether a saga change "FROM->TO" sends a command (the saga's graph, domain/saga.h).
bool edge_sends_command(std::string_view change) {
  const size_t arrow = change.find("->");
  if (arrow == std::string_view::npos) return false;
  const std::optional<SagaState> to = parse_saga_state(change.substr(arrow + 2));
  return to && saga_sends_entering(*to).has_value();
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

// The layout of an event line: its moment, right-aligned, then its number, then the sentence.
// Row and ↳ lines are indented to the sentence.
constexpr size_t kTimeWidth = 9;    // "0.019 s", "12.345 s"; longer moments push the line
constexpr size_t kNumberWidth = 5;  // "#4005"
constexpr size_t kIndentWidth = kTimeWidth + 2 + kNumberWidth + 2;

// The most lines one commit records (a MassTransit pass, a saga change with its command): a
// longer group is printed as it stands rather than held.
constexpr size_t kGroupEntriesMax = 16;
// The longest block of lines the focus narration recognises as repeating (scenario 41's loop
// is four: deliver, fault, nack, requeue).
constexpr size_t kRepeatLinesMax = 8;

// The lines one commit records, in the order World::committed records them: the commit's rows
// arrive with the first, and a later one may be the line that names their table.
bool recorded_by_a_commit(EventKind kind) {
  switch (kind) {
    case EventKind::dedupe_record:
    case EventKind::dedupe_hit:
    case EventKind::effect:
    case EventKind::rejected:
    case EventKind::saga:
    case EventKind::illegal_transition:
    case EventKind::notification: return true;
    default: return false;
  }
}

// Whether `next` comes from the same commit as `last`: both lines a commit records, by the same
// participant at the same moment.
bool same_commit(const TraceEvent& last, const TraceEvent& next) {
  return last.time_ms == next.time_ms && last.service == next.service &&
         recorded_by_a_commit(last.kind) && recorded_by_a_commit(next.kind);
}

// The database a participant writes: the relay and the notifications consumer are parts of
// transfer-service.
std::string_view database_of(std::string_view participant) {
  const std::string_view base = participant_base(participant);
  if (base == participant::relay || base == participant::notifications) {
    return participant::transfer_service;
  }
  return base;
}

// Whether an event's line names a table of `source`: the tables its kind of line is about.
bool names_table(const TraceEvent& event, std::string_view source, std::string_view table) {
  if (database_of(event.service) != source) return false;
  switch (event.kind) {
    case EventKind::dedupe_record:
    case EventKind::dedupe_hit:
      // MassTransit's "marked consumed, in one transaction with its effect and outbox rows".
      return table == "inbox_state" || table == "inbox_documents" ||
             table == "processed_messages" ||
             (source == participant::account_service && table == "outbox");
    case EventKind::effect:
      return table == "ledger" || table == "accounts" || table == "account_events";
    case EventKind::rejected: return table == "rejected_debits";
    case EventKind::saga: return table == "sagas" || table == "outbox";  // the saga's command
    case EventKind::notification: return table == "notifications";
    default: return false;
  }
}

}  // namespace

std::string human_duration(int64_t ms) {
  if (ms < 0) return "-" + human_duration(-ms);
  constexpr int64_t kSecondMs = 1000;
  constexpr int64_t kMinuteMs = 60 * kSecondMs;
  constexpr int64_t kHourMs = 60 * kMinuteMs;
  constexpr int64_t kDayMs = 24 * kHourMs;
  const std::array<std::pair<int64_t, std::string_view>, 3> units = {
      {{kDayMs, " d"}, {kHourMs, " h"}, {kMinuteMs, " min"}}};
  std::string text;
  int64_t rest = ms;
  for (const auto& [unit_ms, name] : units) {
    // A unit is said once a larger one was, so "2 h 0 min 0.016 s" keeps its zero minutes.
    if (rest < unit_ms && text.empty()) continue;
    if (rest == 0) return text;  // trailing zero units are left out: "2 h", "3 d"
    text += (text.empty() ? "" : " ") + std::to_string(rest / unit_ms) + std::string(name);
    rest %= unit_ms;
  }
  if (rest == 0 && !text.empty()) return text;
  std::string seconds = std::to_string(rest / kSecondMs);
  if (rest % kSecondMs != 0 || text.empty()) {
    const std::string millis = std::to_string(rest % kSecondMs);
    seconds += "." + std::string(3 - millis.size(), '0') + millis;
  }
  if (ms == 0) seconds = "0";
  return text + (text.empty() ? "" : " ") + seconds + " s";
}

namespace {

// The sentence of an event whose consumer is on its `channel`-th channel.
std::string describe_on_channel(const TraceEvent& event, int64_t channel) {
  if (event.kind == EventKind::step) return "step: " + event.detail;
  std::string text = describe_messaging(event, channel);
  if (text.empty()) text = describe_service_event(event, channel);
  INBOXSIM_ASSERT(!text.empty());
  return text;
}

}  // namespace

std::string describe_event(const TraceEvent& event) { return describe_on_channel(event, 1); }

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
    text += "first broke at " + human_duration(broken->time_ms) + " (" + broken->detail + "); ";
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
            human_duration(first->time_ms);
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
  why_.set_config(config);
}

void Narrator::on_event(const TraceEvent& event) {
  ++event_count_;
  if (options_.quiet) return;
  Entry entry = make_entry(event);
  last_printed_ = false;
  if (!group_.empty()) {
    if (group_.back().held) rewrite_held(group_.back(), event);
    const bool same = same_commit(group_.back().event, event);
    rehome_rows(event, same, entry);
    // A commit records a bounded number of lines; a longer group is printed as it stands.
    if (!same || group_.size() >= kGroupEntriesMax) emit_group();
  }
  group_.push_back(std::move(entry));
}

void Narrator::flush() {
  if (options_.quiet) return;
  emit_group();
  if (period_ > 0) end_repeats();
  last_printed_ = true;
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

Narrator::Entry Narrator::make_entry(const TraceEvent& event) {
  Entry entry;
  entry.number = event_count_;
  entry.event = event;
  if (event.kind == EventKind::step) {
    entry.signature = "step " + std::to_string(entry.number);  // a step never repeats
    return entry;
  }
  const int64_t channel = channel_of(event);
  std::string text = with_context(event, describe_on_channel(event, channel));
  // Two repeats are identical when they differ only in when they happen, their tag and the
  // broker's delivery count.
  TraceEvent shape = event;
  shape.time_ms = 0;
  shape.delivery_tag = 0;
  shape.delivery_count = 0;
  std::string signature = with_context(shape, describe_on_channel(shape, channel));
  // With the opening balances known, an effect line also shows where the balance ends up,
  // which is what makes a double debit visible at a glance (and a repeated one not identical).
  if (event.kind == EventKind::effect && balances_known_) {
    running_balances_[event.account] += event.amount;
    const std::string balance = "  → " + std::to_string(running_balances_[event.account]);
    text += balance;
    signature += balance;
  }
  entry.held = event.kind == EventKind::dedupe_record &&
               event.detail.find(kSagaTransaction) != std::string::npos;
  const std::string why = why_.line(event, entry.number, running_balances_, balances_known_);
  if (!entry.held) entry.deciding = deciding_line(event);
  if (entry.deciding.empty()) entry.deciding = why;
  text += sent_after(event);
  track_delivery(event);
  entry.text = std::move(text);
  entry.signature =
      std::string(event_kind_name(event.kind)) + "|" + signature + "|" + entry.deciding;
  return entry;
}

// The service writes "inserted, in one transaction with the saga update and its outbox row"
// before it knows whether the state machine takes the event. When the next line is the state
// machine's refusal, only the row was written, and the line says so instead.
void Narrator::rewrite_held(Entry& held, const TraceEvent& next) {
  held.held = false;
  if (next.message_id != held.event.message_id) return;
  const size_t at = held.text.find(kSagaTransaction);
  INBOXSIM_ASSERT(at != std::string::npos);
  if (next.kind == EventKind::illegal_transition) {
    held.text.replace(at, kSagaTransaction.size(),
                      "committed alone: the state machine refuses the event (next line), so the "
                      "saga and the outbox stay as they were");
  } else if (next.kind == EventKind::saga && !edge_sends_command(next.detail)) {
    held.text.replace(at, kSagaTransaction.size(),
                      "in one transaction with the saga update (this edge sends no command)");
  }
  held.signature = std::string(event_kind_name(held.event.kind)) + "|" + held.text;
}

// Rows wait for the line that names their table: a commit's rows under the later line of the
// same commit that names it, a queue row under the delivery of its message that follows.
void Narrator::rehome_rows(const TraceEvent& next, bool same, Entry& next_entry) {
  std::vector<PendingRow> waiting;
  for (PendingRow& row : pending_rows_) {
    const bool queue = row.source == participant::broker;
    const bool named = queue ? next.kind == EventKind::deliver &&
                                   row.message_id == next.message_id && row.consumer == next.target
                             : same && names_table(next, row.source, row.table);
    if (named) {
      next_entry.rows.emplace_back(row.order, std::move(row.line));
    } else if (queue || !same) {
      group_[row.entry].rows.emplace_back(row.order, std::move(row.line));
    } else {
      waiting.push_back(std::move(row));
    }
  }
  pending_rows_ = std::move(waiting);
}

void Narrator::emit_group() {
  for (PendingRow& row : pending_rows_) {
    group_[row.entry].rows.emplace_back(row.order, std::move(row.line));
  }
  pending_rows_.clear();
  std::vector<Entry> group = std::move(group_);
  group_.clear();
  for (Entry& entry : group) {
    std::sort(entry.rows.begin(), entry.rows.end());
    emit(std::move(entry));
  }
}

namespace {

// The shortest block at the end of `recent` that repeats the block before it, or 0.
size_t repeating_period(const std::vector<std::string>& recent) {
  for (size_t period = 1; period <= kRepeatLinesMax && 2 * period <= recent.size(); ++period) {
    const auto block = recent.end() - static_cast<std::ptrdiff_t>(period);
    if (std::equal(block - static_cast<std::ptrdiff_t>(period), block, block)) return period;
  }
  return 0;
}

}  // namespace

// Prints an entry, or collapses it when it repeats the block of lines shown twice just before.
void Narrator::emit(Entry entry) {
  if (options_.verbose) {
    print_entry(entry);
    return;
  }
  if (period_ > 0) {
    if (entry.signature == recent_[recent_.size() - period_]) {
      collapse(std::move(entry));
      return;
    }
    end_repeats();
  }
  recent_.push_back(entry.signature);
  if (recent_.size() > 2 * kRepeatLinesMax) recent_.erase(recent_.begin());
  print_entry(entry);
  period_ = repeating_period(recent_);
}

void Narrator::collapse(Entry entry) {
  if (collapsed_count_ == 0) {
    collapsed_first_ = entry.number;
    collapsed_first_ms_ = entry.event.time_ms;
    collapsed_what_.clear();
  }
  ++collapsed_count_;
  // The first round says what repeats: a delivery of one message, or lines.
  if (collapsed_count_ <= static_cast<int64_t>(period_) && entry.event.kind == EventKind::deliver) {
    collapsed_what_ = std::string(entry.event.redelivered ? "redeliveries" : "deliveries") +
                      " of " + entry.event.message_id;
  }
  recent_.push_back(entry.signature);
  if (recent_.size() > 2 * kRepeatLinesMax) recent_.erase(recent_.begin());
  const auto period = static_cast<int64_t>(period_);
  if (collapsed_count_ % period == 0) {
    collapsed_last_ = entry.number;
    collapsed_last_ms_ = entry.event.time_ms;
  }
  collapsed_.push_back(std::move(entry));
  // Two rounds collapsed: the summary line will replace them; only an unfinished round is kept
  // to be printed back when the repeats end.
  if (collapsed_count_ >= 2 * period && collapsed_count_ % period == 0) collapsed_.clear();
}

// The repeats ended (a different line, a pause, the end): one line says how many rounds were
// collapsed, then the unfinished round prints as it is. One round alone is printed back.
void Narrator::end_repeats() {
  const auto period = static_cast<int64_t>(period_);
  period_ = 0;
  if (collapsed_count_ >= 2 * period) {
    const int64_t rounds = collapsed_count_ / period;
    const std::string what =
        collapsed_what_.empty()
            ? "repeats of the " + std::to_string(period) + " lines above"
            : collapsed_what_ + (period > 1 ? " (" + std::to_string(period) + " lines each)" : "");
    const std::string line = "… " + std::to_string(rounds) + " more identical " + what + ": #" +
                             std::to_string(collapsed_first_) + " to #" +
                             std::to_string(collapsed_last_) + ", " +
                             human_duration(collapsed_first_ms_) + " to " +
                             human_duration(collapsed_last_ms_) + " (--verbose prints them)";
    out_ << std::string(kIndentWidth, ' ') << paint(line, kMagenta) << '\n';
  }
  std::vector<Entry> rest = std::move(collapsed_);
  collapsed_.clear();
  collapsed_count_ = 0;
  recent_.clear();
  for (const Entry& entry : rest) print_entry(entry);
}

void Narrator::print_entry(const Entry& entry) {
  if (entry.event.kind == EventKind::step) {
    print_step_header(entry);
  } else {
    const std::string time = pad_left(human_duration(entry.event.time_ms), kTimeWidth);
    const std::string number = pad("#" + std::to_string(entry.number), kNumberWidth);
    out_ << paint(time, kDim) << "  " << paint(number, kDim) << "  "
         << paint(entry.text, line_style(entry.event)) << '\n';
    if (!entry.deciding.empty()) {
      out_ << std::string(kIndentWidth, ' ') << paint("↳ " + entry.deciding, kCyan) << '\n';
    }
  }
  for (const auto& [order, line] : entry.rows) {
    out_ << std::string(kIndentWidth, ' ') << paint(line, kCyan) << '\n';
  }
}

void Narrator::set_steps(const std::vector<Step>& steps) { steps_ = steps; }

// A step with a duration says it in the narration's format; the others as the trace says them.
std::string Narrator::step_text(const TraceEvent& event) const {
  if (step_count_ < 1 || static_cast<size_t>(step_count_) > steps_.size()) return event.detail;
  const Step& step = steps_[static_cast<size_t>(step_count_ - 1)];
  if (step.kind == StepKind::advance) return "advance " + human_duration(step.ms);
  if (step.kind == StepKind::run && !step.until_quiescent) {
    return "run for " + human_duration(step.ms);
  }
  return event.detail;
}

void Narrator::print_step_header(const Entry& entry) {
  ++step_count_;
  const std::string header = "── step " + std::to_string(step_count_) + " · " +
                             step_text(entry.event) + "  (#" + std::to_string(entry.number) +
                             ", t = " + human_duration(entry.event.time_ms) + ")";
  out_ << '\n' << paint(header, kBold) << '\n';
}

// The channel an event's delivery came on: a delivery's is its consumer's current channel, an
// ack's (nack's) the one its delivery came on.
int64_t Narrator::channel_of(const TraceEvent& event) const {
  const bool from_broker = event.kind == EventKind::deliver;
  const std::string_view consumer = from_broker ? event.target : event.service;
  if (!from_broker && event.delivery_tag > 0) {
    const auto open =
        deliveries_.find({std::string(consumer), event.message_id, event.delivery_tag});
    if (open != deliveries_.end()) return open->second.channel;
  }
  const auto found = channels_.find(consumer);
  return found == channels_.end() ? 1 : found->second;
}

// An ack is recorded when it reaches the broker, after the wire; other lines may come between
// the handler's last line and it. Then the ack line says when it was sent.
std::string Narrator::sent_after(const TraceEvent& event) const {
  if (event.kind != EventKind::ack) return {};
  const auto open =
      deliveries_.find({std::string(event.service), event.message_id, event.delivery_tag});
  if (open == deliveries_.end() || open->second.last_number >= event_count_ - 1) return {};
  return "  (sent after #" + std::to_string(open->second.last_number) + " at " +
         human_duration(open->second.last_ms) + "; it reaches the broker now)";
}

void Narrator::track_delivery(const TraceEvent& event) {
  switch (event.kind) {
    case EventKind::deliver: {
      const std::string consumer(event.target);
      const auto channel = channels_.find(consumer);
      deliveries_[{consumer, event.message_id, event.delivery_tag}] = OpenDelivery{
          channel == channels_.end() ? 1 : channel->second, event_count_, event.time_ms};
      return;
    }
    case EventKind::ack:
    case EventKind::ack_lost:
    case EventKind::ack_void:
    case EventKind::nack:
      deliveries_.erase({std::string(event.service), event.message_id, event.delivery_tag});
      return;
    case EventKind::connection_closed: {
      const std::string consumer(event.service);
      // (No structured binding: clang 14 cannot capture one in the lambda below.)
      const int64_t now = ++channels_.emplace(consumer, 1).first->second;
      // What is still open on a channel before the one that just closed can never be settled
      // (a zombie acks on the one that closed): forgotten, so the map stays small.
      std::erase_if(deliveries_, [&](const auto& open) {
        return std::get<0>(open.first) == consumer && open.second.channel < now - 1;
      });
      return;
    }
    default: break;
  }
  if (event.message_id.empty()) return;
  // The consumer's own lines about a delivery it holds: the last one is when its ack leaves.
  const std::string consumer(event.service);
  for (auto open = deliveries_.lower_bound({consumer, event.message_id, 0});
       open != deliveries_.end() && std::get<0>(open->first) == consumer &&
       std::get<1>(open->first) == event.message_id;
       ++open) {
    open->second.last_number = event_count_;
    open->second.last_ms = event.time_ms;
  }
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
           << printable(broken->detail) << "  (at " << human_duration(broken->time_ms) << ")\n";
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
  if (!options_.quiet) {
    flush();
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

// The value of a named column in a changed row (its new value, or its last), or "".
std::string column_value(const TableColumns& table, const RowChange& change,
                         std::string_view column) {
  const std::vector<Cell>& row = change.after.empty() ? change.before : change.after;
  for (size_t i = 0; i < table.columns.size() && i < row.size(); ++i) {
    if (table.columns[i] == column) return row[i].value_or("");
  }
  return {};
}

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
  for (const RowChange& change : changes) {
    INBOXSIM_ASSERT(change.table < history.tables.size());
    const TableColumns& table = history.tables[change.table];
    std::string line = row_change_line(table, change);
    if (group_.empty()) {
      // The opening rows, or the rows of an event already on the screen (after a pause).
      if (event_count_ == 0 || last_printed_) {
        out_ << std::string(kIndentWidth, ' ') << paint(line, kCyan) << '\n';
      }
      continue;
    }
    const size_t order = rows_seen_++;
    Entry& attributed = group_.back();
    if (table.source != participant::broker &&
        names_table(attributed.event, table.source, table.table)) {
      attributed.rows.emplace_back(order, std::move(line));
      continue;
    }
    pending_rows_.push_back(PendingRow{order, group_.size() - 1, std::move(line), table.source,
                                       table.table, column_value(table, change, "message_id"),
                                       column_value(table, change, "consumer")});
  }
}

}  // namespace inboxsim
