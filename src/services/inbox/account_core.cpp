#include "services/inbox/account_core.h"

#include "domain/participants.h"
#include "kernel/assert.h"
#include "services/sql.h"

namespace inboxsim {

namespace {

// Rows one outbox sweep sends at most; a sweep that leaves rows asks for another.
constexpr int64_t kSweepBatchRows = 256;

const char* ledger_insert_sql(const Config& config) {
  if (account_inbox_kind(config.account_inbox).event_stream_ledger) {
    return "INSERT INTO account_events (transfer_id, type, account, amount, created_ms, version)"
           " VALUES (?1, ?2, ?3, ?4, ?5,"
           "  (SELECT COALESCE(MAX(version), 0) + 1 FROM account_events WHERE account = ?3))";
  }
  return "INSERT INTO ledger (transfer_id, type, account, amount, created_ms)"
         " VALUES (?1, ?2, ?3, ?4, ?5)";
}

}  // namespace

// The statements of the bank and of the swept outbox, prepared on their connection on first use.
struct AccountCore::Statements {
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
        outbox_pending(db, std::string("SELECT ") + kOutboxColumns +
                               " FROM outbox WHERE delivered_ms IS NULL ORDER BY seq LIMIT " +
                               std::to_string(kSweepBatchRows)),
        outbox_mark_seq(db, "UPDATE outbox SET delivered_ms = ? WHERE seq = ?"),
        outbox_cleanup(db, "DELETE FROM outbox WHERE delivered_ms < ?"),
        rejected_find(db, "SELECT 1 FROM rejected_debits WHERE transfer_id = ?"),
        rejected_insert(db, "INSERT OR IGNORE INTO rejected_debits (transfer_id) VALUES (?)"),
        debit_find(db, "SELECT 1 FROM ledger WHERE transfer_id = ? AND type = 'DEBIT' LIMIT 1") {}

  LazyStatement account_find;
  LazyStatement account_insert;
  LazyStatement balance_add;
  LazyStatement ledger_insert;
  LazyStatement outbox_insert;
  LazyStatement outbox_pending;
  LazyStatement outbox_mark_seq;
  LazyStatement outbox_cleanup;
  LazyStatement rejected_find;
  LazyStatement rejected_insert;
  LazyStatement debit_find;
};

AccountCore::AccountCore(ServiceHost& host, const Config& config, Connection& connection)
    : ServiceCore(host, config, connection, ServiceId::account),
      statements_(std::make_unique<Statements>(connection_, config)) {}

AccountCore::~AccountCore() = default;

void AccountCore::open_accounts(const std::map<std::string, AccountSpec>& accounts) {
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

MessagePtr AccountCore::message_from_outbox_row(SQLite::Statement& row) {
  const auto type = parse_message_type(row.getColumn(2).getString());
  INBOXSIM_ASSERT(type.has_value());
  return make_message(row.getColumn(1).getString(), *type, row.getColumn(3).getString(),
                      row.getColumn(4).getString(), row.getColumn(5).getString(),
                      row.getColumn(6).getInt64(), row.getColumn(7).getString(),
                      row.getColumn(8).getInt64());
}

AccountCore::OutboxSend AccountCore::send_pending_outbox() {
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

void AccountCore::mark_outbox_sent(const std::vector<int64_t>& seqs) {
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

uint64_t AccountCore::sent_digest(const OutboxSend& sent) {
  Hasher digest;
  digest.add(static_cast<uint64_t>(sent.result)).add(sent.batch_full);
  for (const int64_t seq : sent.confirmed_seqs) digest.add_signed(seq);
  return digest.finish().low;
}

void AccountCore::finish_outbox_send(const OutboxSend& sent) {
  mark_outbox_sent(sent.confirmed_seqs);
  if (sent.result != PublishResult::confirmed) {
    // The durable outbox's own delivery loop (Wolverine's durability agent) retries what is
    // left; the handler faults all the same, as the send threw.
    host_.schedule_account_outbox_sweep();
  }
  require_confirmed(sent.result);
}

int64_t AccountCore::cleanup_outbox(int64_t cutoff) {
  StatementUse outbox(statements_->outbox_cleanup);
  outbox->bind(1, static_cast<int64_t>(cutoff));
  return outbox->exec();
}

void AccountCore::consume(const Message& message) {
  switch (message.type) {
    case MessageType::transfer_requested: debit(message); return;
    case MessageType::credit_requested: credit(message); return;
    case MessageType::refund_requested: refund(message); return;
    default: INBOXSIM_ASSERT(false);
  }
}

bool AccountCore::debit_rejected_before(const Message& message) {
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
bool AccountCore::debit_applied_before(const Message& message) {
  if (!config_.account_remember_rejections || !config_.account_ledger_unique) return false;
  StatementUse find(statements_->debit_find);
  find->bind(1, message.transfer);
  return find->executeStep();
}

std::optional<std::string> AccountCore::debit_refusal(const Message& message) {
  if (debit_rejected_before(message)) return "debit already rejected";
  const std::optional<Account> source = find_account(message.from);
  if (!source) return "unknown account";
  if (source->closed) return "source account closed";
  if (source->balance < message.amount) return "insufficient funds";
  return std::nullopt;
}

void AccountCore::debit(const Message& message) {
  const std::optional<std::string> refusal = debit_refusal(message);
  if (refusal && !debit_applied_before(message)) {
    reject(message, MessageType::debit_rejected, message.from, *refusal);
    return;
  }
  if (!apply_entry(message, EntryType::debit, message.from, -message.amount)) return;
  add_outbox(message, MessageType::account_debited, "");
}

void AccountCore::credit(const Message& message) {
  const std::optional<Account> destination = find_account(message.to);
  if (!destination || destination->closed) {
    reject(message, MessageType::credit_rejected, message.to,
           destination ? "destination account closed" : "unknown account");
    return;
  }
  if (!apply_entry(message, EntryType::credit, message.to, message.amount)) return;
  add_outbox(message, MessageType::account_credited, "");
}

void AccountCore::refund(const Message& message) {
  if (!apply_entry(message, EntryType::refund, message.from, message.amount)) return;
  add_outbox(message, MessageType::account_refunded, "");
}

bool AccountCore::apply_entry(const Message& message, EntryType type, const std::string& account,
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
      throw ConsumerFault{"ledger unique index (transfer_id, type) rejected a second entry",
                          FaultCause::ledger_key};
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
  event.entry = type;
  event.detail = std::string(entry_type_name(type));
  pending_.events.push_back(std::move(event));
  return true;
}

// account.ledger_conflict = ack: the consumer catches the key violation and treats the command
// as done. SQLite rolls back only the failed INSERT and keeps the transaction open; a Postgres
// consumer would look the entry up first, or wrap the insert in a savepoint, to the same end.
// The delivery counts as a dedupe hit, reported when the transaction commits.
void AccountCore::note_entry_already_applied(const Message& message, EntryType type) {
  host_.reached(Probe::dedupe_ledger_key_ack);
  TraceEvent event = event_about(EventKind::dedupe_hit, host_.now_ms(), me(), message);
  event.dedupe_step = DedupeStep::ledger_entry_exists;
  event.detail = "ledger key: (" + message.transfer + ", " + std::string(entry_type_name(type)) +
                 ") already applied: the consumer treats the command as done, no change, no "
                 "reply, acked without effect";
  pending_.events.push_back(std::move(event));
}

void AccountCore::reject(const Message& message, MessageType reply, const std::string& account,
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

void AccountCore::add_outbox(const Message& message, MessageType type, const std::string& reason) {
  StatementUse insert(statements_->outbox_insert);
  insert->bind(1, message.message_id);
  insert->bind(2, host_.next_message_id(message.message_id));
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

std::optional<AccountCore::Account> AccountCore::find_account(const std::string& name) {
  StatementUse find(statements_->account_find);
  find->bind(1, name);
  if (!find->executeStep()) return std::nullopt;
  return Account{find->getColumn(0).getInt64(), find->getColumn(1).getInt() != 0};
}

std::string AccountCore::seen_key(const Message& message) const {
  return message.message_id + "|" + std::string(kAccountConsumerId);
}

}  // namespace inboxsim
