#include "services/account_service.h"

#include "domain/participants.h"
#include "kernel/assert.h"
#include "services/sql.h"

namespace inboxsim {

namespace {

constexpr std::string_view kConsumerId = "account-consumer";
// Rows one outbox sweep sends at most; a sweep that leaves rows asks for another.
constexpr int64_t kSweepBatchRows = 256;

void create_schema(SQLite::Database& db, const Config& config) {
  db.exec(
      "CREATE TABLE accounts (name TEXT PRIMARY KEY, balance INTEGER NOT NULL,"
      "  closed INTEGER NOT NULL);"
      "CREATE TABLE inbox_state (id INTEGER PRIMARY KEY, message_id TEXT NOT NULL,"
      "  consumer_id TEXT NOT NULL, received_ms INTEGER NOT NULL, receive_count INTEGER NOT NULL,"
      "  consumed_ms INTEGER, delivered_ms INTEGER);"
      "CREATE UNIQUE INDEX inbox_state_key ON inbox_state (message_id, consumer_id);"
      "CREATE INDEX inbox_state_delivered ON inbox_state (delivered_ms);"
      "CREATE TABLE inbox_documents (id INTEGER PRIMARY KEY, message_id TEXT NOT NULL,"
      "  received_ms INTEGER NOT NULL);"
      "CREATE UNIQUE INDEX inbox_documents_key ON inbox_documents (message_id);"
      "CREATE INDEX inbox_documents_received ON inbox_documents (received_ms);"
      "CREATE TABLE outbox (seq INTEGER PRIMARY KEY, inbox_message_id TEXT NOT NULL,"
      "  message_id TEXT NOT NULL, type TEXT NOT NULL, transfer_id TEXT NOT NULL,"
      "  from_account TEXT NOT NULL, to_account TEXT NOT NULL, amount INTEGER NOT NULL,"
      "  reason TEXT NOT NULL, created_ms INTEGER NOT NULL, delivered_ms INTEGER);"
      "CREATE INDEX outbox_inbox ON outbox (inbox_message_id);"
      "CREATE INDEX outbox_pending ON outbox (seq) WHERE delivered_ms IS NULL;"
      "CREATE INDEX outbox_delivered ON outbox (delivered_ms);");
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
  } else {
    db.exec(
        "CREATE TABLE ledger (id INTEGER PRIMARY KEY, transfer_id TEXT NOT NULL,"
        "  type TEXT NOT NULL, account TEXT NOT NULL, amount INTEGER NOT NULL,"
        "  created_ms INTEGER NOT NULL);");
    if (config.account_ledger_unique) {
      db.exec("CREATE UNIQUE INDEX ledger_transfer_type ON ledger (transfer_id, type)");
    }
  }
  // The per-transfer key also remembers a rejected debit: a late duplicate of its
  // Transfer.Requested (past the inbox window) must not debit a transfer the saga rejected.
  db.exec("CREATE TABLE rejected_debits (transfer_id TEXT PRIMARY KEY)");
}

SQLite::Database open_with_schema(const std::string& path, const Config& config) {
  // The key names every config choice create_schema() depends on.
  std::string schema_key = config.account_inbox == AccountInbox::marten ? "marten" : "ledger";
  if (config.account_ledger_unique) schema_key += "+unique";
  return open_service_database(path, schema_key,
                               [&config](SQLite::Database& db) { create_schema(db, config); });
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

// A transaction that starts a fresh CommitRecord: what a rolled-back attempt collected must
// never reach the checker.
struct UnitOfWork {
  UnitOfWork(SQLite::Database& db, CommitRecord& record) : transaction(db) { record.clear(); }
  SQLite::Transaction transaction;
};

}  // namespace

// Every statement the service runs, prepared once.
struct AccountService::Statements {
  explicit Statements(SQLite::Database& db, const Config& config)
      : account_find(db, "SELECT balance, closed FROM accounts WHERE name = ?"),
        account_insert(db, "INSERT INTO accounts (name, balance, closed) VALUES (?, ?, ?)"),
        balance_add(db,
                    "UPDATE accounts SET balance = balance + ? WHERE name = ? RETURNING balance"),
        ledger_insert(db, ledger_insert_sql(config)),
        outbox_insert(db,
                      "INSERT INTO outbox (inbox_message_id, message_id, type, transfer_id,"
                      " from_account, to_account, amount, reason, created_ms)"
                      " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"),
        outbox_for_inbox(
            db,
            std::string("SELECT ") + kOutboxColumns +
                " FROM outbox WHERE inbox_message_id = ? AND delivered_ms IS NULL ORDER BY seq"),
        outbox_pending(db, std::string("SELECT ") + kOutboxColumns +
                               " FROM outbox WHERE delivered_ms IS NULL ORDER BY seq LIMIT " +
                               std::to_string(kSweepBatchRows)),
        outbox_mark_seq(db, "UPDATE outbox SET delivered_ms = ? WHERE seq = ?"),
        outbox_mark_inbox(db,
                          "UPDATE outbox SET delivered_ms = ?"
                          " WHERE inbox_message_id = ? AND delivered_ms IS NULL"),
        outbox_undelivered(db, "SELECT COUNT(*) FROM outbox WHERE delivered_ms IS NULL"),
        outbox_cleanup(db, "DELETE FROM outbox WHERE delivered_ms < ?"),
        inbox_insert(db,
                     "INSERT OR IGNORE INTO inbox_state"
                     " (message_id, consumer_id, received_ms, receive_count) VALUES (?, ?, ?, 0)"),
        inbox_find(db,
                   "SELECT id, consumed_ms IS NOT NULL, delivered_ms IS NOT NULL FROM inbox_state"
                   " WHERE message_id = ? AND consumer_id = ? ORDER BY id DESC LIMIT 1"),
        inbox_bump(db, "UPDATE inbox_state SET receive_count = receive_count + 1 WHERE id = ?"),
        inbox_consumed(db, "UPDATE inbox_state SET consumed_ms = ? WHERE id = ?"),
        inbox_delivered(db, "UPDATE inbox_state SET delivered_ms = ? WHERE id = ?"),
        inbox_cleanup(db, "DELETE FROM inbox_state WHERE delivered_ms < ?"),
        document_find(db, "SELECT 1 FROM inbox_documents WHERE message_id = ?"),
        document_insert(db, "INSERT INTO inbox_documents (message_id, received_ms) VALUES (?, ?)"),
        document_cleanup(db, "DELETE FROM inbox_documents WHERE received_ms < ?"),
        rejected_find(db, "SELECT 1 FROM rejected_debits WHERE transfer_id = ?"),
        rejected_insert(db, "INSERT OR IGNORE INTO rejected_debits (transfer_id) VALUES (?)") {}

  LazyStatement account_find;
  LazyStatement account_insert;
  LazyStatement balance_add;
  LazyStatement ledger_insert;
  LazyStatement outbox_insert;
  LazyStatement outbox_for_inbox;
  LazyStatement outbox_pending;
  LazyStatement outbox_mark_seq;
  LazyStatement outbox_mark_inbox;
  LazyStatement outbox_undelivered;
  LazyStatement outbox_cleanup;
  LazyStatement inbox_insert;
  LazyStatement inbox_find;
  LazyStatement inbox_bump;
  LazyStatement inbox_consumed;
  LazyStatement inbox_delivered;
  LazyStatement inbox_cleanup;
  LazyStatement document_find;
  LazyStatement document_insert;
  LazyStatement document_cleanup;
  LazyStatement rejected_find;
  LazyStatement rejected_insert;
};

AccountService::AccountService(ServiceHost& host, const Config& config, const std::string& db_path)
    : host_(host),
      config_(config),
      db_(open_with_schema(db_path, config)),
      statements_(std::make_unique<Statements>(db_, config)) {}

AccountService::~AccountService() = default;

void AccountService::open_accounts(const std::map<std::string, AccountSpec>& accounts) {
  UnitOfWork work(db_, pending_);
  for (const auto& [name, spec] : accounts) {
    StatementUse insert(statements_->account_insert);
    insert->bind(1, name);
    insert->bind(2, static_cast<int64_t>(spec.balance));
    insert->bind(3, spec.closed ? 1 : 0);
    insert->exec();
  }
  work.transaction.commit();
}

Outcome AccountService::handle(const Delivery& delivery) {
  const Message& message = *delivery.message;
  INBOXSIM_ASSERT(is_transfer_command(message.type));
  crash_point(CrashPoint::before_tx, message);
  switch (config_.account_inbox) {
    case AccountInbox::masstransit: return handle_masstransit(message);
    case AccountInbox::marten: return handle_marten(message);
    case AccountInbox::none:
    case AccountInbox::external_before:
    case AccountInbox::external_after: return handle_plain(message);
  }
  INBOXSIM_ASSERT(false);
}

// MassTransit's EF inbox, in its separate transactions: (1) record the delivery, (2) lock the
// row, count it and run the consumer if it was never consumed, (3) send the outbox rows the
// consumer produced, with their stored ids, and mark the row delivered, (4) ack.
Outcome AccountService::handle_masstransit(const Message& message) {
  inbox_receive(message);
  crash_point(CrashPoint::after_dedupe, message);
  const InboxRow inbox = inbox_consume(message);
  if (inbox.consumed && inbox.delivered) {
    dedupe_hit(message,
               "inbox: message " + message.message_id + " already consumed, acked without effect");
    return Outcome::ack;
  }
  if (inbox.consumed) {
    dedupe_hit(message, "inbox: message " + message.message_id +
                            " already consumed but its outbox not delivered: re-sending the "
                            "stored messages with their stored ids");
  }
  crash_point(CrashPoint::after_commit, message);
  if (!send_inbox_outbox(message.message_id)) {
    throw ConsumerFault{"publisher confirm lost while sending the outbox"};
  }
  crash_point(CrashPoint::after_outbox_send, message);
  inbox_delivered(message, inbox.row);
  return Outcome::ack;
}

// Step 1 relies on the (message_id, consumer_id) key to reject a second row, as MassTransit
// relies on the InboxState key.
void AccountService::inbox_receive(const Message& message) {
  UnitOfWork work(db_, pending_);
  StatementUse insert(statements_->inbox_insert);
  insert->bind(1, message.message_id);
  insert->bind(2, std::string(kConsumerId));
  insert->bind(3, static_cast<int64_t>(host_.now_ms()));
  if (insert->exec() == 1) {
    note_dedupe_record(message, "inbox: row (" + message.message_id + ", " +
                                    std::string(kConsumerId) +
                                    ") inserted and committed, consumed still null");
  }
  commit(work.transaction);
}

// Step 2: the newest row for the key, counted; the consumer runs only if it never consumed.
AccountService::InboxRow AccountService::inbox_consume(const Message& message) {
  UnitOfWork work(db_, pending_);
  InboxRow inbox;
  {
    StatementUse find(statements_->inbox_find);
    find->bind(1, message.message_id);
    find->bind(2, std::string(kConsumerId));
    const bool found = find->executeStep();
    INBOXSIM_ASSERT(found);
    inbox.row = find->getColumn(0).getInt64();
    inbox.consumed = find->getColumn(1).getInt() != 0;
    inbox.delivered = find->getColumn(2).getInt() != 0;
  }
  {
    StatementUse bump(statements_->inbox_bump);
    bump->bind(1, static_cast<int64_t>(inbox.row));
    bump->exec();
  }
  if (!inbox.consumed) {
    consume(message, message.message_id);
    crash_point(CrashPoint::after_effect, message);
    StatementUse mark(statements_->inbox_consumed);
    mark->bind(1, static_cast<int64_t>(host_.now_ms()));
    mark->bind(2, static_cast<int64_t>(inbox.row));
    mark->exec();
    note_dedupe_record(message, "inbox: " + message.message_id +
                                    " marked consumed, in one transaction with its effect and "
                                    "outbox rows");
  }
  commit(work.transaction);
  return inbox;
}

// Step 3, after the outbox was sent: the row and the outbox rows are marked delivered.
void AccountService::inbox_delivered(const Message& message, int64_t row) {
  UnitOfWork work(db_, pending_);
  {
    StatementUse mark(statements_->inbox_delivered);
    mark->bind(1, static_cast<int64_t>(host_.now_ms()));
    mark->bind(2, static_cast<int64_t>(row));
    mark->exec();
  }
  StatementUse mark_outbox(statements_->outbox_mark_inbox);
  mark_outbox->bind(1, static_cast<int64_t>(host_.now_ms()));
  mark_outbox->bind(2, message.message_id);
  mark_outbox->exec();
  note_dedupe_record(
      message, "inbox: " + message.message_id + " marked delivered, its outbox messages sent");
  commit(work.transaction);
}

// Marten: the inbox document is looked up first and inserted in the same transaction as the
// event append; its unique key is only the backstop for a concurrent duplicate.
Outcome AccountService::handle_marten(const Message& message) {
  {
    UnitOfWork work(db_, pending_);
    bool seen = false;
    {
      StatementUse find(statements_->document_find);
      find->bind(1, message.message_id);
      seen = find->executeStep();
    }
    if (seen) {
      dedupe_hit(message,
                 "marten inbox: document " + message.message_id + " exists, acked without effect");
    } else {
      try {
        StatementUse insert(statements_->document_insert);
        insert->bind(1, message.message_id);
        insert->bind(2, static_cast<int64_t>(host_.now_ms()));
        insert->exec();
        note_dedupe_record(message, "marten inbox: document " + message.message_id +
                                        " stored, in one transaction with the event append");
      } catch (const SQLite::Exception& error) {
        if (!is_unique_violation(error)) throw;
        throw ConsumerFault{"inbox document key rejected a concurrent duplicate"};
      }
      crash_point(CrashPoint::after_dedupe, message);
      consume(message, message.message_id);
      crash_point(CrashPoint::after_effect, message);
      commit(work.transaction);
      crash_point(CrashPoint::after_commit, message);
    }
  }
  if (!sweep_outbox(&message))
    throw ConsumerFault{"publisher confirm lost while sending the outbox"};
  return Outcome::ack;
}

// No inbox, or the seed's "Redis SET" beside the database: marked before the business commit
// (a crash in between loses the work) or after it (a crash in between does it twice).
Outcome AccountService::handle_plain(const Message& message) {
  const bool before = config_.account_inbox == AccountInbox::external_before;
  const bool after = config_.account_inbox == AccountInbox::external_after;
  ExternalSeenStore& seen = host_.seen_store(ServiceId::account);
  const std::string key = seen_key(message);
  if ((before || after) && seen.contains(key)) {
    dedupe_hit(message, "external seen-set: message " + message.message_id +
                            " already marked, acked without effect");
    if (!sweep_outbox(&message)) throw ConsumerFault{"publisher confirm lost"};
    return Outcome::ack;
  }
  crash_point(CrashPoint::after_dedupe, message);
  if (before) {
    mark_seen(seen, key, message, "before");
    crash_point(CrashPoint::after_mark, message);
  }
  {
    UnitOfWork work(db_, pending_);
    consume(message, message.message_id);
    crash_point(CrashPoint::after_effect, message);
    commit(work.transaction);
  }
  crash_point(CrashPoint::after_commit, message);
  if (after) {
    mark_seen(seen, key, message, "after");
    crash_point(CrashPoint::after_mark, message);
  }
  if (!sweep_outbox(&message))
    throw ConsumerFault{"publisher confirm lost while sending the outbox"};
  return Outcome::ack;
}

void AccountService::consume(const Message& message, const std::string& inbox_message_id) {
  switch (message.type) {
    case MessageType::transfer_requested: debit(message, inbox_message_id); return;
    case MessageType::credit_requested: credit(message, inbox_message_id); return;
    case MessageType::refund_requested: refund(message, inbox_message_id); return;
    default: INBOXSIM_ASSERT(false);
  }
}

bool AccountService::debit_rejected_before(const Message& message) {
  if (!config_.account_ledger_unique) return false;
  StatementUse find(statements_->rejected_find);
  find->bind(1, message.transfer);
  return find->executeStep();
}

void AccountService::debit(const Message& message, const std::string& inbox_message_id) {
  const std::optional<Account> source = find_account(message.from);
  if (debit_rejected_before(message)) {
    reject(message, MessageType::debit_rejected, message.from, "debit already rejected",
           inbox_message_id);
  } else if (!source) {
    reject(message, MessageType::debit_rejected, message.from, "unknown account", inbox_message_id);
  } else if (source->closed) {
    reject(message, MessageType::debit_rejected, message.from, "source account closed",
           inbox_message_id);
  } else if (source->balance < message.amount) {
    reject(message, MessageType::debit_rejected, message.from, "insufficient funds",
           inbox_message_id);
  } else {
    apply_entry(message, EntryType::debit, message.from, -message.amount);
    add_outbox(message, MessageType::account_debited, "", inbox_message_id);
  }
}

void AccountService::credit(const Message& message, const std::string& inbox_message_id) {
  const std::optional<Account> destination = find_account(message.to);
  if (!destination || destination->closed) {
    reject(message, MessageType::credit_rejected, message.to,
           destination ? "destination account closed" : "unknown account", inbox_message_id);
    return;
  }
  apply_entry(message, EntryType::credit, message.to, message.amount);
  add_outbox(message, MessageType::account_credited, "", inbox_message_id);
}

void AccountService::refund(const Message& message, const std::string& inbox_message_id) {
  apply_entry(message, EntryType::refund, message.from, message.amount);
  add_outbox(message, MessageType::account_refunded, "", inbox_message_id);
}

void AccountService::apply_entry(const Message& message, EntryType type, const std::string& account,
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
    throw ConsumerFault{"ledger unique index (transfer_id, type) rejected a second entry"};
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
  TraceEvent event =
      event_about(EventKind::effect, host_.now_ms(), participant::account_service, message);
  event.account = account;
  event.amount = delta;
  event.detail = std::string(entry_type_name(type));
  pending_.events.push_back(std::move(event));
}

void AccountService::reject(const Message& message, MessageType reply, const std::string& account,
                            const std::string& reason, const std::string& inbox_message_id) {
  TraceEvent event =
      event_about(EventKind::rejected, host_.now_ms(), participant::account_service, message);
  event.account = account;
  event.detail = reason;
  pending_.events.push_back(std::move(event));
  if (reply == MessageType::debit_rejected && config_.account_ledger_unique) {
    StatementUse insert(statements_->rejected_insert);
    insert->bind(1, message.transfer);
    insert->exec();
  }
  add_outbox(message, reply, reason, inbox_message_id);
}

void AccountService::add_outbox(const Message& message, MessageType type, const std::string& reason,
                                const std::string& inbox_message_id) {
  StatementUse insert(statements_->outbox_insert);
  insert->bind(1, inbox_message_id);
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

namespace {

MessagePtr message_from_outbox_row(SQLite::Statement& row) {
  const auto type = parse_message_type(row.getColumn(2).getString());
  INBOXSIM_ASSERT(type.has_value());
  return make_message(row.getColumn(1).getString(), *type, row.getColumn(3).getString(),
                      row.getColumn(4).getString(), row.getColumn(5).getString(),
                      row.getColumn(6).getInt64(), row.getColumn(7).getString(),
                      row.getColumn(8).getInt64());
}

}  // namespace

bool AccountService::send_inbox_outbox(const std::string& inbox_message_id) {
  std::vector<MessagePtr> messages;
  {
    StatementUse rows(statements_->outbox_for_inbox);
    rows->bind(1, inbox_message_id);
    while (rows->executeStep()) messages.push_back(message_from_outbox_row(*rows));
  }
  for (const MessagePtr& message : messages) {
    if (!host_.publish_and_confirm(participant::account_service, message)) return false;
  }
  return true;
}

bool AccountService::sweep_outbox() { return sweep_outbox(nullptr); }

bool AccountService::sweep_outbox(const Message* handling) {
  std::vector<std::pair<int64_t, MessagePtr>> rows;
  {
    StatementUse pending(statements_->outbox_pending);
    while (pending->executeStep()) {
      rows.emplace_back(pending->getColumn(0).getInt64(), message_from_outbox_row(*pending));
    }
  }
  std::vector<int64_t> confirmed;
  bool all_confirmed = true;
  for (const auto& [seq, message] : rows) {
    if (!host_.publish_and_confirm(participant::account_service, message)) {
      all_confirmed = false;
      break;
    }
    confirmed.push_back(seq);
  }
  if (handling != nullptr && !confirmed.empty()) {
    crash_point(CrashPoint::after_outbox_send, *handling);
  }
  if (!confirmed.empty()) {
    UnitOfWork work(db_, pending_);
    for (const int64_t seq : confirmed) {
      StatementUse mark(statements_->outbox_mark_seq);
      mark->bind(1, static_cast<int64_t>(host_.now_ms()));
      mark->bind(2, static_cast<int64_t>(seq));
      mark->exec();
    }
    commit(work.transaction);
  }
  if (all_confirmed && static_cast<int64_t>(rows.size()) == kSweepBatchRows) {
    host_.schedule_account_outbox_sweep();
  }
  return all_confirmed;
}

void AccountService::restart() {
  // MassTransit's consumer outbox is only re-sent by a redelivery; the swept outboxes of the
  // other modes have a delivery loop that resumes when the process does.
  if (config_.account_inbox != AccountInbox::masstransit) host_.schedule_account_outbox_sweep();
}

int64_t AccountService::cleanup_inbox(int64_t as_of_ms) {
  const int64_t cutoff = as_of_ms - config_.account_inbox_window_ms;
  if (cutoff <= 0) return 0;
  UnitOfWork work(db_, pending_);
  int64_t deleted = 0;
  {
    StatementUse inbox(statements_->inbox_cleanup);
    inbox->bind(1, static_cast<int64_t>(cutoff));
    deleted += inbox->exec();
  }
  {
    StatementUse documents(statements_->document_cleanup);
    documents->bind(1, static_cast<int64_t>(cutoff));
    deleted += documents->exec();
  }
  {
    StatementUse outbox(statements_->outbox_cleanup);
    outbox->bind(1, static_cast<int64_t>(cutoff));
    outbox->exec();
  }
  if (deleted == 0) return 0;
  commit(work.transaction);
  return deleted;
}

bool AccountService::drop_index(IndexName index) {
  switch (index) {
    case IndexName::account_ledger:
      db_.exec("DROP INDEX IF EXISTS ledger_transfer_type");
      return true;
    case IndexName::account_inbox_state:
      db_.exec("DROP INDEX IF EXISTS inbox_state_key");
      db_.exec("DROP INDEX IF EXISTS inbox_documents_key");
      return true;
    case IndexName::transfer_processed_messages: return false;
  }
  return false;
}

std::map<std::string, int64_t> AccountService::balances() {
  std::map<std::string, int64_t> out;
  SQLite::Statement query(db_, "SELECT name, balance FROM accounts ORDER BY name");
  while (query.executeStep()) out[query.getColumn(0).getString()] = query.getColumn(1).getInt64();
  return out;
}

std::vector<LedgerEntry> AccountService::ledger() {
  std::vector<LedgerEntry> out;
  SQLite::Statement query(db_, "SELECT transfer_id, type, account, amount FROM ledger ORDER BY id");
  while (query.executeStep()) {
    const auto type = parse_entry_type(query.getColumn(1).getString());
    INBOXSIM_ASSERT(type.has_value());
    out.push_back(LedgerEntry{query.getColumn(0).getString(), *type, query.getColumn(2).getString(),
                              query.getColumn(3).getInt64()});
  }
  return out;
}

int64_t AccountService::undelivered_outbox_rows() {
  StatementUse count(statements_->outbox_undelivered);
  const bool has_row = count->executeStep();
  INBOXSIM_ASSERT(has_row);
  return count->getColumn(0).getInt64();
}

void AccountService::commit(SQLite::Transaction& transaction) {
  transaction.commit();
  pending_.service = ServiceId::account;
  host_.committed(pending_);
  pending_.clear();
}

void AccountService::dedupe_hit(const Message& message, std::string detail) {
  TraceEvent event =
      event_about(EventKind::dedupe_hit, host_.now_ms(), participant::account_service, message);
  event.detail = std::move(detail);
  host_.record(std::move(event));
}

void AccountService::note_dedupe_record(const Message& message, std::string detail) {
  TraceEvent event =
      event_about(EventKind::dedupe_record, host_.now_ms(), participant::account_service, message);
  event.detail = std::move(detail);
  pending_.events.push_back(std::move(event));
}

void AccountService::mark_seen(ExternalSeenStore& seen, const std::string& key,
                               const Message& message, std::string_view when) {
  seen.mark(key);
  TraceEvent event =
      event_about(EventKind::dedupe_record, host_.now_ms(), participant::account_service, message);
  event.detail = "external seen-set: " + message.message_id + " marked " + std::string(when) +
                 " the business commit, outside its transaction";
  host_.record(std::move(event));
}

std::string AccountService::seen_key(const Message& message) const {
  return message.message_id + "|" + std::string(kConsumerId);
}

void AccountService::crash_point(CrashPoint point, const Message& message) {
  host_.crash_point(ServiceId::account, point, &message);
}

}  // namespace inboxsim
