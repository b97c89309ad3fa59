// What every account-service inbox mechanism shares: the instance's connection and host (through
// ServiceCore), the bank (accounts, ledger, rejections and the replies it writes to the outbox),
// and the swept outbox's send. A mechanism (services/inbox/inbox.h) owns only its dedupe records
// and the order of its steps; it calls consume() for the business change inside the unit of work
// it opens.
//
// The tools of ServiceCore a mechanism uses (step, lock_row, UnitOfWork, commit, the dedupe trace
// lines) are public here, so that a mechanism in its own file needs no friendship with the
// service.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "domain/config.h"
#include "domain/scenario.h"
#include "services/host.h"
#include "services/service_core.h"

namespace inboxsim {

// MassTransit's consumer id in inbox_state, and the second half of the seen-set's key.
inline constexpr std::string_view kAccountConsumerId = "account-consumer";

class AccountCore : public ServiceCore {
 public:
  struct Account {
    int64_t balance = 0;
    bool closed = false;
  };

  // Outbox rows an outbox send published and got confirms for.
  struct OutboxSend {
    std::vector<int64_t> confirmed_seqs;
    PublishResult result = PublishResult::confirmed;  // of the last publish: not confirmed stops
    bool batch_full = false;
  };

  AccountCore(ServiceHost& host, const Config& config, Connection& connection);
  ~AccountCore();

  using ServiceCore::commit;
  using ServiceCore::crash_point;
  using ServiceCore::dedupe_hit;
  using ServiceCore::lock_row;
  using ServiceCore::mark_seen;
  using ServiceCore::names_steps;
  using ServiceCore::note_dedupe_record;
  using ServiceCore::require_confirmed;
  using ServiceCore::step;
  using ServiceCore::UnitOfWork;

  // Creates the opening accounts in one transaction (done once, by one instance).
  void open_accounts(const std::map<std::string, AccountSpec>& accounts);

  ServiceHost& host() { return host_; }
  const Config& config() const { return config_; }
  Connection& connection() { return connection_; }
  std::string_view me() const { return host_.names().service; }

  // The business change of a transfer command (debit, credit or refund, or its rejection), with
  // its reply in the outbox, in the open unit of work.
  void consume(const Message& message);
  // Why a debit is refused (unknown, closed or short source, or a remembered rejection), or
  // nothing when the source covers it.
  std::optional<std::string> debit_refusal(const Message& message);
  // Whether a debit of the message's transfer is in the ledger and the per-transfer key judges
  // the copy (account.remember_rejections with the ledger key).
  bool debit_applied_before(const Message& message);
  std::optional<Account> find_account(const std::string& name);

  // Publishes the outbox rows not yet delivered, in order, until a confirm is lost.
  OutboxSend send_pending_outbox();
  // Marks the confirmed rows delivered, in one transaction.
  void mark_outbox_sent(const std::vector<int64_t>& seqs);
  // What a swept handler still reads after the boundary that follows a send.
  static uint64_t sent_digest(const OutboxSend& sent);
  // The end of a swept handler's send: marks what was confirmed; when a publish was not, asks
  // for the delivery loop to retry and faults the handler, as the send threw.
  void finish_outbox_send(const OutboxSend& sent);
  // Deletes the outbox rows delivered before `cutoff`, in the open unit of work; returns how many.
  int64_t cleanup_outbox(int64_t cutoff);
  // The outbox message stored in a row read with kOutboxColumns' columns.
  static MessagePtr message_from_outbox_row(SQLite::Statement& row);
  // The columns message_from_outbox_row reads, in its order.
  static constexpr const char* kOutboxColumns =
      "seq, message_id, type, transfer_id, from_account, to_account, amount, reason, created_ms";

  // The external seen-set's key of a message.
  std::string seen_key(const Message& message) const;

 protected:
  struct Statements;
  std::unique_ptr<Statements> statements_;

 private:
  bool debit_rejected_before(const Message& message);
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
};

}  // namespace inboxsim
