// Wolverine's durable inbox (account.inbox = wolverine): store, ack, then handle.
//
// The listener stores the envelope in the incoming table (status Incoming, owner_id = this
// node's number) in a transaction of its own, then acks the broker at once (DurableReceiver's
// receiveOneAsync: StoreIncomingAsync, then the listener's CompleteAsync). A copy whose id the
// table already holds, Incoming or Handled (the table's primary key on id), is acked and dropped
// (DuplicateIncomingEnvelopeException). The handler then runs from the table: one transaction
// applies the business change, writes the outbox and marks the envelope Handled with a
// keep_until of now + account.keep_after_handling_ms (the EF Core envelope transaction's
// `update ... set status = 'Handled', keep_until = @keep where id = @id`), and the swept outbox
// is sent after the commit. The mark is by id only: it does not ask whether the envelope is
// still Incoming, so a second handler of the same envelope marks it too.
//
// The durability agent (recover) releases the Incoming envelopes of nodes that are gone to any
// node (owner_id = 0, Wolverine's NodeReassignment) and claims a batch of owner_id = 0
// envelopes for this node (RecoverIncomingMessages); the world then handles each from the
// table. Every start of a process is a new node number (a row in wolverine_nodes), so a
// restarted instance does not own what its previous incarnation stored.
#include "kernel/assert.h"
#include "services/inbox/inbox.h"
#include "services/sql.h"

namespace inboxsim {

namespace {

// Wolverine's TransportConstants.AnyNode: an envelope no node owns, for any agent to recover.
constexpr int64_t kAnyNode = 0;
// How many envelopes one poll of the agent claims (Wolverine's DurabilitySettings
// RecoveryBatchSize is 100; a story here has far fewer).
constexpr int64_t kRecoveryBatchMax = 100;

class WolverineInbox final : public AccountInboxMechanism {
 public:
  explicit WolverineInbox(AccountCore& core);

  Task<Outcome> handle(MessagePtr message) override;
  Task<Outcome> handle_stored(MessagePtr message) override;
  Recovery recover(const std::vector<int64_t>& live_nodes) override;
  void dead_letter(const Message& message) override;
  void restarted() override { node_ = register_node(); }
  int64_t node_number() const override { return node_; }
  CleanupCounts cleanup(int64_t as_of_ms) override;
  int64_t undelivered_outbox_rows() override { return swept_undelivered_outbox_rows(core_); }

 private:
  int64_t register_node();
  bool store(const Message& message);
  void handle_from_table(const Message& message);
  void send_outbox();
  int64_t release_dormant(const std::vector<int64_t>& live_nodes);
  std::string_view me() const { return core_.me(); }

  AccountCore& core_;
  ServiceHost& host_;
  const Config& config_;
  LazyStatement insert_;
  LazyStatement mark_handled_;
  LazyStatement delete_;
  LazyStatement cleanup_;
  int64_t node_ = 0;
};

WolverineInbox::WolverineInbox(AccountCore& core)
    : core_(core),
      host_(core.host()),
      config_(core.config()),
      insert_(core.connection(),
              "INSERT INTO wolverine_incoming_envelopes (message_id, status, owner_id, "
              "received_ms, type,"
              " transfer_id, from_account, to_account, amount, reason, created_ms)"
              " VALUES (?, 'Incoming', ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
      mark_handled_(core.connection(),
                    "UPDATE wolverine_incoming_envelopes SET status = 'Handled', keep_until_ms = ?"
                    " WHERE message_id = ?"),
      delete_(core.connection(), "DELETE FROM wolverine_incoming_envelopes WHERE message_id = ?"),
      cleanup_(core.connection(),
               "DELETE FROM wolverine_incoming_envelopes WHERE status = 'Handled' AND "
               "keep_until_ms <= ?") {
  node_ = register_node();
}

// A process start is a node: Wolverine persists a node record and takes the number it is given.
// Written on its own, outside every unit of work: it is no business of the checker's.
int64_t WolverineInbox::register_node() {
  StatementUse insert(core_.connection().prepared(
      "INSERT INTO wolverine_nodes (service, started_ms) VALUES (?, ?)"));
  insert->bind(1, std::string(me()));
  insert->bind(2, static_cast<int64_t>(host_.now_ms()));
  insert->exec();
  return core_.connection().database().getLastInsertRowid();
}

Task<Outcome> WolverineInbox::handle(MessagePtr message_ptr) {
  const Message& message = *message_ptr;
  co_await core_.step("store the envelope in wolverine_incoming_envelopes (Incoming, owner node " +
                          std::to_string(node_) + ")",
                      CrashPointSet(CrashPoint::before_tx), message);
  if (!store(message)) co_return Outcome::ack;
  co_await core_.step("ack the broker: the envelope is stored",
                      CrashPointSet(CrashPoint::after_store), message);
  host_.ack_now();
  co_await core_.step("handle the envelope: apply the change, mark it Handled, commit",
                      CrashPointSet(CrashPoint::after_ack), message);
  handle_from_table(message);
  co_await core_.step("send the outbox messages", CrashPointSet(CrashPoint::after_commit), message);
  send_outbox();
  co_return Outcome::ack;
}

// An envelope the durability agent recovered, or one whose handler faulted and runs again: the
// broker was acked long ago, and the envelope is Incoming in the table.
Task<Outcome> WolverineInbox::handle_stored(MessagePtr message_ptr) {
  const Message& message = *message_ptr;
  co_await core_.step("handle the stored envelope: apply the change, mark it Handled, commit",
                      CrashPointSet(CrashPoint::before_tx), message);
  handle_from_table(message);
  co_await core_.step("send the outbox messages", CrashPointSet(CrashPoint::after_commit), message);
  send_outbox();
  co_return Outcome::ack;
}

// StoreIncomingAsync in its own transaction. Returns false when the table already holds the
// id, Incoming or Handled: the copy is acked and dropped.
bool WolverineInbox::store(const Message& message) {
  AccountCore::UnitOfWork work(core_);
  try {
    StatementUse insert(insert_);
    insert->bind(1, message.message_id);
    insert->bind(2, static_cast<int64_t>(node_));
    insert->bind(3, static_cast<int64_t>(host_.now_ms()));
    insert->bind(4, std::string(message_type_name(message.type)));
    insert->bind(5, message.transfer);
    insert->bind(6, message.from);
    insert->bind(7, message.to);
    insert->bind(8, static_cast<int64_t>(message.amount));
    insert->bind(9, message.reason);
    insert->bind(10, static_cast<int64_t>(message.occurred_at_ms));
    insert->exec();
  } catch (const SQLite::Exception& error) {
    if (!is_unique_violation(error)) throw;
    core_.dedupe_hit(Probe::dedupe_wolverine_incoming, DedupeStep::wolverine_incoming, me(),
                     message,
                     "wolverine inbox: message " + message.message_id +
                         " is already in wolverine_incoming_envelopes (Incoming or Handled: the "
                         "id is the key): dropped, acked without effect");
    return false;
  }
  core_.note_dedupe_record(me(), message, DedupeRecord::wolverine_stored,
                           "wolverine inbox: envelope " + message.message_id +
                               " stored, Incoming, owner node " + std::to_string(node_) +
                               "; the broker is acked next");
  core_.commit(work);
  host_.schedule_durability_poll();
  return true;
}

// The handler's transaction: the business change, its outbox rows and the Handled mark commit
// together. The mark is by id only, as Wolverine's is.
void WolverineInbox::handle_from_table(const Message& message) {
  AccountCore::UnitOfWork work(core_);
  core_.consume(message);
  const int64_t keep_until_ms = host_.now_ms() + config_.account_keep_after_handling_ms;
  StatementUse mark(mark_handled_);
  mark->bind(1, static_cast<int64_t>(keep_until_ms));
  mark->bind(2, message.message_id);
  mark->exec();
  core_.note_dedupe_record(me(), message, DedupeRecord::wolverine_handled,
                           "wolverine inbox: envelope " + message.message_id +
                               " marked Handled in the handler's transaction, kept until " +
                               std::to_string(keep_until_ms) + " ms (KeepAfterMessageHandling)");
  core_.crash_point(CrashPoint::after_effect, message);
  core_.commit(work);
}

// Wolverine flushes the outbox after the commit; a send that fails is left to the durable
// outbox's own delivery loop and does not fail the handler, whose transaction has committed.
void WolverineInbox::send_outbox() {
  const AccountCore::OutboxSend sent = core_.send_pending_outbox();
  core_.mark_outbox_sent(sent.confirmed_seqs);
  if (sent.result != PublishResult::confirmed) host_.schedule_account_outbox_sweep();
}

// NodeReassignment: the Incoming envelopes of every node but the live ones go to any node.
int64_t WolverineInbox::release_dormant(const std::vector<int64_t>& live_nodes) {
  std::string live = std::to_string(kAnyNode);
  for (const int64_t node : live_nodes) live += ", " + std::to_string(node);
  StatementUse release(
      core_.connection().prepared("UPDATE wolverine_incoming_envelopes SET owner_id = 0 WHERE "
                                  "status = 'Incoming' AND owner_id NOT IN"
                                  " (SELECT value FROM json_each(?))"));
  release->bind(1, "[" + live + "]");
  return release->exec();
}

// One poll of the durability agent: releases the envelopes of nodes that are gone, then claims
// a batch of the envelopes no node owns, in one transaction.
AccountInboxMechanism::Recovery WolverineInbox::recover(const std::vector<int64_t>& live_nodes) {
  Recovery recovery;
  AccountCore::UnitOfWork work(core_);
  const int64_t released = release_dormant(live_nodes);
  {
    StatementUse page(core_.connection().prepared(
        "SELECT 0, message_id, type, transfer_id, from_account, to_account, amount, reason,"
        " created_ms FROM wolverine_incoming_envelopes WHERE status = 'Incoming' AND owner_id = 0"
        " ORDER BY received_ms, message_id LIMIT ?"));
    page->bind(1, static_cast<int64_t>(kRecoveryBatchMax));
    while (page->executeStep()) {
      recovery.recovered.push_back(AccountCore::message_from_outbox_row(*page));
    }
  }
  for (const MessagePtr& message : recovery.recovered) {
    StatementUse claim(core_.connection().prepared(
        "UPDATE wolverine_incoming_envelopes SET owner_id = ? WHERE message_id = ?"));
    claim->bind(1, static_cast<int64_t>(node_));
    claim->bind(2, message->message_id);
    claim->exec();
  }
  StatementUse left(core_.connection().prepared(
      "SELECT COUNT(*) FROM wolverine_incoming_envelopes WHERE status = 'Incoming'"));
  const bool has_row = left->executeStep();
  INBOXSIM_ASSERT(has_row);
  recovery.incoming_left = left->getColumn(0).getInt64() > 0;
  if (released == 0 && recovery.recovered.empty()) return recovery;  // rolls back: nothing done
  core_.commit(work);
  for (const MessagePtr& message : recovery.recovered) {
    host_.reached(Probe::inbox_recovered);
    TraceEvent event = event_about(EventKind::recovered, host_.now_ms(), me(), *message);
    event.detail = "durability agent: envelope " + message->message_id +
                   " is Incoming and its owner node is gone; claimed for node " +
                   std::to_string(node_) + " and handled from the table" +
                   (released > 0 ? " (" + std::to_string(released) +
                                       " envelope(s) of dormant nodes released to any node)"
                                 : "");
    host_.record(std::move(event));
  }
  return recovery;
}

// Wolverine moves a message whose attempts are spent to dead-letter storage, which deletes it
// from the incoming table.
void WolverineInbox::dead_letter(const Message& message) {
  AccountCore::UnitOfWork work(core_);
  StatementUse remove(delete_);
  remove->bind(1, message.message_id);
  remove->exec();
  core_.commit(work);
}

// DeleteExpiredHandledEnvelopes: the Handled envelopes whose keep_until has passed; the outbox
// rows go after account.inbox_window_ms, as in every mode.
CleanupCounts WolverineInbox::cleanup(int64_t as_of_ms) {
  const int64_t cutoff = as_of_ms - config_.account_inbox_window_ms;
  AccountCore::UnitOfWork work(core_);
  StatementUse expired(cleanup_);
  expired->bind(1, static_cast<int64_t>(as_of_ms));
  const int64_t deleted = expired->exec();
  const int64_t outbox_deleted = cutoff > 0 ? core_.cleanup_outbox(cutoff) : 0;
  if (deleted == 0 && outbox_deleted == 0) return {};
  core_.commit(work);
  return {deleted, outbox_deleted};
}

}  // namespace

std::unique_ptr<AccountInboxMechanism> make_wolverine_inbox(AccountCore& core) {
  return std::make_unique<WolverineInbox>(core);
}

}  // namespace inboxsim
