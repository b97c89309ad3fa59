#include "services/account_service.h"

#include <array>

#include "kernel/assert.h"
#include "services/inbox/inbox.h"
#include "services/sql.h"

namespace inboxsim {

namespace {

void create_ledger(SQLite::Database& db, const Config& config) {
  if (account_inbox_kind(config.account_inbox).event_stream_ledger) {
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
  if (account_inbox_kind(config.account_inbox).store_and_ack) {
    // Wolverine's durable inbox: its incoming table (the envelope and its status, owner and
    // keep_until) and a row per process start, whose number is the owner_id.
    db.exec(
        "CREATE TABLE wolverine_incoming_envelopes (id INTEGER PRIMARY KEY,"
        "  message_id TEXT NOT NULL, status TEXT NOT NULL, owner_id INTEGER NOT NULL,"
        "  received_ms INTEGER NOT NULL, keep_until_ms INTEGER, type TEXT NOT NULL,"
        "  transfer_id TEXT NOT NULL, from_account TEXT NOT NULL, to_account TEXT NOT NULL,"
        "  amount INTEGER NOT NULL, reason TEXT NOT NULL, created_ms INTEGER NOT NULL);"
        "CREATE INDEX wolverine_incoming_status ON wolverine_incoming_envelopes (status, owner_id);"
        "CREATE TABLE wolverine_nodes (node_number INTEGER PRIMARY KEY, service TEXT NOT NULL,"
        "  started_ms INTEGER NOT NULL);");
    db.exec("CREATE " + unique +
            "INDEX wolverine_incoming_key ON wolverine_incoming_envelopes (message_id)");
  }
  create_ledger(db, config);
  // With account.remember_rejections (our addition, off by default) the per-transfer key also
  // remembers a rejected debit: a late duplicate of its Transfer.Requested (past the inbox
  // window) must not debit a transfer the saga rejected. The table always exists, so the
  // schema does not depend on the switch.
  db.exec("CREATE TABLE rejected_debits (transfer_id TEXT PRIMARY KEY)");
}

std::string AccountService::schema_key(const Config& config) {
  // The key names every config choice create_schema() depends on.
  std::string key =
      account_inbox_kind(config.account_inbox).event_stream_ledger ? "marten" : "ledger";
  if (config.account_ledger_unique) key += "+unique";
  if (config.account_inbox_unique) key += "+inbox-key";
  if (account_inbox_kind(config.account_inbox).store_and_ack) key += "+incoming";
  return key;
}

namespace {

// MassTransit's tables (AccountInboxKind::order_read_per_message): a message's outbox rows are
// read by seq among themselves (a send pass sends the next after last_sequence_number), its
// inbox rows by id among themselves (the lookup's ORDER BY id, when the key is dropped); the
// ledger's order and the rejected transfers' are read by nothing.
constexpr std::array<UnorderedTable, 4> kMassTransitUnordered = {{
    {"outbox", "inbox_message_id",
     "SELECT inbox_message_id, message_id, type, transfer_id, from_account, to_account, amount,"
     " reason, created_ms, delivered_ms, (SELECT COUNT(*) FROM outbox p"
     " WHERE p.inbox_message_id = o.inbox_message_id AND p.seq <= o.seq) FROM outbox o"},
    {"inbox_state", "message_id",
     "SELECT message_id, consumer_id, received_ms, receive_count, consumed_ms, delivered_ms,"
     " last_sequence_number IS NULL, (SELECT COUNT(*) FROM inbox_state j"
     " WHERE j.message_id = i.message_id AND j.consumer_id = i.consumer_id AND j.id <= i.id),"
     " (SELECT COUNT(*) FROM outbox o WHERE o.inbox_message_id = i.message_id"
     " AND o.seq <= i.last_sequence_number) FROM inbox_state i"},
    {"ledger", nullptr, "SELECT transfer_id, type, account, amount, created_ms FROM ledger"},
    {"rejected_debits", nullptr, "SELECT transfer_id FROM rejected_debits"},
}};

}  // namespace

std::span<const UnorderedTable> AccountService::unordered_tables(const Config& config) {
  if (!account_inbox_kind(config.account_inbox).order_read_per_message) return {};
  return kMassTransitUnordered;
}

AccountService::AccountService(ServiceHost& host, const Config& config, Connection& connection)
    : AccountCore(host, config, connection),
      kind_(account_inbox_kind(config.account_inbox)),
      inbox_(make_account_inbox(config.account_inbox, *this)) {}

AccountService::~AccountService() = default;

Task<Outcome> AccountService::handle(MessagePtr message) {
  INBOXSIM_ASSERT(is_transfer_command(message->type));
  return inbox_->handle(std::move(message));
}

Task<Outcome> AccountService::handle_stored(MessagePtr message) {
  INBOXSIM_ASSERT(kind_.store_and_ack);
  return inbox_->handle_stored(std::move(message));
}

AccountService::Recovery AccountService::recover_envelopes(const std::vector<int64_t>& live_nodes) {
  INBOXSIM_ASSERT(kind_.store_and_ack);
  return inbox_->recover(live_nodes);
}

void AccountService::dead_letter(const Message& message) {
  INBOXSIM_ASSERT(kind_.store_and_ack);
  inbox_->dead_letter(message);
}

int64_t AccountService::node_number() const { return inbox_->node_number(); }

bool AccountService::sweep_outbox() {
  const OutboxSend sent = send_pending_outbox();
  mark_outbox_sent(sent.confirmed_seqs);
  const bool all_confirmed = sent.result == PublishResult::confirmed;
  if (all_confirmed && sent.batch_full) host_.schedule_account_outbox_sweep();
  return all_confirmed;
}

void AccountService::restart() {
  inbox_->restarted();
  // MassTransit's consumer outbox is only re-sent by a redelivery; the swept outboxes of the
  // other modes have a delivery loop that resumes when the process does.
  if (kind_.swept_outbox) host_.schedule_account_outbox_sweep();
}

CleanupCounts AccountService::cleanup_inbox(int64_t as_of_ms) { return inbox_->cleanup(as_of_ms); }

std::optional<std::vector<std::string>> AccountService::drop_index(IndexName index) {
  switch (index) {
    case IndexName::account_ledger: {
      std::vector<std::string> sql = index_statements(db_, {"ledger_transfer_type"});
      db_.exec("DROP INDEX IF EXISTS ledger_transfer_type");
      return sql;
    }
    case IndexName::account_inbox_state: {
      std::vector<std::string> sql = index_statements(
          db_, {"inbox_state_key", "inbox_documents_key", "wolverine_incoming_key"});
      // Dropped as exercise 3 drops it (docs/scenarios.md): the key goes, lookups scan.
      db_.exec("DROP INDEX IF EXISTS inbox_state_key");
      db_.exec("DROP INDEX IF EXISTS inbox_documents_key");
      db_.exec("DROP INDEX IF EXISTS wolverine_incoming_key");
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

int64_t AccountService::undelivered_outbox_rows() { return inbox_->undelivered_outbox_rows(); }

}  // namespace inboxsim
