// Wolverine's inbox on Marten (account.inbox = marten): the inbox document looked up first (the
// pre-check), then stored in the same transaction as the event append, its primary key the
// backstop for a concurrent duplicate; the ledger is the accounts' event stream, appended quick
// (Marten 9) or rich (Marten 8, account.marten_append); the outbox is swept after the commit.
#include "kernel/assert.h"
#include "services/inbox/inbox.h"
#include "services/sql.h"

namespace inboxsim {

namespace {

class MartenInbox final : public AccountInboxMechanism {
 public:
  explicit MartenInbox(AccountCore& core)
      : core_(core),
        host_(core.host()),
        config_(core.config()),
        document_find_(core.connection(), "SELECT 1 FROM inbox_documents WHERE message_id = ?"),
        document_insert_(core.connection(),
                         "INSERT INTO inbox_documents (message_id, received_ms) VALUES (?, ?)"),
        document_cleanup_(core.connection(), "DELETE FROM inbox_documents WHERE received_ms < ?"),
        // Prepared on first use, which only the rich append makes.
        stream_version_(core.connection(),
                        "SELECT COALESCE(MAX(version), 0) FROM account_events WHERE account = ?") {}

  Task<Outcome> handle(MessagePtr message) override;
  CleanupCounts cleanup(int64_t as_of_ms) override;
  int64_t undelivered_outbox_rows() override { return swept_undelivered_outbox_rows(core_); }

 private:
  bool already_seen(const Message& message);
  bool commit_business(const Message& message, std::optional<int64_t> read_version);
  static const std::string& stream_of(const Message& message);
  int64_t stream_version(const std::string& account);
  bool appends_event(const Message& message);
  bool stream_conflict(const Message& message, int64_t read_version);
  void insert_document(const Message& message);
  std::string_view me() const { return core_.me(); }

  AccountCore& core_;
  ServiceHost& host_;
  const Config& config_;
  LazyStatement document_find_;
  LazyStatement document_insert_;
  LazyStatement document_cleanup_;
  LazyStatement stream_version_;
};

}  // namespace

// The document's pre-check, then the event append with the document in one transaction, then
// the outbox sent and marked.
Task<Outcome> MartenInbox::handle(MessagePtr message_ptr) {
  const Message& message = *message_ptr;
  const std::string_view change = "Marten: append the event, store the inbox document, commit";
  const bool rich = config_.account_marten_append == MartenAppend::rich;
  co_await core_.step(std::string(rich ? "Marten: load the inbox document and the stream's version"
                                       : "Marten: load the inbox document"),
                      CrashPointSet(CrashPoint::before_tx), message);
  if (!already_seen(message)) {
    // Marten's rich append: the version of the stream the command appends to, as read before
    // the write (RichEventAppender's stream state query); the write then expects it.
    std::optional<int64_t> read_version;
    if (rich) read_version = stream_version(stream_of(message));
    co_await core_.step(std::string(change), CrashPointSet(CrashPoint::after_precheck), message,
                        read_version ? Hasher().add_signed(*read_version).finish().low : 0);
    if (commit_business(message, read_version)) {
      co_await core_.step("send the outbox messages, then ack",
                          CrashPointSet(CrashPoint::after_commit), message);
    }
  }
  const AccountCore::OutboxSend sent = core_.send_pending_outbox();
  if (!sent.confirmed_seqs.empty()) {
    co_await core_.step("mark the sent outbox rows, then ack",
                        CrashPointSet(CrashPoint::after_outbox_send), message,
                        AccountCore::sent_digest(sent));
  }
  core_.finish_outbox_send(sent);
  co_return Outcome::ack;
}

// The pre-check: Marten's session lookup of the inbox document. Traces the dedupe hit when it
// finds the message.
bool MartenInbox::already_seen(const Message& message) {
  StatementUse find(document_find_);
  find->bind(1, message.message_id);
  if (!find->executeStep()) return false;
  core_.dedupe_hit(
      Probe::dedupe_marten_precheck, DedupeStep::marten_document, me(), message,
      "marten inbox: document " + message.message_id + " exists, acked without effect");
  return true;
}

// The business transaction with the document. Returns false when the document's key rejected a
// concurrent duplicate (Marten's backstop), or when the handler took the rich append's version
// conflict for one (account.ledger_conflict = ack): rolled back and acked. `read_version` is the
// stream version the rich append read before the write.
bool MartenInbox::commit_business(const Message& message, std::optional<int64_t> read_version) {
  AccountCore::UnitOfWork work(core_);
  // Marten's batch runs the event operations before the document operations
  // (UnitOfWork.AllOperations), so the stream's version check comes before the document's key.
  if (read_version && stream_conflict(message, *read_version)) return false;
  try {
    insert_document(message);
  } catch (const SQLite::Exception& error) {
    if (!is_unique_violation(error)) throw;
    core_.dedupe_hit(Probe::dedupe_marten_backstop, DedupeStep::marten_backstop, me(), message,
                     "marten inbox: message " + message.message_id +
                         " was stored meanwhile by a concurrent delivery: the document's primary "
                         "key rejected it (the backstop), rolled back, acked without effect");
    return false;
  }
  core_.crash_point(CrashPoint::after_dedupe, message);
  core_.consume(message);
  core_.crash_point(CrashPoint::after_effect, message);
  core_.commit(work);
  return true;
}

// The stream a command appends its event to: the source's for a debit or a refund, the
// destination's for a credit.
const std::string& MartenInbox::stream_of(const Message& message) {
  return message.type == MessageType::credit_requested ? message.to : message.from;
}

// The stream's version as committed (0: no event yet).
int64_t MartenInbox::stream_version(const std::string& account) {
  StatementUse query(stream_version_);
  query->bind(1, account);
  const bool has_row = query->executeStep();
  INBOXSIM_ASSERT(has_row);
  return query->getColumn(0).getInt64();
}

// Whether the command appends an event at all: a refused debit or credit appends none, and
// Marten then has no stream to check.
bool MartenInbox::appends_event(const Message& message) {
  switch (message.type) {
    case MessageType::transfer_requested:
      return !core_.debit_refusal(message) || core_.debit_applied_before(message);
    case MessageType::credit_requested: {
      const std::optional<AccountCore::Account> destination = core_.find_account(message.to);
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
bool MartenInbox::stream_conflict(const Message& message, int64_t read_version) {
  const std::string& stream = stream_of(message);
  const int64_t version = stream_version(stream);
  if (version == read_version || !appends_event(message)) return false;
  if (config_.account_ledger_conflict == LedgerConflict::fault) {
    throw ConsumerFault{
        "EventStreamUnexpectedMaxEventIdException: a concurrent append moved the stream since "
        "its version was read, and the event's (stream_id, version) key rejected the write",
        FaultCause::stream_conflict};
  }
  core_.dedupe_hit(Probe::dedupe_ledger_key_ack, DedupeStep::stream_key_taken, me(), message,
                   "any unique violation as a duplicate: message " + message.message_id +
                       " taken for one, but stream " + stream + " was at version " +
                       std::to_string(read_version) + " when read and is at " +
                       std::to_string(version) +
                       " (a concurrent append), so the event's (stream_id, "
                       "version) key rejected version " +
                       std::to_string(read_version + 1) +
                       "; rolled back, nothing applied, acked without effect");
  return true;
}

void MartenInbox::insert_document(const Message& message) {
  StatementUse insert(document_insert_);
  insert->bind(1, message.message_id);
  insert->bind(2, static_cast<int64_t>(host_.now_ms()));
  insert->exec();
  core_.note_dedupe_record(me(), message, DedupeRecord::marten_document,
                           "marten inbox: document " + message.message_id +
                               " stored, in one transaction with the event append");
}

// Wolverine keeps a handled envelope KeepAfterMessageHandling, its own window; the outbox rows
// go after account.inbox_window_ms, as in every mode.
CleanupCounts MartenInbox::cleanup(int64_t as_of_ms) {
  const int64_t cutoff = as_of_ms - config_.account_inbox_window_ms;
  const int64_t document_cutoff = as_of_ms - config_.account_keep_after_handling_ms;
  if (cutoff <= 0 && document_cutoff <= 0) return {};
  AccountCore::UnitOfWork work(core_);
  int64_t deleted = 0;
  if (document_cutoff > 0) {
    StatementUse documents(document_cleanup_);
    documents->bind(1, static_cast<int64_t>(document_cutoff));
    deleted = documents->exec();
  }
  const int64_t outbox_deleted = cutoff > 0 ? core_.cleanup_outbox(cutoff) : 0;
  // One unit of work deletes both: returning before the commit when only outbox rows went
  // would roll their delete back.
  if (deleted == 0 && outbox_deleted == 0) return {};
  core_.commit(work);
  return {deleted, outbox_deleted};
}

std::unique_ptr<AccountInboxMechanism> make_marten_inbox(AccountCore& core) {
  return std::make_unique<MartenInbox>(core);
}

}  // namespace inboxsim
