// MassTransit's Entity Framework inbox and consumer outbox (account.inbox = masstransit): an
// inbox_state row per (message_id, consumer_id), a loop of passes each its own transaction, the
// outbox rows the passes send while the row lock is held, and the InboxCleanupService.
#include <algorithm>
#include <array>

#include "kernel/assert.h"
#include "services/inbox/inbox.h"
#include "services/sql.h"

namespace inboxsim {

namespace {

// MassTransit's inbox loop runs a pass per transaction: insert, consume, one pass per outbox
// message sent, delivered, remove (five for a command with its one reply). A pass that finds its
// row gone (cleanup deleted it meanwhile) starts over: the bound leaves room for that.
constexpr int64_t kInboxPassesMax = 16;
// MassTransit's send transport retry (HostConfigurationRetryExtensions.Retry with the
// SendTransportRetryPolicy of RabbitMqHostConfiguration.cs, MassTransit v8.5.3): a 1 s breather
// after a failed send, then the policy's interval, Exponential(min 3 s, max 30 s, delta 3 s):
// min + 2^i * delta, capped at max (the delta's random draw at its mean, and no jitter); the
// consumer outbox cancels the send after MessageDeliveryTimeout = 30 s
// (OutboxConsumePipeSpecificationObserver.cs, OutboxMessagePipe.cs).
constexpr int64_t kSendBreatherMs = 1000;
constexpr std::array<int64_t, 5> kSendRetryIntervalsMs = {6000, 9000, 15000, 27000, 30000};
constexpr int64_t kMessageDeliveryTimeoutMs = 30000;
// InboxCleanupServiceOptions.QueryMessageLimit: the inbox rows one cleanup DELETE removes at
// most (MassTransit v8.5.3, Configuration/DependencyInjection/InboxCleanupServiceOptions.cs).
constexpr int64_t kCleanupQueryMessageLimit = 100;
// The step that starts every pass, and what a pass does with the row its locking select returns.
constexpr std::string_view kFindRow = "find the inbox row (SELECT ... FOR UPDATE)";
constexpr std::string_view kConsumePlan = "consume (the consumer runs), commit";
constexpr std::string_view kSendPlan =
    "send the next outbox message (none left: set delivered, commit)";
constexpr std::string_view kRemovePlan = "remove the outbox rows, commit, ack";

std::string inbox_lock_key(const Message& message) {
  return "inbox_state (" + message.message_id + ", " + std::string(kAccountConsumerId) + ")";
}

// Counts the outbox rows not yet sent. A MassTransit outbox row is written with its inbox row's
// `consumed` and sent by a send pass, which saves its sequence number as the inbox row's
// `last_sequence_number` (the outbox row itself is not marked); a pass of its own then sets
// `delivered`, and pass 5 removes the rows. When pass 5 never ran (the instance died after the
// delivered pass, and the redelivery was faulted into the error queue before it got there) the
// rows stay. With MassTransit 8.2 (OutboxMessage has no key to InboxState) the cleanup then
// removes the delivered inbox row after the window, and a later delivery of the same message
// starts a new inbox row that is not consumed; since 8.3 the foreign key refuses the cleanup's
// delete, and the row stays delivered. Either way the rows were sent. So a MassTransit row is
// unsent while its message has a consumed inbox row that is not delivered and whose
// last_sequence_number is below the row's (a send pass is still to come, and will send it).
constexpr const char* kUndeliveredSql =
    "SELECT COUNT(*) FROM outbox o WHERE o.delivered_ms IS NULL AND EXISTS"
    " (SELECT 1 FROM inbox_state i WHERE i.message_id = o.inbox_message_id AND"
    " i.consumed_ms IS NOT NULL AND i.delivered_ms IS NULL AND"
    " o.seq > COALESCE(i.last_sequence_number, 0)) AND NOT EXISTS (SELECT 1"
    " FROM inbox_state i WHERE i.message_id = o.inbox_message_id AND i.delivered_ms IS"
    " NOT NULL)";

class MassTransitInbox final : public AccountInboxMechanism {
 public:
  explicit MassTransitInbox(AccountCore& core)
      : core_(core),
        host_(core.host()),
        config_(core.config()),
        statements_storage_(core.connection()) {}

  Task<Outcome> handle(MessagePtr message) override;
  CleanupCounts cleanup(int64_t as_of_ms) override;
  int64_t undelivered_outbox_rows() override;

 private:
  // A message's inbox_state row as a pass's locking select found it.
  struct InboxRow {
    int64_t row = 0;
    bool consumed = false;
    bool delivered = false;
    int64_t last_sequence_number = 0;  // the last outbox message sent (0: none yet)
    int64_t receive_count = 0;         // every committed pass adds one: the row's version
  };

  struct Statements {
    explicit Statements(Connection& db)
        : outbox_for_inbox(db, std::string("SELECT ") + AccountCore::kOutboxColumns +
                                   " FROM outbox WHERE inbox_message_id = ? AND seq > ? ORDER BY"
                                   " seq LIMIT 2"),
          outbox_remove_inbox(db, "DELETE FROM outbox WHERE inbox_message_id = ?"),
          outbox_undelivered(db, kUndeliveredSql),
          inbox_lookup(db,
                       "SELECT id, consumed_ms IS NOT NULL, delivered_ms IS NOT NULL,"
                       " COALESCE(last_sequence_number, 0), receive_count FROM inbox_state"
                       " WHERE message_id = ? AND consumer_id = ? ORDER BY id LIMIT 2"),
          inbox_insert(db,
                       "INSERT INTO inbox_state (message_id, consumer_id, received_ms,"
                       " receive_count) VALUES (?, ?, ?, 0)"),
          inbox_bump(db, "UPDATE inbox_state SET receive_count = receive_count + 1 WHERE id = ?"),
          inbox_consumed(db, "UPDATE inbox_state SET consumed_ms = ? WHERE id = ?"),
          inbox_sent(db, "UPDATE inbox_state SET last_sequence_number = ? WHERE id = ?"),
          inbox_delivered(db, "UPDATE inbox_state SET delivered_ms = ? WHERE id = ?"),
          inbox_cleanup(db, "DELETE FROM inbox_state WHERE delivered_ms < ?"),
          inbox_cleanup_blocked(
              db,
              "SELECT b.message_id, (SELECT COUNT(*) FROM inbox_state e WHERE e.delivered_ms < ?1"
              "  AND (e.delivered_ms < b.delivered_ms OR (e.delivered_ms = b.delivered_ms AND"
              "  e.id < b.id))) FROM inbox_state b WHERE b.delivered_ms < ?1 AND EXISTS (SELECT 1"
              "  FROM outbox o WHERE o.inbox_message_id = b.message_id)"
              " ORDER BY b.delivered_ms, b.id LIMIT 1"),
          inbox_cleanup_oldest(db,
                               "DELETE FROM inbox_state WHERE id IN (SELECT id FROM inbox_state"
                               " WHERE delivered_ms < ?1 ORDER BY delivered_ms, id LIMIT ?2)") {}

    LazyStatement outbox_for_inbox;
    LazyStatement outbox_remove_inbox;
    LazyStatement outbox_undelivered;
    LazyStatement inbox_lookup;
    LazyStatement inbox_insert;
    LazyStatement inbox_bump;
    LazyStatement inbox_consumed;
    LazyStatement inbox_sent;
    LazyStatement inbox_delivered;
    LazyStatement inbox_cleanup;
    LazyStatement inbox_cleanup_blocked;
    LazyStatement inbox_cleanup_oldest;
  };

  // What one publish of a send pass decided: confirmed, or wait `wait_ms` (a breather and an
  // interval, or what is left of MessageDeliveryTimeout) and then publish again or, when
  // `cancelled`, fault.
  struct SendAttempt {
    bool confirmed = false;
    bool cancelled = false;
    int64_t wait_ms = 0;
    uint64_t resume = 0;  // the digest of the frame while waiting, for the explorer
    std::string next;     // what the handler does after the wait
  };

  uint64_t frame_digest(bool reported, const std::optional<InboxRow>& row, int64_t pass,
                        int64_t sequence = 0) const;
  std::string pass_label(int64_t pass, std::string_view what, std::string_view plan = {}) const;
  std::string next_pass(int64_t pass, std::string_view plan) const {
    return pass_label(pass + 1, kFindRow, plan);
  }
  bool snapshot_isolation() const;
  static std::string_view locked_pass_plan(const std::optional<InboxRow>& inbox);
  static ConsumerFault serialization_fault();
  static ConsumerFault delivery_timeout_fault();
  void report_resend(const Message& message, bool nothing_unsent);
  void report_duplicate(const Message& message);
  SendAttempt send_attempt(const MessagePtr& outgoing, int64_t seq, int64_t pass, size_t attempt,
                           int64_t started_ms, uint64_t frame);
  std::optional<InboxRow> inbox_lookup(const Message& message);
  void inbox_insert(const Message& message);
  void inbox_consume(const Message& message, const InboxRow& inbox);
  std::vector<std::pair<int64_t, MessagePtr>> inbox_outbox_after(const Message& message,
                                                                 const InboxRow& inbox);
  bool send_retried(PublishResult result) const;
  bool serialization_failure(const std::optional<InboxRow>& seen,
                             const std::optional<InboxRow>& locked) const;
  void send_retry_event(const Message& outgoing, PublishResult result, int64_t wait_ms);
  void inbox_sent(const Message& message, const InboxRow& inbox, int64_t last_sequence);
  void inbox_delivered(const Message& message, const InboxRow& inbox);
  void inbox_remove_outbox(const Message& message, const InboxRow& inbox);
  void inbox_bump(const InboxRow& inbox);
  int64_t cleanup_inbox_state(int64_t cutoff);
  std::string_view me() const { return core_.me(); }

  AccountCore& core_;
  ServiceHost& host_;
  const Config& config_;
  Statements statements_storage_;
  Statements* statements_ = &statements_storage_;
};

}  // namespace

// MassTransit's EF inbox (EntityFrameworkOutboxContextFactory.Send, OutboxMessagePipe): a loop
// of passes, each its own transaction that starts with a locking select of the message's
// InboxState row. (1) No row: insert it, commit. (2) Not consumed: count the delivery, run the
// consumer (business change and outbox rows), set consumed, commit. (3) Consumed, not
// delivered, an outbox message after last_sequence_number: send that one message
// (MessageDeliveryLimit = 1), with its stored id, holding the row lock while the broker
// confirms it; save last_sequence_number, commit. (4) Consumed, not delivered, none left: set
// delivered, commit. (5) Delivered: remove the outbox rows, commit, and stop. Then the delivery
// is acked. Every pass after the first adds one to ReceiveCount.
//
// MessageDeliveryLimit = 1: a pass sends at most one outbox message, the next after
// last_sequence_number, and commits that number; a pass that finds none left sets delivered.
// So a first delivery with one outbox message takes a send pass and a delivered pass, and a
// copy that gets the lock between the two sends nothing. The send pass holds the row lock while
// it awaits the confirm; a publish the send transport retries waits and goes again, until
// MessageDeliveryTimeout cancels the send (send_attempt). A fault rolls the pass back: the next
// delivery sends again from the last committed number.
//
// The select and the rest of a pass are two steps here. When the row exists, the row lock
// makes the split invisible. When it does not, Postgres locks nothing either (there is no row
// to lock), so two first deliveries can both find none: that is the window the
// (message_id, consumer_id) key closes.
//
// Each step and lock stays a call of its own in this function: ServiceCore::step tells a
// handler's boundaries apart by their source line, so a helper shared by two of them would merge
// two of the explorer's states. The helpers below it do what happens between two boundaries.
Task<Outcome> MassTransitInbox::handle(MessagePtr message_ptr) {
  const Message& message = *message_ptr;
  const std::string lock_key = inbox_lock_key(message);
  bool reported = false;  // whether this delivery ran the consumer or counted as a dedupe hit
  co_await core_.step(pass_label(1, kFindRow), CrashPointSet(CrashPoint::before_tx), message);
  for (int64_t pass = 1; pass <= kInboxPassesMax; ++pass) {
    std::optional<InboxRow> inbox = inbox_lookup(message);
    const auto frame = [&](int64_t sequence = 0) {
      return frame_digest(reported, inbox, pass, sequence);
    };
    if (!inbox) {
      co_await core_.step(pass_label(pass, "insert the inbox row (consumed null), commit"),
                          CrashPointSet(CrashPoint::after_precheck), message, frame());
      inbox_insert(message);
      co_await core_.step(next_pass(pass, kConsumePlan), CrashPointSet(CrashPoint::after_dedupe),
                          message, frame());
      continue;
    }
    const std::optional<InboxRow> seen = inbox;
    co_await core_.lock_row(
        lock_key, pass_label(pass, "its lock on the inbox row granted: read the row"),
        frame_digest(reported, snapshot_isolation() ? seen : std::nullopt, pass));
    inbox = inbox_lookup(message);  // the row as the locking select returns it, once locked
    if (snapshot_isolation() && serialization_failure(seen, inbox)) throw serialization_fault();
    co_await core_.step(pass_label(pass, locked_pass_plan(inbox)), message, frame());
    if (!inbox) {
      host_.unlock_row(lock_key);
      continue;
    }
    if (!inbox->consumed) {
      inbox_consume(message, *inbox);
      host_.unlock_row(lock_key);
      reported = true;
      co_await core_.step(next_pass(pass, kSendPlan), CrashPointSet(CrashPoint::after_commit),
                          message, frame());
      continue;
    }
    if (!inbox->delivered) {
      const auto unsent = inbox_outbox_after(message, *inbox);
      if (!reported) report_resend(message, unsent.empty());
      reported = true;
      if (unsent.empty()) {
        inbox_delivered(message, *inbox);
        host_.unlock_row(lock_key);
        co_await core_.step(next_pass(pass, kRemovePlan), message, frame());
        continue;
      }
      const auto& [seq, outgoing] = unsent.front();  // the send pass's one message
      const int64_t started_ms = host_.now_ms();
      const uint64_t sending = frame(inbox->last_sequence_number);
      for (size_t attempt = 0;; ++attempt) {
        const SendAttempt sent = send_attempt(outgoing, seq, pass, attempt, started_ms, sending);
        if (sent.confirmed) break;
        if (sent.wait_ms > 0) co_await host_.sleep(sent.wait_ms, sent.resume, sent.next);
        if (sent.cancelled) throw delivery_timeout_fault();
      }
      co_await core_.step(pass_label(pass, "save last_sequence_number, commit"),
                          CrashPointSet(CrashPoint::after_outbox_send), message, frame(seq));
      inbox_sent(message, *inbox, seq);
      host_.unlock_row(lock_key);
      co_await core_.step(next_pass(pass, kSendPlan), message, frame());
      continue;
    }
    inbox_remove_outbox(message, *inbox);
    host_.unlock_row(lock_key);
    if (!reported) report_duplicate(message);
    co_return Outcome::ack;
  }
  INBOXSIM_ASSERT(false);
}

// The playground's label for a handler's next step; next_pass's: the next pass's locking select,
// then `plan`, what the row as this handler left it calls for (one event without a clock: another
// copy may have changed the row since; the trace says what the pass did). Labels and frames are
// left empty where nobody reads them (ServiceHost::names_steps: a fuzz seed).
std::string MassTransitInbox::pass_label(int64_t pass, std::string_view what,
                                         std::string_view plan) const {
  if (!core_.names_steps()) return {};
  std::string label = "MassTransit pass " + std::to_string(pass) + ": " + std::string(what);
  return plan.empty() ? label : label + ", then " + std::string(plan);
}

// What the rest of the handler reads from its frame, for the explorer (ServiceCore::step).
uint64_t MassTransitInbox::frame_digest(bool reported, const std::optional<InboxRow>& row,
                                        int64_t pass, int64_t sequence) const {
  if (!core_.names_steps()) return 0;
  Hasher digest;
  digest.add(reported).add_signed(pass).add(row.has_value()).add_signed(sequence);
  if (row) {
    digest.add_signed(row->row).add(row->consumed).add(row->delivered);
    digest.add_signed(row->last_sequence_number);
  }
  return digest.finish().low;
}

// On Postgres at Repeatable Read a pass's snapshot is the row as it was before any wait.
bool MassTransitInbox::snapshot_isolation() const {
  return config_.account_database == AccountDatabase::postgres &&
         config_.account_isolation == Isolation::repeatable_read;
}

// What a pass does with the row its locking select returned.
std::string_view MassTransitInbox::locked_pass_plan(const std::optional<InboxRow>& inbox) {
  if (!inbox) return "the row is gone: start over";
  if (!inbox->consumed) return kConsumePlan;
  if (!inbox->delivered) return kSendPlan;
  return kRemovePlan;
}

ConsumerFault MassTransitInbox::serialization_fault() {
  return ConsumerFault{
      "40001 could not serialize access due to concurrent update: the locking select waited "
      "on the inbox row, which the holder updated and committed (Postgres, Repeatable Read)",
      FaultCause::serialization};
}

ConsumerFault MassTransitInbox::delivery_timeout_fault() {
  return ConsumerFault{
      "MessageDeliveryTimeout (30 s) cancelled the outbox send: OperationCanceledException",
      FaultCause::delivery_timeout, true};
}

// The first pass of a copy that finds the message consumed but not delivered: a dedupe hit
// that sends what is left of the outbox (or nothing, when the last send pass already ran).
void MassTransitInbox::report_resend(const Message& message, bool nothing_unsent) {
  core_.dedupe_hit(
      Probe::dedupe_masstransit_resend, DedupeStep::inbox_resend, me(), message,
      "inbox: message " + message.message_id +
          (nothing_unsent ? " already consumed and its outbox message sent, not yet marked "
                            "delivered: sending nothing, setting delivered"
                          : " already consumed but its outbox not delivered: re-sending the "
                            "stored messages with their stored ids"));
}

void MassTransitInbox::report_duplicate(const Message& message) {
  core_.dedupe_hit(
      Probe::dedupe_masstransit, DedupeStep::inbox_consumed, me(), message,
      "inbox: message " + message.message_id + " already consumed, acked without effect");
}

// One publish of the send pass's outbox message, and what follows it. A publish that fails the
// way the send transport retries is published again on a new channel, same MessageId, after its
// breather and interval (the retry event is recorded here), until MessageDeliveryTimeout (30 s
// from the first attempt) would pass first: the send is then cancelled after waiting out what
// is left of the 30 s, and the pass faults with an OperationCanceledException. A failure the
// policy does not retry throws here.
MassTransitInbox::SendAttempt MassTransitInbox::send_attempt(const MessagePtr& outgoing,
                                                             int64_t seq, int64_t pass,
                                                             size_t attempt, int64_t started_ms,
                                                             uint64_t frame) {
  const PublishResult result = host_.publish_and_confirm(outgoing);
  if (result == PublishResult::confirmed) return {.confirmed = true, .next = {}};
  if (!send_retried(result)) AccountCore::require_confirmed(result);
  const size_t interval = std::min(attempt, kSendRetryIntervalsMs.size() - 1);
  const int64_t wait_ms = kSendBreatherMs + kSendRetryIntervalsMs[interval];
  const int64_t deadline_ms = started_ms + kMessageDeliveryTimeoutMs;
  Hasher digest;
  digest.add(frame).add_signed(seq).add(static_cast<uint64_t>(attempt)).add_signed(started_ms);
  if (host_.now_ms() + wait_ms >= deadline_ms) {
    return {.cancelled = true,
            .wait_ms = std::max<int64_t>(0, deadline_ms - host_.now_ms()),
            .resume = digest.finish().low,
            .next = pass_label(pass, "MessageDeliveryTimeout: cancel the send")};
  }
  send_retry_event(*outgoing, result, wait_ms);
  return {.wait_ms = wait_ms,
          .resume = digest.finish().low,
          .next = pass_label(pass, "publish again on a new channel, same MessageId")};
}

// The locking select: MassTransit reads the rows for (MessageId, ConsumerId) and takes
// SingleOrDefault(), which throws when there are two (possible only without the key).
std::optional<MassTransitInbox::InboxRow> MassTransitInbox::inbox_lookup(const Message& message) {
  StatementUse find(statements_->inbox_lookup);
  find->bind(1, message.message_id);
  find->bind(2, std::string(kAccountConsumerId));
  if (!find->executeStep()) return std::nullopt;
  InboxRow inbox;
  inbox.row = find->getColumn(0).getInt64();
  inbox.consumed = find->getColumn(1).getInt() != 0;
  inbox.delivered = find->getColumn(2).getInt() != 0;
  inbox.last_sequence_number = find->getColumn(3).getInt64();
  inbox.receive_count = find->getColumn(4).getInt64();
  if (find->executeStep()) {
    throw ConsumerFault{
        "two inbox_state rows for one (message_id, consumer_id): the lookup's SingleOrDefault "
        "throws",
        FaultCause::inbox_rows_twice};
  }
  return inbox;
}

// Pass 1: the row, received now, never consumed. The key rejects a second row.
void MassTransitInbox::inbox_insert(const Message& message) {
  AccountCore::UnitOfWork work(core_);
  try {
    StatementUse insert(statements_->inbox_insert);
    insert->bind(1, message.message_id);
    insert->bind(2, std::string(kAccountConsumerId));
    insert->bind(3, static_cast<int64_t>(host_.now_ms()));
    insert->exec();
  } catch (const SQLite::Exception& error) {
    if (!is_unique_violation(error)) throw;
    host_.reached(Probe::masstransit_inbox_key);
    throw ConsumerFault{
        "inbox_state key (message_id, consumer_id) rejected a second row: a concurrent delivery "
        "inserted it first",
        FaultCause::inbox_key};
  }
  core_.note_dedupe_record(me(), message, DedupeRecord::inbox_row_inserted,
                           "inbox: row (" + message.message_id + ", " +
                               std::string(kAccountConsumerId) +
                               ") inserted and committed, consumed still null");
  core_.commit(work);
}

void MassTransitInbox::inbox_bump(const InboxRow& inbox) {
  StatementUse bump(statements_->inbox_bump);
  bump->bind(1, static_cast<int64_t>(inbox.row));
  bump->exec();
}

// Pass 2: count the delivery, run the consumer, set consumed: one transaction.
void MassTransitInbox::inbox_consume(const Message& message, const InboxRow& inbox) {
  AccountCore::UnitOfWork work(core_);
  inbox_bump(inbox);
  core_.consume(message);
  core_.crash_point(CrashPoint::after_effect, message);
  {
    StatementUse mark(statements_->inbox_consumed);
    mark->bind(1, static_cast<int64_t>(host_.now_ms()));
    mark->bind(2, static_cast<int64_t>(inbox.row));
    mark->exec();
  }
  core_.note_dedupe_record(
      me(), message, DedupeRecord::inbox_consumed,
      "inbox: " + message.message_id +
          " marked consumed, in one transaction with its effect and outbox rows");
  core_.commit(work);
}

// The outbox messages of the message's inbox row after its last_sequence_number, in order, at
// most MessageDeliveryLimit + 1 of them (LoadOutboxMessages' Take, DbContextOutboxConsumeContext).
std::vector<std::pair<int64_t, MessagePtr>> MassTransitInbox::inbox_outbox_after(
    const Message& message, const InboxRow& inbox) {
  std::vector<std::pair<int64_t, MessagePtr>> rows;
  StatementUse select(statements_->outbox_for_inbox);
  select->bind(1, message.message_id);
  select->bind(2, static_cast<int64_t>(inbox.last_sequence_number));
  while (select->executeStep()) {
    rows.emplace_back(select->getColumn(0).getInt64(),
                      AccountCore::message_from_outbox_row(*select));
  }
  return rows;
}

// Whether MassTransit's send transport publishes again after `result` (SendTransportRetryPolicy,
// RabbitMqHostConfiguration.cs): a channel that closed before the confirm in every version; a
// broker nack since 8.5.3, which turns it into a connection error (RabbitMqChannelContext.cs).
// Before that a nack raised MessageNotAcknowledgedException, which the policy does not handle.
bool MassTransitInbox::send_retried(PublishResult result) const {
  if (result == PublishResult::lost) return true;
  return result == PublishResult::nacked && config_.account_masstransit == MassTransitVersion::v8_5;
}

void MassTransitInbox::send_retry_event(const Message& outgoing, PublishResult result,
                                        int64_t wait_ms) {
  TraceEvent retry = event_about(EventKind::retry, host_.now_ms(), me(), outgoing);
  retry.detail = std::string("send transport: ") +
                 (result == PublishResult::lost ? "the channel closed before the confirm"
                                                : "the broker nacked the publish") +
                 "; publishing again on a new channel in " + std::to_string(wait_ms) +
                 " ms, same MessageId, the inbox row still locked (SendTransportRetryPolicy, "
                 "up to MessageDeliveryTimeout 30 s)";
  host_.record(std::move(retry));
}

// Postgres at Repeatable Read: a SELECT ... FOR UPDATE that waited for a row lock, and whose row
// the holder then updated and committed, fails with 40001 (the row's version in the
// transaction's snapshot is not the one it would lock). Every committed pass adds one to
// ReceiveCount, so a changed count is such an update; a holder that rolled back changed nothing.
bool MassTransitInbox::serialization_failure(const std::optional<InboxRow>& seen,
                                             const std::optional<InboxRow>& locked) const {
  return seen && locked && seen->row == locked->row &&
         (seen->receive_count != locked->receive_count || seen->consumed != locked->consumed ||
          seen->delivered != locked->delivered ||
          seen->last_sequence_number != locked->last_sequence_number);
}

// A send pass's commit: the row's last_sequence_number is the message just sent
// (NotifyOutboxMessageDelivered updates the tracked InboxState, saved with the pass).
void MassTransitInbox::inbox_sent(const Message& message, const InboxRow& inbox,
                                  int64_t last_sequence) {
  AccountCore::UnitOfWork work(core_);
  inbox_bump(inbox);
  StatementUse mark(statements_->inbox_sent);
  mark->bind(1, static_cast<int64_t>(last_sequence));
  mark->bind(2, static_cast<int64_t>(inbox.row));
  mark->exec();
  core_.note_dedupe_record(
      me(), message, DedupeRecord::inbox_outbox_sent,
      "inbox: " + message.message_id + " outbox message " + std::to_string(last_sequence) +
          " sent, last_sequence_number saved; delivered is set by a pass of its own");
  core_.commit(work);
}

// The delivered pass: no outbox message after last_sequence_number is left; set delivered.
void MassTransitInbox::inbox_delivered(const Message& message, const InboxRow& inbox) {
  AccountCore::UnitOfWork work(core_);
  inbox_bump(inbox);
  StatementUse mark(statements_->inbox_delivered);
  mark->bind(1, static_cast<int64_t>(host_.now_ms()));
  mark->bind(2, static_cast<int64_t>(inbox.row));
  mark->exec();
  core_.note_dedupe_record(
      me(), message, DedupeRecord::inbox_delivered,
      "inbox: " + message.message_id + " marked delivered, its outbox messages sent");
  core_.commit(work);
}

// Pass 5 (or the only pass of a duplicate): count the delivery, remove the outbox rows.
void MassTransitInbox::inbox_remove_outbox(const Message& message, const InboxRow& inbox) {
  AccountCore::UnitOfWork work(core_);
  inbox_bump(inbox);
  StatementUse remove(statements_->outbox_remove_inbox);
  remove->bind(1, message.message_id);
  remove->exec();
  core_.commit(work);
}

// InboxCleanupService.CleanUpInboxState: deletes the expired InboxState rows (delivered before
// the cutoff) in batches of QueryMessageLimit, oldest delivered first, one DELETE a batch, and
// runs again at once while a batch removed rows. Since v8.3.0 OutboxMessage has a foreign key
// to InboxState (MessageId, ConsumerId) with no cascade, so a batch holding a row whose outbox
// messages were never removed (pass 5 never ran) fails as a whole, and so does every later
// attempt: the batch is always the oldest. Returns the rows deleted.
int64_t MassTransitInbox::cleanup_inbox_state(int64_t cutoff) {
  if (config_.account_masstransit != MassTransitVersion::v8_2) {
    StatementUse blocked(statements_->inbox_cleanup_blocked);
    blocked->bind(1, static_cast<int64_t>(cutoff));
    if (blocked->executeStep()) {
      // The first expired row with outbox rows left, and how many expired rows come before it:
      // the batches before its batch go, its batch fails.
      const std::string message_id = blocked->getColumn(0).getString();
      const int64_t rows_before = blocked->getColumn(1).getInt64();
      const int64_t deletable = rows_before / kCleanupQueryMessageLimit * kCleanupQueryMessageLimit;
      int64_t deleted = 0;
      if (deletable > 0) {
        StatementUse remove(statements_->inbox_cleanup_oldest);
        remove->bind(1, static_cast<int64_t>(cutoff));
        remove->bind(2, static_cast<int64_t>(deletable));
        deleted = remove->exec();
      }
      TraceEvent event;
      event.time_ms = host_.now_ms();
      event.kind = EventKind::cleanup;
      event.cleaned = CleanupOf::dedupe_records;
      event.service = me();
      event.message_id = message_id;
      event.detail =
          "inbox cleanup faulted: the DELETE of the oldest expired inbox_state rows (a batch of " +
          std::to_string(kCleanupQueryMessageLimit) + ") violates the outbox's foreign key to " +
          "inbox_state: message " + message_id +
          " still has outbox rows. The whole batch stays, and the next run tries the same batch";
      host_.record(std::move(event));
      return deleted;
    }
  }
  StatementUse inbox(statements_->inbox_cleanup);
  inbox->bind(1, static_cast<int64_t>(cutoff));
  return inbox->exec();
}

// The cleanup of MassTransit's inbox rows (above) and of the outbox rows delivered as long ago as
// the window, in one transaction.
CleanupCounts MassTransitInbox::cleanup(int64_t as_of_ms) {
  const int64_t cutoff = as_of_ms - config_.account_inbox_window_ms;
  if (cutoff <= 0) return {};
  AccountCore::UnitOfWork work(core_);
  const int64_t deleted = cleanup_inbox_state(cutoff);
  const int64_t outbox_deleted = core_.cleanup_outbox(cutoff);
  if (deleted == 0 && outbox_deleted == 0) return {};
  core_.commit(work);
  return {deleted, outbox_deleted};
}

int64_t MassTransitInbox::undelivered_outbox_rows() {
  StatementUse count(statements_->outbox_undelivered);
  const bool has_row = count->executeStep();
  INBOXSIM_ASSERT(has_row);
  return count->getColumn(0).getInt64();
}

std::unique_ptr<AccountInboxMechanism> make_masstransit_inbox(AccountCore& core) {
  return std::make_unique<MassTransitInbox>(core);
}

}  // namespace inboxsim
