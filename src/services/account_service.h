// account-service: accounts, a ledger and a consumer for the transfer commands, modelled on
// .NET + MassTransit's Entity Framework inbox and consumer outbox (DESIGN §1).
//
// It owns one SQLite database: `accounts`, `ledger` (unique `(transfer_id, type)` unless
// configured off), `inbox_state` keyed `(message_id, consumer_id)`, and `outbox`. With
// `account.inbox = marten` the ledger is an event stream `account_events` (unique
// `(account, version)`) and the inbox is a document table pre-checked in the same transaction.
// Everything it knows across a crash is in that database (or, in the external-* modes, in the
// ExternalSeenStore the host keeps for it).
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/broker.h"
#include "domain/config.h"
#include "services/host.h"

namespace inboxsim {

class AccountService {
 public:
  // Opens the database at `db_path` (empty: in memory) and creates the schema.
  AccountService(ServiceHost& host, const Config& config, const std::string& db_path);
  ~AccountService();

  // Creates the opening accounts in one transaction.
  void open_accounts(const std::map<std::string, AccountSpec>& accounts);

  // Handles one delivery from queue `account-service`; returns whether to ack or nack.
  // May throw ServiceCrash (a crash point fired); the open transaction then rolls back.
  Outcome handle(const Delivery& delivery);

  // Sends outbox rows not yet delivered (the modes whose outbox is swept, not tied to an inbox
  // row). Returns false when a publisher confirm was lost and rows remain.
  bool sweep_outbox();

  // Called when the service process comes back after a crash.
  void restart();

  // MassTransit's InboxCleanupService, as of `as_of_ms`: deletes inbox rows delivered longer
  // than the window before it. Returns the number of rows deleted.
  int64_t cleanup_inbox(int64_t as_of_ms);

  // Drops a unique index this service owns. Returns false if it has no such index.
  bool drop_index(IndexName index);

  // Committed state, read from the database.
  std::map<std::string, int64_t> balances();
  std::vector<LedgerEntry> ledger();
  int64_t undelivered_outbox_rows();

 private:
  struct Account {
    int64_t balance = 0;
    bool closed = false;
  };

  // The state of a message's inbox row as step 2 found it.
  struct InboxRow {
    int64_t row = 0;
    bool consumed = false;
    bool delivered = false;
  };

  Outcome handle_masstransit(const Message& message);
  void inbox_receive(const Message& message);
  InboxRow inbox_consume(const Message& message);
  void inbox_delivered(const Message& message, int64_t row);
  Outcome handle_marten(const Message& message);
  Outcome handle_plain(const Message& message);
  void consume(const Message& message, const std::string& inbox_message_id);
  bool debit_rejected_before(const Message& message);
  void debit(const Message& message, const std::string& inbox_message_id);
  void credit(const Message& message, const std::string& inbox_message_id);
  void refund(const Message& message, const std::string& inbox_message_id);
  void apply_entry(const Message& message, EntryType type, const std::string& account,
                   int64_t delta);
  void reject(const Message& message, MessageType reply, const std::string& account,
              const std::string& reason, const std::string& inbox_message_id);
  void add_outbox(const Message& message, MessageType type, const std::string& reason,
                  const std::string& inbox_message_id);
  std::optional<Account> find_account(const std::string& name);
  bool send_inbox_outbox(const std::string& inbox_message_id);
  bool sweep_outbox(const Message* handling);
  void commit(SQLite::Transaction& transaction);
  void dedupe_hit(const Message& message, std::string detail);
  // Notes a dedupe record written in the open transaction; it reaches the trace on commit.
  void note_dedupe_record(const Message& message, std::string detail);
  // Marks the external seen-set, which is no transaction's business, and says so at once.
  void mark_seen(ExternalSeenStore& seen, const std::string& key, const Message& message,
                 std::string_view when);
  std::string seen_key(const Message& message) const;
  void crash_point(CrashPoint point, const Message& message);

  ServiceHost& host_;
  const Config& config_;
  SQLite::Database db_;
  CommitRecord pending_;
  struct Statements;
  std::unique_ptr<Statements> statements_;
};

}  // namespace inboxsim
