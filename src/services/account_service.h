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
// the host deciding at each boundary whether time passes, the instance pauses or dies. The
// dedupe mechanism (account.inbox) is one of services/inbox/, chosen once per instance; the bank
// it calls is AccountCore.
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
#include "services/inbox/account_core.h"
#include "services/inbox/inbox.h"
#include "services/service_core.h"

namespace inboxsim {

class AccountService : private AccountCore {
 public:
  // An instance on its own connection `db` to the service's database.
  AccountService(ServiceHost& host, const Config& config, Connection& connection);
  ~AccountService();

  // The schema of the service's database, and the key that names it among schema templates.
  static void create_schema(SQLite::Database& db, const Config& config);
  static std::string schema_key(const Config& config);
  // The tables whose insertion order nothing reads beyond one message's rows (UnorderedTable);
  // none unless the inbox mechanism says so (AccountInboxKind::order_read_per_message).
  static std::span<const UnorderedTable> unordered_tables(const Config& config);

  // Creates the opening accounts in one transaction (done once, by one instance).
  using AccountCore::open_accounts;

  // Handles one delivery from queue `account-service`: a Task that ends with whether to ack or
  // nack. It may end by throwing ServiceCrash (a crash point fired; the open transaction rolled
  // back) or ConsumerFault (the handler failed and rolled back).
  Task<Outcome> handle(MessagePtr message);

  // Wolverine's durable inbox (the registry's store_and_ack): handles an envelope already
  // stored and acked, from the table (an envelope the durability agent recovered, or the next
  // attempt of one whose handler faulted).
  Task<Outcome> handle_stored(MessagePtr message);
  // One poll of the durability agent, given the node numbers alive: the envelopes it claimed
  // for this node (to handle from the table) and whether any envelope is still Incoming.
  using Recovery = AccountInboxMechanism::Recovery;
  Recovery recover_envelopes(const std::vector<int64_t>& live_nodes);
  // The envelope's attempts are spent: it leaves the incoming table for dead-letter storage.
  void dead_letter(const Message& message);
  // This process's node number in the durable inbox (0 for the other mechanisms).
  int64_t node_number() const;

  // Sends outbox rows not yet delivered (the modes whose outbox is swept, not tied to an inbox
  // row). Returns false when a publish was not confirmed and rows remain.
  bool sweep_outbox();

  // Called when the instance's process comes back after a crash.
  void restart();

  // The explorer's view: the database's rows (the service keeps nothing else in memory between
  // two events; a handler's own state is its ServiceHost `resume`).
  // A canonical one reads the unordered tables as sets (UnorderedTable).
  void fingerprint(Hasher& hasher, bool with_database, bool canonical = false) {
    if (with_database) {
      fingerprint_database(
          hasher, canonical ? unordered_tables(config_) : std::span<const UnorderedTable>());
    }
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
  const AccountInboxKind& kind_;
  std::unique_ptr<AccountInboxMechanism> inbox_;  // chosen once, from account.inbox
};

}  // namespace inboxsim
