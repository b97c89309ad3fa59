#include "report/narrate.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <ostream>
#include <string_view>

#include "domain/dedupe_words.h"
#include "domain/participants.h"
#include "kernel/assert.h"
#include "kernel/text.h"
#include "report/legend.h"
#include "report/narrate_internal.h"

namespace inboxsim {

namespace {

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
    case EventKind::index_dropped:
    case EventKind::term: return kRed;
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

// Whether a saga change sends a command, by the state it enters (the saga's graph,
// domain/saga.h).
bool edge_sends_command(const TraceEvent& change) {
  const std::optional<SagaState> to = parse_saga_state(change.saga_to);
  return to && saga_sends_entering(*to).has_value();
}

size_t widest_key(const std::map<std::string, int64_t>& map) {
  size_t width = 0;
  for (const auto& [key, value] : map) width = std::max(width, key.size());
  return width;
}

std::string pad_left(std::string text, size_t width) {
  if (text.size() < width) text.insert(0, width - text.size(), ' ');
  return text;
}

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

}  // namespace

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
  return "the relay minted a new id, " + event.message_id +
         ", for the outbox row it first "
         "published as " +
         first->second + ": to every inbox downstream this is a new message";
}

// processed_messages' key, spelt out where it decides the story: (id, consumer) when keyed per
// consumer, and "the message id alone" when two consumers share it; elsewhere the message id.
std::string Narrator::processed_key(const TraceEvent& event) const {
  const std::string& id = event.message_id;
  if (!config_known_ || config_.transfer_dedupe != TransferDedupe::processed_messages) return id;
  const bool saga = event.service.rfind(participant::notifications, 0) != 0;
  if (config_.transfer_dedupe_key == DedupeKey::message_id_and_consumer) {
    return "(" + id + ", " + std::string(saga ? "saga" : "notifications") + ")";
  }
  if (config_.transfer_notifications) {
    return id + " (the message id alone, shared by both consumers)";
  }
  return id;
}

// A line about processed_messages, written from the event's typed fields (its record or its
// dedupe step) with the key spelt out; empty for any other line. `how` replaces how the record
// was committed (see rewrite_held).
std::string Narrator::processed_line(const TraceEvent& event, std::string_view how) const {
  const bool record = event.kind == EventKind::dedupe_record &&
                      (event.record == DedupeRecord::processed_with_saga ||
                       event.record == DedupeRecord::processed_with_notification ||
                       event.record == DedupeRecord::processed_alone);
  if (record) {
    if (how.empty()) how = processed_record_how(event.record);
    return std::string(event.service) + "  " + processed_inserted_words(processed_key(event), how);
  }
  if (event.kind == EventKind::dedupe_hit &&
      event.dedupe_step == DedupeStep::processed_duplicate_key) {
    return describe_dedupe(event, processed_duplicate_words(processed_key(event)));
  }
  return {};
}

std::string Narrator::line_text(const TraceEvent& event, const DeliveryNaming& naming) const {
  std::string text = processed_line(event, {});
  return text.empty() ? describe_on_channel(event, naming) : text;
}

Narrator::Entry Narrator::make_entry(const TraceEvent& event) {
  Entry entry;
  entry.number = event_count_;
  entry.event = event;
  if (event.kind == EventKind::step) {
    entry.signature = "step " + std::to_string(entry.number);  // a step never repeats
    return entry;
  }
  const DeliveryNaming naming{
      channel_of(event), config_known_ && config_.broker_kind == BrokerKind::jetstream};
  std::string text = line_text(event, naming);
  // Two repeats are identical when they differ only in when they happen, their tag and the
  // broker's delivery count.
  TraceEvent shape = event;
  shape.time_ms = 0;
  shape.delivery_tag = 0;
  shape.delivery_count = 0;
  std::string signature = line_text(shape, naming);
  // With the opening balances known, an effect line also shows where the balance ends up,
  // which is what makes a double debit visible at a glance (and a repeated one not identical).
  if (event.kind == EventKind::effect && balances_known_) {
    running_balances_[event.account] += event.amount;
    const std::string balance = "  → " + std::to_string(running_balances_[event.account]);
    text += balance;
    signature += balance;
  }
  entry.held = event.kind == EventKind::dedupe_record &&
               event.record == DedupeRecord::processed_with_saga;
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

// The service records "inserted, in one transaction with the saga update and its outbox row"
// before it knows whether the state machine takes the event. When the next line is the state
// machine's refusal, only the row was written, and the line says so instead.
void Narrator::rewrite_held(Entry& held, const TraceEvent& next) {
  held.held = false;
  if (next.message_id != held.event.message_id) return;
  std::string_view how;
  if (next.kind == EventKind::illegal_transition) {
    how =
        ", committed alone: the state machine refuses the event (next line), so the saga and the "
        "outbox stay as they were";
  } else if (next.kind == EventKind::saga && !edge_sends_command(next)) {
    how = ", in one transaction with the saga update (this edge sends no command)";
  }
  held.text = processed_line(held.event, how);
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
      if (event.record == DedupeRecord::inbox_row_inserted) unconsumed_rows_[id];
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
      out_ << paint("Legend", kBold) << '\n'
           << printable(legend_text("  ", &result.invariant_applies));
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
