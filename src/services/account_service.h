// account-service: accounts, a ledger and a consumer for the transfer commands, modelled on
// .NET + MassTransit's Entity Framework inbox and consumer outbox (docs/contract.md §1).
//
// One AccountService is one instance (one process) of the service: it has its own connection to
// the service's one database, which every instance shares: `accounts`, `ledger` (unique
// `(transfer_id, type)` unless configured off), `inbox_state` keyed `(message_id, consumer_id)`,
// and `outbox`. With `account.inbox = marten` the ledger is an event stream `account_events`
// (unique `(account, version)`) and the inbox is a document table. Everything the service knows
// across a crash is in that database (or, in the external-* modes, in the ExternalSeenStore the
// host keeps for it); what an instance holds in memory dies with it.
//
// A handler is a Task: a sequence of steps at the real system's transaction boundaries, with
// the host deciding at each boundary whether time passes, the instance pauses or dies.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "domain/config.h"
#include "domain/scenario.h"
#include "services/host.h"
#include "services/service_core.h"

namespace inboxsim {

class AccountService : private ServiceCore {
 public:
  // An instance on its own connection `db` to the service's database.
  AccountService(ServiceHost& host, const Config& config, Connection& connection);
  ~AccountService();

  // The schema of the service's database, and the key that names it among schema templates.
  static void create_schema(SQLite::Database& db, const Config& config);
  static std::string schema_key(const Config& config);

  // Creates the opening accounts in one transaction (done once, by one instance).
  void open_accounts(const std::map<std::string, AccountSpec>& accounts);

  // Handles one delivery from queue `account-service`: a Task that ends with whether to ack or
  // nack. It may end by throwing ServiceCrash (a crash point fired; the open transaction rolled
  // back) or ConsumerFault (the handler failed and rolled back).
  Task<Outcome> handle(MessagePtr message);

  // Sends outbox rows not yet delivered (the modes whose outbox is swept, not tied to an inbox
  // row). Returns false when a publish was not confirmed and rows remain.
  bool sweep_outbox();

  // Called when the instance's process comes back after a crash.
  void restart();

  // The explorer's view: the database's rows (the service keeps nothing else in memory between
  // two events; a handler's own state is its ServiceHost `resume`).
  void fingerprint(Hasher& hasher, bool with_database) {
    if (with_database) fingerprint_database(hasher);
  }

  // MassTransit's InboxCleanupService, as of `as_of_ms`: deletes inbox rows delivered longer
  // than the window before it (since MassTransit 8.3 not a batch that holds a row whose outbox
  // rows are still there: the outbox's foreign key refuses it), the Marten inbox documents
  // older than account.keep_after_handling_ms, and the outbox rows delivered as long ago as the
  // window, in one transaction. Returns how many rows of each went.
  CleanupCounts cleanup_inbox(int64_t as_of_ms);

  // Drops a unique index this service owns; returns the statements that create it again (none
  // when it was dropped already), or nothing if it has no such index.
  std::optional<std::vector<std::string>> drop_index(IndexName index);
  // Runs a statement drop_index returned (an operator puts the index back); throws
  // SQLite::Exception when the rows no longer allow it (a unique index over duplicates).
  void create_index(const std::string& sql);

  // Committed state, read from the database.
  std::map<std::string, int64_t> balances();
  std::vector<LedgerEntry> ledger();
  // Hands every ledger entry to `visit`, in insertion order, without holding them.
  void for_each_ledger_entry(const std::function<void(const LedgerEntry&)>& visit);
  int64_t undelivered_outbox_rows();

 private:
  struct Account {
    int64_t balance = 0;
    bool closed = false;
  };

  // A message's inbox_state row as a pass's locking select found it.
  struct InboxRow {
    int64_t row = 0;
    bool consumed = false;
    bool delivered = false;
    int64_t last_sequence_number = 0;  // the last outbox message sent (0: none yet)
    int64_t receive_count = 0;         // every committed pass adds one: the row's version
  };

  // Outbox rows an outbox send published and got confirms for.
  struct OutboxSend {
    std::vector<int64_t> confirmed_seqs;
    PublishResult result = PublishResult::confirmed;  // of the last publish: not confirmed stops
    bool batch_full = false;
  };

  Task<Outcome> handle_masstransit(MessagePtr message);
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

  Task<Outcome> handle_swept(MessagePtr message);
  bool already_seen(const Message& message);
  bool commit_business(const Message& message, std::optional<int64_t> read_version);
  static const std::string& stream_of(const Message& message);
  int64_t stream_version(const std::string& account);
  bool appends_event(const Message& message);
  bool stream_conflict(const Message& message, int64_t read_version);
  void insert_document(const Message& message);
  OutboxSend send_pending_outbox();
  void mark_outbox_sent(const std::vector<int64_t>& seqs);

  void consume(const Message& message);
  bool debit_rejected_before(const Message& message);
  bool debit_applied_before(const Message& message);
  // Why a debit is refused (unknown, closed or short source, or a remembered rejection), or
  // nothing when the source covers it.
  std::optional<std::string> debit_refusal(const Message& message);
  void debit(const Message& message);
  void credit(const Message& message);
  void refund(const Message& message);
  // Writes the ledger entry and moves the balance; returns false when the ledger key refused
  // the entry and account.ledger_conflict = ack treats the command as already done.
  bool apply_entry(const Message& message, EntryType type, const std::string& account,
                   int64_t delta);
  void note_entry_already_applied(const Message& message, EntryType type);
  void reject(const Message& message, MessageType reply, const std::string& account,
              const std::string& reason);
  void add_outbox(const Message& message, MessageType type, const std::string& reason);
  std::optional<Account> find_account(const std::string& name);
  std::string seen_key(const Message& message) const;
  std::string_view me() const { return host_.names().service; }

  struct Statements;
  std::unique_ptr<Statements> statements_;
};

}  // namespace inboxsim
