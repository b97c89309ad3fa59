#include "services/account_service.h"

#include <algorithm>
#include <array>

#include "domain/participants.h"
#include "kernel/assert.h"
#include "services/sql.h"

namespace inboxsim {

namespace {

constexpr std::string_view kConsumerId = "account-consumer";
// Rows one outbox sweep sends at most; a sweep that leaves rows asks for another.
constexpr int64_t kSweepBatchRows = 256;
// MassTransit's inbox loop runs a pass per transaction: insert, consume, one pass per outbox
// message sent, delivered, remove (five for a command with its one reply). A pass that finds
// its row gone (cleanup deleted it meanwhile) starts over, so the bound leaves
// room for that and is never reached otherwise.
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

void create_ledger(SQLite::Database& db, const Config& config) {
  if (config.account_inbox == AccountInbox::marten) {
    // Marten: the ledger is the accounts' event stream; `ledger` is a view over it so every
    // reader sees one shape.
    db.exec(
        "CREATE TABLE account_events (seq INTEGER PRIMARY KEY, account TEXT NOT NULL,"
        "  version INTEGER NOT NULL, transfer_id TEXT NOT NULL, type TEXT NOT NULL,"
        "  amount INTEGER NOT NULL, created_ms INTEGER NOT NULL);"
        "CREATE UNIQUE INDEX account_events_stream ON account_events (account, version);"
        "CREATE VIEW ledger AS SELECT seq AS id, transfer_id, type, account, amount, created_ms"
        "  FROM account_events;");
    if (config.account_ledger_unique) {
      db.exec("CREATE UNIQUE INDEX ledger_transfer_type ON account_events (transfer_id, type)");
    }
    return;
  }
  db.exec(
      "CREATE TABLE ledger (id INTEGER PRIMARY KEY, transfer_id TEXT NOT NULL,"
      "  type TEXT NOT NULL, account TEXT NOT NULL, amount INTEGER NOT NULL,"
      "  created_ms INTEGER NOT NULL);");
  if (config.account_ledger_unique) {
    db.exec("CREATE UNIQUE INDEX ledger_transfer_type ON ledger (transfer_id, type)");
  }
}

const char* ledger_insert_sql(const Config& config) {
  if (config.account_inbox == AccountInbox::marten) {
    return "INSERT INTO account_events (transfer_id, type, account, amount, created_ms, version)"
           " VALUES (?1, ?2, ?3, ?4, ?5,"
           "  (SELECT COALESCE(MAX(version), 0) + 1 FROM account_events WHERE account = ?3))";
  }
  return "INSERT INTO ledger (transfer_id, type, account, amount, created_ms)"
         " VALUES (?1, ?2, ?3, ?4, ?5)";
}

constexpr const char* kOutboxColumns =
    "seq, message_id, type, transfer_id, from_account, to_account, amount, reason, created_ms";

MessagePtr message_from_outbox_row(SQLite::Statement& row) {
  const auto type = parse_message_type(row.getColumn(2).getString());
  INBOXSIM_ASSERT(type.has_value());
  return make_message(row.getColumn(1).getString(), *type, row.getColumn(3).getString(),
                      row.getColumn(4).getString(), row.getColumn(5).getString(),
                      row.getColumn(6).getInt64(), row.getColumn(7).getString(),
                      row.getColumn(8).getInt64());
}

std::string inbox_lock_key(const Message& message) {
  return "inbox_state (" + message.message_id + ", " + std::string(kConsumerId) + ")";
}

}  // namespace

void AccountService::create_schema(SQLite::Database& db, const Config& config) {
  db.exec(
      "CREATE TABLE accounts (name TEXT PRIMARY KEY, balance INTEGER NOT NULL,"
      "  closed INTEGER NOT NULL);"
      "CREATE TABLE inbox_state (id INTEGER PRIMARY KEY, message_id TEXT NOT NULL,"
      "  consumer_id TEXT NOT NULL, received_ms INTEGER NOT NULL, receive_count INTEGER NOT NULL,"
      "  consumed_ms INTEGER, delivered_ms INTEGER, last_sequence_number INTEGER);"
      "CREATE INDEX inbox_state_delivered ON inbox_state (delivered_ms);"
      "CREATE TABLE inbox_documents (id INTEGER PRIMARY KEY, message_id TEXT NOT NULL,"
      "  received_ms INTEGER NOT NULL);"
      "CREATE INDEX inbox_documents_received ON inbox_documents (received_ms);"
      "CREATE TABLE outbox (seq INTEGER PRIMARY KEY, inbox_message_id TEXT NOT NULL,"
      "  message_id TEXT NOT NULL, type TEXT NOT NULL, transfer_id TEXT NOT NULL,"
      "  from_account TEXT NOT NULL, to_account TEXT NOT NULL, amount INTEGER NOT NULL,"
      "  reason TEXT NOT NULL, created_ms INTEGER NOT NULL, delivered_ms INTEGER);"
      "CREATE INDEX outbox_inbox ON outbox (inbox_message_id);"
      "CREATE INDEX outbox_pending ON outbox (seq) WHERE delivered_ms IS NULL;"
      "CREATE INDEX outbox_delivered ON outbox (delivered_ms);");
  // InboxState's key and the Marten inbox document's primary key; without them, a plain index
  // still serves the lookups.
  const std::string unique = config.account_inbox_unique ? "UNIQUE " : "";
  db.exec("CREATE " + unique + "INDEX inbox_state_key ON inbox_state (message_id, consumer_id);" +
          "CREATE " + unique + "INDEX inbox_documents_key ON inbox_documents (message_id);");
  create_ledger(db, config);
  // With account.remember_rejections (our addition, off by default) the per-transfer key also
  // remembers a rejected debit: a late duplicate of its Transfer.Requested (past the inbox
  // window) must not debit a transfer the saga rejected. The table always exists, so the
  // schema does not depend on the switch.
  db.exec("CREATE TABLE rejected_debits (transfer_id TEXT PRIMARY KEY)");
}

std::string AccountService::schema_key(const Config& config) {
  // The key names every config choice create_schema() depends on.
  std::string key = config.account_inbox == AccountInbox::marten ? "marten" : "ledger";
  if (config.account_ledger_unique) key += "+unique";
  if (config.account_inbox_unique) key += "+inbox-key";
  return key;
}

namespace {

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
// last_sequence_number is below the row's (a send pass is still to come, and will send it);
// every other mode marks the row itself when it sends it.
std::string outbox_undelivered_sql(const Config& config) {
  if (config.account_inbox == AccountInbox::masstransit) {
    return "SELECT COUNT(*) FROM outbox o WHERE o.delivered_ms IS NULL AND EXISTS"
           " (SELECT 1 FROM inbox_state i WHERE i.message_id = o.inbox_message_id AND"
           " i.consumed_ms IS NOT NULL AND i.delivered_ms IS NULL AND"
           " o.seq > COALESCE(i.last_sequence_number, 0)) AND NOT EXISTS (SELECT 1"
           " FROM inbox_state i WHERE i.message_id = o.inbox_message_id AND i.delivered_ms IS"
           " NOT NULL)";
  }
  return "SELECT COUNT(*) FROM outbox o WHERE o.delivered_ms IS NULL AND NOT EXISTS (SELECT 1"
         " FROM inbox_state i WHERE i.message_id = o.inbox_message_id AND i.delivered_ms IS NOT"
         " NULL)";
}

}  // namespace

// Every statement the instance runs, prepared on its own connection on first use.
struct AccountService::Statements {
  explicit Statements(Connection& db, const Config& config)
      : account_find(db, "SELECT balance, closed FROM accounts WHERE name = ?"),
        account_insert(db, "INSERT INTO accounts (name, balance, closed) VALUES (?, ?, ?)"),
        balance_add(db,
                    "UPDATE accounts SET balance = balance + ? WHERE name = ? RETURNING balance"),
        ledger_insert(db, ledger_insert_sql(config)),
        outbox_insert(db,
                      "INSERT INTO outbox (inbox_message_id, message_id, type, transfer_id,"
                      " from_account, to_account, amount, reason, created_ms)"
                      " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"),
        outbox_for_inbox(db, std::string("SELECT ") + kOutboxColumns +
                                 " FROM outbox WHERE inbox_message_id = ? AND seq > ? ORDER BY seq"
                                 " LIMIT 2"),
        outbox_remove_inbox(db, "DELETE FROM outbox WHERE inbox_message_id = ?"),
        outbox_pending(db, std::string("SELECT ") + kOutboxColumns +
                               " FROM outbox WHERE delivered_ms IS NULL ORDER BY seq LIMIT " +
                               std::to_string(kSweepBatchRows)),
        outbox_mark_seq(db, "UPDATE outbox SET delivered_ms = ? WHERE seq = ?"),
        outbox_undelivered(db, outbox_undelivered_sql(config)),
        outbox_cleanup(db, "DELETE FROM outbox WHERE delivered_ms < ?"),
        inbox_lookup(db,
                     "SELECT id, consumed_ms IS NOT NULL, delivered_ms IS NOT NULL,"
                     " COALESCE(last_sequence_number, 0), receive_count FROM inbox_state"
                     " WHERE message_id = ? AND consumer_id = ? ORDER BY id LIMIT 2"),
        inbox_insert(db,
                     "INSERT INTO inbox_state (message_id, consumer_id, received_ms, receive_count)"
                     " VALUES (?, ?, ?, 0)"),
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
                             " WHERE delivered_ms < ?1 ORDER BY delivered_ms, id LIMIT ?2)"),
        document_find(db, "SELECT 1 FROM inbox_documents WHERE message_id = ?"),
        document_insert(db, "INSERT INTO inbox_documents (message_id, received_ms) VALUES (?, ?)"),
        document_cleanup(db, "DELETE FROM inbox_documents WHERE received_ms < ?"),
        rejected_find(db, "SELECT 1 FROM rejected_debits WHERE transfer_id = ?"),
        rejected_insert(db, "INSERT OR IGNORE INTO rejected_debits (transfer_id) VALUES (?)"),
        debit_find(db, "SELECT 1 FROM ledger WHERE transfer_id = ? AND type = 'DEBIT' LIMIT 1"),
        // Prepared on first use, which only the Marten mode's rich append makes.
        stream_version(db,
                       "SELECT COALESCE(MAX(version), 0) FROM account_events WHERE account = ?") {}

  LazyStatement account_find;
  LazyStatement account_insert;
  LazyStatement balance_add;
  LazyStatement ledger_insert;
  LazyStatement outbox_insert;
  LazyStatement outbox_for_inbox;
  LazyStatement outbox_remove_inbox;
  LazyStatement outbox_pending;
  LazyStatement outbox_mark_seq;
  LazyStatement outbox_undelivered;
  LazyStatement outbox_cleanup;
  LazyStatement inbox_lookup;
  LazyStatement inbox_insert;
  LazyStatement inbox_bump;
  LazyStatement inbox_consumed;
  LazyStatement inbox_sent;
  LazyStatement inbox_delivered;
  LazyStatement inbox_cleanup;
  LazyStatement inbox_cleanup_blocked;
  LazyStatement inbox_cleanup_oldest;
  LazyStatement document_find;
  LazyStatement document_insert;
  LazyStatement document_cleanup;
  LazyStatement rejected_find;
  LazyStatement rejected_insert;
  LazyStatement debit_find;
  LazyStatement stream_version;
};

AccountService::AccountService(ServiceHost& host, const Config& config, Connection& connection)
    : ServiceCore(host, config, connection, ServiceId::account),
      statements_(std::make_unique<Statements>(connection_, config)) {}

AccountService::~AccountService() = default;

void AccountService::open_accounts(const std::map<std::string, AccountSpec>& accounts) {
  UnitOfWork work(*this);
  for (const auto& [name, spec] : accounts) {
    StatementUse insert(statements_->account_insert);
    insert->bind(1, name);
    insert->bind(2, static_cast<int64_t>(spec.balance));
    insert->bind(3, spec.closed ? 1 : 0);
    insert->exec();
  }
  // The opening state is the checker's starting point, not a transaction it checks.
  work.commit();
}

Task<Outcome> AccountService::handle(MessagePtr message) {
  INBOXSIM_ASSERT(is_transfer_command(message->type));
  if (config_.account_inbox == AccountInbox::masstransit) {
    return handle_masstransit(std::move(message));
  }
  return handle_swept(std::move(message));
}

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
// The select and the rest of a pass are two steps here. When the row exists, the row lock
// makes the split invisible. When it does not, Postgres locks nothing either (there is no row
// to lock), so two first deliveries can both find none: that is the window the
// (message_id, consumer_id) key closes.
Task<Outcome> AccountService::handle_masstransit(MessagePtr message_ptr) {
  const Message& message = *message_ptr;
  const std::string lock_key = inbox_lock_key(message);
  bool reported = false;  // whether this delivery ran the consumer or counted as a dedupe hit
  // What the rest of the handler reads from its frame, for the explorer (ServiceCore::step).
  const auto locals = [&](std::optional<InboxRow> row, int64_t pass, int64_t sequence = 0) {
    Hasher digest;
    digest.add(reported).add_signed(pass).add(row.has_value()).add_signed(sequence);
    if (row) {
      digest.add_signed(row->row).add(row->consumed).add(row->delivered);
      digest.add_signed(row->last_sequence_number);
    }
    return digest.finish().low;
  };
  // What the handler does next, by its pass: the playground's label for the step.
  const auto next = [](int64_t pass, std::string_view what) {
    return "MassTransit pass " + std::to_string(pass) + ": " + std::string(what);
  };
  const std::string_view find = "find the inbox row (SELECT ... FOR UPDATE)";
  co_await step(next(1, find), CrashPointSet(CrashPoint::before_tx), message);
  for (int64_t pass = 1; pass <= kInboxPassesMax; ++pass) {
    std::optional<InboxRow> inbox = inbox_lookup(message);
    if (!inbox) {
      co_await step(next(pass, "insert the inbox row (consumed null), commit"),
                    CrashPointSet(CrashPoint::after_precheck), message, locals(inbox, pass));
      inbox_insert(message);
      co_await step(next(pass + 1, find), CrashPointSet(CrashPoint::after_dedupe), message,
                    locals(inbox, pass));
      continue;
    }
    // On Postgres at Repeatable Read the pass's snapshot is the row as it was before any wait.
    const bool snapshot = config_.account_database == AccountDatabase::postgres &&
                          config_.account_isolation == Isolation::repeatable_read;
    const std::optional<InboxRow> seen = inbox;
    co_await lock_row(lock_key, next(pass, "its lock on the inbox row granted: read the row"),
                      locals(snapshot ? seen : std::nullopt, pass));
    inbox = inbox_lookup(message);  // the row as the locking select returns it, once locked
    if (snapshot && serialization_failure(seen, inbox)) {
      throw ConsumerFault{
          "40001 could not serialize access due to concurrent update: the locking select waited "
          "on the inbox row, which the holder updated and committed (Postgres, Repeatable "
          "Read)"};
    }
    co_await step(next(pass, !inbox             ? "the row is gone: start over"
                             : !inbox->consumed  ? "consume (the consumer runs), commit"
                             : !inbox->delivered ? "send the next outbox message (none left: "
                                                   "set delivered, commit)"
                                                 : "remove the outbox rows, commit, ack"),
                  message, locals(inbox, pass));
    if (!inbox) {
      host_.unlock_row(lock_key);
      continue;
    }
    if (!inbox->consumed) {
      inbox_consume(message, *inbox);
      host_.unlock_row(lock_key);
      reported = true;
      co_await step(next(pass + 1, find), CrashPointSet(CrashPoint::after_commit), message,
                    locals(inbox, pass));
      continue;
    }
    if (!inbox->delivered) {
      // MessageDeliveryLimit = 1: a pass sends at most one outbox message, the next after
      // last_sequence_number, and commits that number; a pass that finds none left sets
      // delivered. So a first delivery with one outbox message takes a send pass and a
      // delivered pass, and a copy that gets the lock between the two sends nothing.
      const std::vector<std::pair<int64_t, MessagePtr>> unsent =
          inbox_outbox_after(message, *inbox);
      if (!reported) {
        dedupe_hit(
            Probe::dedupe_masstransit_resend, me(), message,
            "inbox: message " + message.message_id +
                (unsent.empty() ? " already consumed and its outbox message sent, not yet marked "
                                  "delivered: sending nothing, setting delivered"
                                : " already consumed but its outbox not delivered: re-sending the "
                                  "stored messages with their stored ids"));
        reported = true;
      }
      if (unsent.empty()) {
        inbox_delivered(message, *inbox);
        host_.unlock_row(lock_key);
        co_await step(next(pass + 1, find), message, locals(inbox, pass));
        continue;
      }
      // The send pass: sends the outbox message after last_sequence_number, awaiting its
      // confirm, while the row lock is held. A publish that fails the way the send transport
      // retries is published again on a new channel, same MessageId, after its breather and
      // interval, until MessageDeliveryTimeout (30 s from the first attempt) cancels the send:
      // the pass then faults with an OperationCanceledException. A fault rolls the pass back:
      // the next delivery sends again from the last committed number.
      const auto& [seq, outgoing] = unsent.front();
      const int64_t started_ms = host_.now_ms();
      for (size_t attempt = 0;; ++attempt) {
        const PublishResult result = host_.publish_and_confirm(outgoing);
        if (result == PublishResult::confirmed) break;
        if (!send_retried(result)) require_confirmed(result);
        const size_t interval = std::min(attempt, kSendRetryIntervalsMs.size() - 1);
        const int64_t wait_ms = kSendBreatherMs + kSendRetryIntervalsMs[interval];
        const int64_t deadline_ms = started_ms + kMessageDeliveryTimeoutMs;
        Hasher digest;
        digest.add(locals(inbox, pass, inbox->last_sequence_number)).add_signed(seq);
        digest.add(static_cast<uint64_t>(attempt)).add_signed(started_ms);
        if (host_.now_ms() + wait_ms >= deadline_ms) {
          if (deadline_ms > host_.now_ms()) {
            co_await host_.sleep(deadline_ms - host_.now_ms(), digest.finish().low,
                                 next(pass, "MessageDeliveryTimeout: cancel the send"));
          }
          throw ConsumerFault{
              "MessageDeliveryTimeout (30 s) cancelled the outbox send: "
              "OperationCanceledException",
              true};
        }
        send_retry_event(*outgoing, result, wait_ms);
        co_await host_.sleep(wait_ms, digest.finish().low,
                             next(pass, "publish again on a new channel, same MessageId"));
      }
      co_await step(next(pass, "save last_sequence_number, commit"),
                    CrashPointSet(CrashPoint::after_outbox_send), message,
                    locals(inbox, pass, seq));
      inbox_sent(message, *inbox, seq);
      host_.unlock_row(lock_key);
      co_await step(next(pass + 1, find), message, locals(inbox, pass));
      continue;
    }
    inbox_remove_outbox(message, *inbox);
    host_.unlock_row(lock_key);
    if (!reported) {
      dedupe_hit(
          Probe::dedupe_masstransit, me(), message,
          "inbox: message " + message.message_id + " already consumed, acked without effect");
    }
    co_return Outcome::ack;
  }
  INBOXSIM_ASSERT(false);
}

// The locking select: MassTransit reads the rows for (MessageId, ConsumerId) and takes
// SingleOrDefault(), which throws when there are two (possible only without the key).
std::optional<AccountService::InboxRow> AccountService::inbox_lookup(const Message& message) {
  StatementUse find(statements_->inbox_lookup);
  find->bind(1, message.message_id);
  find->bind(2, std::string(kConsumerId));
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
        "throws"};
  }
  return inbox;
}

// Pass 1: the row, received now, never consumed. The key rejects a second row.
void AccountService::inbox_insert(const Message& message) {
  UnitOfWork work(*this);
  try {
    StatementUse insert(statements_->inbox_insert);
    insert->bind(1, message.message_id);
    insert->bind(2, std::string(kConsumerId));
    insert->bind(3, static_cast<int64_t>(host_.now_ms()));
    insert->exec();
  } catch (const SQLite::Exception& error) {
    if (!is_unique_violation(error)) throw;
    host_.reached(Probe::masstransit_inbox_key);
    throw ConsumerFault{
        "inbox_state key (message_id, consumer_id) rejected a second row: a concurrent delivery "
        "inserted it first"};
  }
  note_dedupe_record(me(), message,
                     "inbox: row (" + message.message_id + ", " + std::string(kConsumerId) +
                         ") inserted and committed, consumed still null");
  commit(work);
}

void AccountService::inbox_bump(const InboxRow& inbox) {
  StatementUse bump(statements_->inbox_bump);
  bump->bind(1, static_cast<int64_t>(inbox.row));
  bump->exec();
}

// Pass 2: count the delivery, run the consumer, set consumed: one transaction.
void AccountService::inbox_consume(const Message& message, const InboxRow& inbox) {
  UnitOfWork work(*this);
  inbox_bump(inbox);
  consume(message);
  crash_point(CrashPoint::after_effect, message);
  {
    StatementUse mark(statements_->inbox_consumed);
    mark->bind(1, static_cast<int64_t>(host_.now_ms()));
    mark->bind(2, static_cast<int64_t>(inbox.row));
    mark->exec();
  }
  note_dedupe_record(me(), message,
                     "inbox: " + message.message_id +
                         " marked consumed, in one transaction with its effect and outbox rows");
  commit(work);
}

// The outbox messages of the message's inbox row after its last_sequence_number, in order, at
// most MessageDeliveryLimit + 1 of them (LoadOutboxMessages' Take, DbContextOutboxConsumeContext).
std::vector<std::pair<int64_t, MessagePtr>> AccountService::inbox_outbox_after(
    const Message& message, const InboxRow& inbox) {
  std::vector<std::pair<int64_t, MessagePtr>> rows;
  StatementUse select(statements_->outbox_for_inbox);
  select->bind(1, message.message_id);
  select->bind(2, static_cast<int64_t>(inbox.last_sequence_number));
  while (select->executeStep()) {
    rows.emplace_back(select->getColumn(0).getInt64(), message_from_outbox_row(*select));
  }
  return rows;
}

// Whether MassTransit's send transport publishes again after `result` (its
// SendTransportRetryPolicy, RabbitMqHostConfiguration.cs): a channel that closed before the
// confirm in every version; a broker nack since 8.5.3, which turns it into a connection error
// (RabbitMqChannelContext.cs). Before that a nack raised MessageNotAcknowledgedException, which
// the policy does not handle.
bool AccountService::send_retried(PublishResult result) const {
  if (result == PublishResult::lost) return true;
  return result == PublishResult::nacked && config_.account_masstransit == MassTransitVersion::v8_5;
}

void AccountService::send_retry_event(const Message& outgoing, PublishResult result,
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
bool AccountService::serialization_failure(const std::optional<InboxRow>& seen,
                                           const std::optional<InboxRow>& locked) const {
  return seen && locked && seen->row == locked->row &&
         (seen->receive_count != locked->receive_count || seen->consumed != locked->consumed ||
          seen->delivered != locked->delivered ||
          seen->last_sequence_number != locked->last_sequence_number);
}

// A send pass's commit: the row's last_sequence_number is the message just sent
// (NotifyOutboxMessageDelivered updates the tracked InboxState, saved with the pass).
void AccountService::inbox_sent(const Message& message, const InboxRow& inbox,
                                int64_t last_sequence) {
  UnitOfWork work(*this);
  inbox_bump(inbox);
  StatementUse mark(statements_->inbox_sent);
  mark->bind(1, static_cast<int64_t>(last_sequence));
  mark->bind(2, static_cast<int64_t>(inbox.row));
  mark->exec();
  note_dedupe_record(
      me(), message,
      "inbox: " + message.message_id + " outbox message " + std::to_string(last_sequence) +
          " sent, last_sequence_number saved; delivered is set by a pass of its own");
  commit(work);
}

// The delivered pass: no outbox message after last_sequence_number is left; set delivered.
void AccountService::inbox_delivered(const Message& message, const InboxRow& inbox) {
  UnitOfWork work(*this);
  inbox_bump(inbox);
  StatementUse mark(statements_->inbox_delivered);
  mark->bind(1, static_cast<int64_t>(host_.now_ms()));
  mark->bind(2, static_cast<int64_t>(inbox.row));
  mark->exec();
  note_dedupe_record(
      me(), message,
      "inbox: " + message.message_id + " marked delivered, its outbox messages sent");
  commit(work);
}

// Pass 5 (or the only pass of a duplicate): count the delivery, remove the outbox rows.
void AccountService::inbox_remove_outbox(const Message& message, const InboxRow& inbox) {
  UnitOfWork work(*this);
  inbox_bump(inbox);
  StatementUse remove(statements_->outbox_remove_inbox);
  remove->bind(1, message.message_id);
  remove->exec();
  commit(work);
}

// The modes whose outbox is swept after the commit rather than tied to an inbox row: Marten
// (the inbox document looked up first, then inserted in the same transaction as the event
// append, its primary key the backstop for a concurrent duplicate), no inbox, and the seed's
// "Redis SET" beside the database, marked before or after the business commit (a crash in
// between loses the work, or does it twice).
Task<Outcome> AccountService::handle_swept(MessagePtr message_ptr) {
  const Message& message = *message_ptr;
  const AccountInbox inbox = config_.account_inbox;
  const bool external =
      inbox == AccountInbox::external_before || inbox == AccountInbox::external_after;
  // What the handler does next: the playground's label for the step.
  const std::string_view change = inbox == AccountInbox::marten
                                      ? "Marten: append the event, store the inbox document, "
                                        "commit"
                                      : "apply the change, write the outbox, commit";
  const std::string_view send = "send the outbox messages, then ack";
  const std::string_view mark = "mark the message in the seen-set";
  const bool rich = config_.account_marten_append == MartenAppend::rich;
  co_await step(std::string(inbox == AccountInbox::marten
                                ? (rich ? "Marten: load the inbox document and the stream's version"
                                        : "Marten: load the inbox document")
                            : external ? "check the seen-set"
                                       : change),
                CrashPointSet(CrashPoint::before_tx), message);
  if (already_seen(message)) {
    // The pre-check saw it: acked without effect (the outbox is still swept below).
  } else {
    // Marten's rich append: the version of the stream the command appends to, as read before
    // the write (RichEventAppender's stream state query); the write then expects it.
    std::optional<int64_t> read_version;
    if (inbox == AccountInbox::none) {
      crash_point(CrashPoint::after_dedupe, message);
    } else if (external) {
      co_await step(std::string(inbox == AccountInbox::external_before ? mark : change),
                    CrashPointSet(CrashPoint::after_precheck, CrashPoint::after_dedupe), message);
    } else {
      if (config_.account_marten_append == MartenAppend::rich) {
        read_version = stream_version(stream_of(message));
      }
      co_await step(std::string(change), CrashPointSet(CrashPoint::after_precheck), message,
                    read_version ? Hasher().add_signed(*read_version).finish().low : 0);
    }
    if (inbox == AccountInbox::external_before) {
      mark_seen(me(), seen_key(message), message, "before");
      co_await step(std::string(change), CrashPointSet(CrashPoint::after_mark), message);
    }
    if (commit_business(message, read_version)) {
      co_await step(std::string(inbox == AccountInbox::external_after ? mark : send),
                    CrashPointSet(CrashPoint::after_commit), message);
      if (inbox == AccountInbox::external_after) {
        mark_seen(me(), seen_key(message), message, "after");
        co_await step(std::string(send), CrashPointSet(CrashPoint::after_mark), message);
      }
    }
  }
  const OutboxSend sent = send_pending_outbox();
  if (!sent.confirmed_seqs.empty()) {
    Hasher digest;
    digest.add(static_cast<uint64_t>(sent.result)).add(sent.batch_full);
    for (const int64_t seq : sent.confirmed_seqs) digest.add_signed(seq);
    co_await step("mark the sent outbox rows, then ack", CrashPointSet(CrashPoint::after_outbox_send),
                  message, digest.finish().low);
  }
  mark_outbox_sent(sent.confirmed_seqs);
  if (sent.result != PublishResult::confirmed) {
    // The durable outbox's own delivery loop (Wolverine's durability agent) retries what is
    // left; the handler faults all the same, as the send threw.
    host_.schedule_account_outbox_sweep();
  }
  require_confirmed(sent.result);
  co_return Outcome::ack;
}

// The pre-check: Marten's session lookup of the inbox document, or the external seen-set.
// Traces the dedupe hit when it finds the message.
bool AccountService::already_seen(const Message& message) {
  switch (config_.account_inbox) {
    case AccountInbox::marten: {
      StatementUse find(statements_->document_find);
      find->bind(1, message.message_id);
      if (!find->executeStep()) return false;
      dedupe_hit(Probe::dedupe_marten_precheck, me(), message,
                 "marten inbox: document " + message.message_id + " exists, acked without effect");
      return true;
    }
    case AccountInbox::external_before:
    case AccountInbox::external_after:
      if (!host_.seen_store().contains(seen_key(message))) {
        // Traced, because the race of two instances (scenario 36) is two of these answers
        // given before either mark: the check and the mark are two calls to the store.
        TraceEvent event = event_about(EventKind::dedupe_record, host_.now_ms(), me(), message);
        event.detail = "external seen-set: checked " + message.message_id +
                       ", not marked (check-then-add: the mark is a separate call)";
        host_.record(std::move(event));
        return false;
      }
      dedupe_hit(config_.account_inbox == AccountInbox::external_before
                     ? Probe::dedupe_account_external_before
                     : Probe::dedupe_account_external_after,
                 me(), message,
                 "external seen-set: message " + message.message_id +
                     " already marked, acked without effect");
      return true;
    case AccountInbox::none:
    case AccountInbox::masstransit: return false;
  }
  INBOXSIM_ASSERT(false);
}

// The business transaction of the swept modes (with the Marten document). Returns false when
// the document's key rejected a concurrent duplicate (Marten's backstop), or when the handler
// took the rich append's version conflict for one (account.ledger_conflict = ack): rolled back
// and acked. `read_version` is the stream version the rich append read before the write.
bool AccountService::commit_business(const Message& message, std::optional<int64_t> read_version) {
  UnitOfWork work(*this);
  if (config_.account_inbox == AccountInbox::marten) {
    // Marten's batch runs the event operations before the document operations
    // (UnitOfWork.AllOperations), so the stream's version check comes before the document's key.
    if (read_version && stream_conflict(message, *read_version)) return false;
    try {
      insert_document(message);
    } catch (const SQLite::Exception& error) {
      if (!is_unique_violation(error)) throw;
      dedupe_hit(Probe::dedupe_marten_backstop, me(), message,
                 "marten inbox: message " + message.message_id +
                     " was stored meanwhile by a concurrent delivery: the document's primary key "
                     "rejected it (the backstop), rolled back, acked without effect");
      return false;
    }
    crash_point(CrashPoint::after_dedupe, message);
  }
  consume(message);
  crash_point(CrashPoint::after_effect, message);
  commit(work);
  return true;
}

// The stream a command appends its event to: the source's for a debit or a refund, the
// destination's for a credit.
const std::string& AccountService::stream_of(const Message& message) {
  return message.type == MessageType::credit_requested ? message.to : message.from;
}

// The stream's version as committed (0: no event yet).
int64_t AccountService::stream_version(const std::string& account) {
  StatementUse query(statements_->stream_version);
  query->bind(1, account);
  const bool has_row = query->executeStep();
  INBOXSIM_ASSERT(has_row);
  return query->getColumn(0).getInt64();
}

// Whether the command appends an event at all: a refused debit or credit appends none, and
// Marten then has no stream to check.
bool AccountService::appends_event(const Message& message) {
  switch (message.type) {
    case MessageType::transfer_requested:
      return !debit_refusal(message) || debit_applied_before(message);
    case MessageType::credit_requested: {
      const std::optional<Account> destination = find_account(message.to);
      return destination && !destination->closed;
    }
    case MessageType::refund_requested: return true;
    default: INBOXSIM_ASSERT(false);
  }
  return false;
}

// Marten's rich append (EventAppendMode.Rich, Marten 8's default): the events were numbered
// from the version read before the write, and the write is `update mt_streams set version = $1
// where id = $2 and version = $3`, then the events' insert under the unique (stream_id,
// version) key. A concurrent append committed since the read makes both fail: Postgres raises
// 23505 on pk_mt_events_stream_and_version, which Marten reports as
// EventStreamUnexpectedMaxEventIdException. The handler faults (then account.retry, or the
// error queue). A handler that treats every unique violation as a duplicate
// (account.ledger_conflict = ack) acks instead: returns true, and the transaction rolls back
// with no debit. Returns false when the stream has not moved or the command appends nothing.
bool AccountService::stream_conflict(const Message& message, int64_t read_version) {
  const std::string& stream = stream_of(message);
  const int64_t version = stream_version(stream);
  if (version == read_version || !appends_event(message)) return false;
  if (config_.account_ledger_conflict == LedgerConflict::fault) {
    throw ConsumerFault{
        "EventStreamUnexpectedMaxEventIdException: a concurrent append moved the stream since "
        "its version was read, and the event's (stream_id, version) key rejected the write"};
  }
  dedupe_hit(Probe::dedupe_ledger_key_ack, me(), message,
             "any unique violation as a duplicate: message " + message.message_id +
                 " taken for one, but stream " + stream + " was at version " +
                 std::to_string(read_version) + " when read and is at " + std::to_string(version) +
                 " (a concurrent append), so the event's (stream_id, "
                 "version) key rejected version " +
                 std::to_string(read_version + 1) +
                 "; rolled back, nothing applied, acked without effect");
  return true;
}

void AccountService::insert_document(const Message& message) {
  StatementUse insert(statements_->document_insert);
  insert->bind(1, message.message_id);
  insert->bind(2, static_cast<int64_t>(host_.now_ms()));
  insert->exec();
  note_dedupe_record(me(), message,
                     "marten inbox: document " + message.message_id +
                         " stored, in one transaction with the event append");
}

// Publishes the outbox rows not yet delivered, in order, until a confirm is lost.
AccountService::OutboxSend AccountService::send_pending_outbox() {
  std::vector<std::pair<int64_t, MessagePtr>> rows;
  {
    StatementUse pending(statements_->outbox_pending);
    while (pending->executeStep()) {
      rows.emplace_back(pending->getColumn(0).getInt64(), message_from_outbox_row(*pending));
    }
  }
  OutboxSend sent;
  sent.batch_full = static_cast<int64_t>(rows.size()) == kSweepBatchRows;
  for (const auto& [seq, message] : rows) {
    sent.result = host_.publish_and_confirm(message);
    if (sent.result != PublishResult::confirmed) break;
    sent.confirmed_seqs.push_back(seq);
  }
  return sent;
}

void AccountService::mark_outbox_sent(const std::vector<int64_t>& seqs) {
  if (seqs.empty()) return;
  UnitOfWork work(*this);
  for (const int64_t seq : seqs) {
    StatementUse mark(statements_->outbox_mark_seq);
    mark->bind(1, static_cast<int64_t>(host_.now_ms()));
    mark->bind(2, static_cast<int64_t>(seq));
    mark->exec();
  }
  commit(work);
}

bool AccountService::sweep_outbox() {
  const OutboxSend sent = send_pending_outbox();
  mark_outbox_sent(sent.confirmed_seqs);
  const bool all_confirmed = sent.result == PublishResult::confirmed;
  if (all_confirmed && sent.batch_full) host_.schedule_account_outbox_sweep();
  return all_confirmed;
}

void AccountService::consume(const Message& message) {
  switch (message.type) {
    case MessageType::transfer_requested: debit(message); return;
    case MessageType::credit_requested: credit(message); return;
    case MessageType::refund_requested: refund(message); return;
    default: INBOXSIM_ASSERT(false);
  }
}

bool AccountService::debit_rejected_before(const Message& message) {
  if (!config_.account_remember_rejections) return false;
  StatementUse find(statements_->rejected_find);
  find->bind(1, message.transfer);
  return find->executeStep();
}

// With account.remember_rejections the per-transfer key covers both outcomes of a debit. A
// transfer that has a DEBIT was decided: a later copy of its Transfer.Requested (past the inbox
// window, its Account.Debited still parked or on the way) is a second debit, not a new request,
// and must not be judged against the balance as it is now. It goes where every second debit
// goes, to the ledger key, which refuses it as account.ledger_conflict says. Looked up only
// when the copy would be rejected, and only when there is a key to send it to: without one the
// copy would debit twice, which is no better than rejecting it.
bool AccountService::debit_applied_before(const Message& message) {
  if (!config_.account_remember_rejections || !config_.account_ledger_unique) return false;
  StatementUse find(statements_->debit_find);
  find->bind(1, message.transfer);
  return find->executeStep();
}

std::optional<std::string> AccountService::debit_refusal(const Message& message) {
  if (debit_rejected_before(message)) return "debit already rejected";
  const std::optional<Account> source = find_account(message.from);
  if (!source) return "unknown account";
  if (source->closed) return "source account closed";
  if (source->balance < message.amount) return "insufficient funds";
  return std::nullopt;
}

void AccountService::debit(const Message& message) {
  const std::optional<std::string> refusal = debit_refusal(message);
  if (refusal && !debit_applied_before(message)) {
    reject(message, MessageType::debit_rejected, message.from, *refusal);
    return;
  }
  if (!apply_entry(message, EntryType::debit, message.from, -message.amount)) return;
  add_outbox(message, MessageType::account_debited, "");
}

void AccountService::credit(const Message& message) {
  const std::optional<Account> destination = find_account(message.to);
  if (!destination || destination->closed) {
    reject(message, MessageType::credit_rejected, message.to,
           destination ? "destination account closed" : "unknown account");
    return;
  }
  if (!apply_entry(message, EntryType::credit, message.to, message.amount)) return;
  add_outbox(message, MessageType::account_credited, "");
}

void AccountService::refund(const Message& message) {
  if (!apply_entry(message, EntryType::refund, message.from, message.amount)) return;
  add_outbox(message, MessageType::account_refunded, "");
}

bool AccountService::apply_entry(const Message& message, EntryType type, const std::string& account,
                                 int64_t delta) {
  try {
    StatementUse insert(statements_->ledger_insert);
    insert->bind(1, message.transfer);
    insert->bind(2, std::string(entry_type_name(type)));
    insert->bind(3, account);
    insert->bind(4, static_cast<int64_t>(delta));
    insert->bind(5, static_cast<int64_t>(host_.now_ms()));
    insert->exec();
  } catch (const SQLite::Exception& error) {
    if (!is_unique_violation(error)) throw;
    host_.reached(Probe::ledger_key_rejected);
    if (config_.account_ledger_conflict == LedgerConflict::fault) {
      throw ConsumerFault{"ledger unique index (transfer_id, type) rejected a second entry"};
    }
    note_entry_already_applied(message, type);
    return false;
  }
  int64_t balance = 0;
  {
    StatementUse update(statements_->balance_add);
    update->bind(1, static_cast<int64_t>(delta));
    update->bind(2, account);
    const bool updated = update->executeStep();
    INBOXSIM_ASSERT(updated);
    balance = update->getColumn(0).getInt64();
  }
  pending_.ledger.push_back(LedgerEntry{message.transfer, type, account, delta});
  pending_.balances.push_back(BalanceWrite{account, balance});
  TraceEvent event = event_about(EventKind::effect, host_.now_ms(), me(), message);
  event.account = account;
  event.amount = delta;
  event.detail = std::string(entry_type_name(type));
  pending_.events.push_back(std::move(event));
  return true;
}

// account.ledger_conflict = ack: the consumer catches the key violation and treats the command
// as done. SQLite rolls back only the failed INSERT and keeps the transaction open; a Postgres
// consumer would look the entry up first, or wrap the insert in a savepoint, to the same end.
// The delivery counts as a dedupe hit, reported when the transaction commits.
void AccountService::note_entry_already_applied(const Message& message, EntryType type) {
  host_.reached(Probe::dedupe_ledger_key_ack);
  TraceEvent event = event_about(EventKind::dedupe_hit, host_.now_ms(), me(), message);
  event.detail = "ledger key: (" + message.transfer + ", " + std::string(entry_type_name(type)) +
                 ") already applied: the consumer treats the command as done, no change, no "
                 "reply, acked without effect";
  pending_.events.push_back(std::move(event));
}

void AccountService::reject(const Message& message, MessageType reply, const std::string& account,
                            const std::string& reason) {
  TraceEvent event = event_about(EventKind::rejected, host_.now_ms(), me(), message);
  event.account = account;
  event.detail = reason;
  pending_.events.push_back(std::move(event));
  if (reply == MessageType::debit_rejected && config_.account_remember_rejections) {
    StatementUse insert(statements_->rejected_insert);
    insert->bind(1, message.transfer);
    insert->exec();
  }
  add_outbox(message, reply, reason);
}

void AccountService::add_outbox(const Message& message, MessageType type,
                                const std::string& reason) {
  StatementUse insert(statements_->outbox_insert);
  insert->bind(1, message.message_id);
  insert->bind(2, host_.next_message_id());
  insert->bind(3, std::string(message_type_name(type)));
  insert->bind(4, message.transfer);
  insert->bind(5, message.from);
  insert->bind(6, message.to);
  insert->bind(7, static_cast<int64_t>(message.amount));
  insert->bind(8, reason);
  insert->bind(9, static_cast<int64_t>(host_.now_ms()));
  insert->exec();
  pending_.outbox_written = true;
}

std::optional<AccountService::Account> AccountService::find_account(const std::string& name) {
  StatementUse find(statements_->account_find);
  find->bind(1, name);
  if (!find->executeStep()) return std::nullopt;
  return Account{find->getColumn(0).getInt64(), find->getColumn(1).getInt() != 0};
}

void AccountService::restart() {
  // MassTransit's consumer outbox is only re-sent by a redelivery; the swept outboxes of the
  // other modes have a delivery loop that resumes when the process does.
  if (config_.account_inbox != AccountInbox::masstransit) host_.schedule_account_outbox_sweep();
}

CleanupCounts AccountService::cleanup_inbox(int64_t as_of_ms) {
  const int64_t cutoff = as_of_ms - config_.account_inbox_window_ms;
  // Wolverine keeps a handled envelope KeepAfterMessageHandling, its own window.
  const int64_t document_cutoff = as_of_ms - config_.account_keep_after_handling_ms;
  if (cutoff <= 0 && document_cutoff <= 0) return {};
  UnitOfWork work(*this);
  int64_t deleted = 0;
  if (cutoff > 0) deleted += cleanup_inbox_state(cutoff);
  if (document_cutoff > 0) {
    StatementUse documents(statements_->document_cleanup);
    documents->bind(1, static_cast<int64_t>(document_cutoff));
    deleted += documents->exec();
  }
  int64_t outbox_deleted = 0;
  if (cutoff > 0) {
    StatementUse outbox(statements_->outbox_cleanup);
    outbox->bind(1, static_cast<int64_t>(cutoff));
    outbox_deleted = outbox->exec();
  }
  // One unit of work deletes both: returning before the commit when only outbox rows went
  // would roll their delete back, and the outboxes of the modes without an inbox row (none,
  // the external seen-sets) would never shrink.
  if (deleted == 0 && outbox_deleted == 0) return {};
  commit(work);
  return {deleted, outbox_deleted};
}

// InboxCleanupService.CleanUpInboxState: deletes the expired InboxState rows (delivered before
// the cutoff) in batches of QueryMessageLimit, oldest delivered first, one DELETE a batch, and
// runs again at once while a batch removed rows. Since v8.3.0 OutboxMessage has a foreign key
// to InboxState (MessageId, ConsumerId) with no cascade, so a batch holding a row whose outbox
// messages were never removed (pass 5 never ran) fails as a whole, and so does every later
// attempt: the batch is always the oldest. Returns the rows deleted.
int64_t AccountService::cleanup_inbox_state(int64_t cutoff) {
  if (config_.account_inbox == AccountInbox::masstransit &&
      config_.account_masstransit != MassTransitVersion::v8_2) {
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

std::optional<std::vector<std::string>> AccountService::drop_index(IndexName index) {
  switch (index) {
    case IndexName::account_ledger: {
      std::vector<std::string> sql = index_statements(db_, {"ledger_transfer_type"});
      db_.exec("DROP INDEX IF EXISTS ledger_transfer_type");
      return sql;
    }
    case IndexName::account_inbox_state: {
      std::vector<std::string> sql =
          index_statements(db_, {"inbox_state_key", "inbox_documents_key"});
      // Dropped as the seed's experiment drops it: the key goes, lookups scan.
      db_.exec("DROP INDEX IF EXISTS inbox_state_key");
      db_.exec("DROP INDEX IF EXISTS inbox_documents_key");
      return sql;
    }
    case IndexName::transfer_processed_messages: return std::nullopt;
  }
  return std::nullopt;
}

void AccountService::create_index(const std::string& sql) { db_.exec(sql); }

std::map<std::string, int64_t> AccountService::balances() {
  std::map<std::string, int64_t> out;
  StatementUse query(connection_.prepared("SELECT name, balance FROM accounts ORDER BY name"));
  while (query->executeStep())
    out[query->getColumn(0).getString()] = query->getColumn(1).getInt64();
  return out;
}

std::vector<LedgerEntry> AccountService::ledger() {
  std::vector<LedgerEntry> out;
  for_each_ledger_entry([&](const LedgerEntry& entry) { out.push_back(entry); });
  return out;
}

void AccountService::for_each_ledger_entry(const std::function<void(const LedgerEntry&)>& visit) {
  StatementUse query(
      connection_.prepared("SELECT transfer_id, type, account, amount FROM ledger ORDER BY id"));
  while (query->executeStep()) {
    const auto type = parse_entry_type(query->getColumn(1).getString());
    INBOXSIM_ASSERT(type.has_value());
    visit(LedgerEntry{query->getColumn(0).getString(), *type, query->getColumn(2).getString(),
                      query->getColumn(3).getInt64()});
  }
}

int64_t AccountService::undelivered_outbox_rows() {
  StatementUse count(statements_->outbox_undelivered);
  const bool has_row = count->executeStep();
  INBOXSIM_ASSERT(has_row);
  return count->getColumn(0).getInt64();
}

std::string AccountService::seen_key(const Message& message) const {
  return message.message_id + "|" + std::string(kConsumerId);
}

}  // namespace inboxsim
