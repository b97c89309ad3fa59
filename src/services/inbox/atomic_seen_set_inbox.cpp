// The external seen-set checked and marked in one call (account.inbox = external-atomic): Redis's
// `SET key value NX`, which sets the key only when it does not exist and replies OK or nil (or
// SADD, whose reply is how many members it added). Only one instance is ever told "new", so the
// race of two instances that both check before either marks (scenario 36) is gone (scenario 69).
// The mark is still before the business commit and outside its transaction: a transaction that
// rolls back after the mark (a crash, a fault) leaves the id marked, and the redelivery is
// skipped as a duplicate of work that never happened (scenario 70).
#include "services/inbox/inbox.h"

namespace inboxsim {

namespace {

class AtomicSeenSetInbox final : public AccountInboxMechanism {
 public:
  explicit AtomicSeenSetInbox(AccountCore& core) : core_(core), config_(core.config()) {}

  Task<Outcome> handle(MessagePtr message) override;
  CleanupCounts cleanup(int64_t as_of_ms) override {
    return outbox_only_cleanup(core_, as_of_ms - config_.account_inbox_window_ms);
  }
  int64_t undelivered_outbox_rows() override { return swept_undelivered_outbox_rows(core_); }

 private:
  bool claimed(const Message& message);

  AccountCore& core_;
  const Config& config_;
};

Task<Outcome> AtomicSeenSetInbox::handle(MessagePtr message_ptr) {
  const Message& message = *message_ptr;
  co_await core_.step("SET NX in the seen-set: check and mark in one call",
                      CrashPointSet(CrashPoint::before_tx), message);
  if (claimed(message)) {
    co_await core_.step("apply the change, write the outbox, commit",
                        CrashPointSet(CrashPoint::after_dedupe, CrashPoint::after_mark), message);
    {
      AccountCore::UnitOfWork work(core_);
      core_.consume(message);
      core_.crash_point(CrashPoint::after_effect, message);
      core_.commit(work);
    }
    co_await core_.step("send the outbox messages, then ack",
                        CrashPointSet(CrashPoint::after_commit), message);
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

// The one call: marks the id and says whether it was new. Traces the answer either way: "new"
// is the mark (a dedupe record no transaction covers), "already marked" the dedupe hit.
bool AtomicSeenSetInbox::claimed(const Message& message) {
  ServiceHost& host = core_.host();
  if (host.seen_store().add(core_.seen_key(message))) {
    TraceEvent event = event_about(EventKind::dedupe_record, host.now_ms(), core_.me(), message);
    event.detail = "external seen-set: SET NX " + message.message_id +
                   " replied OK: it was not marked and now is, in one call (check-and-mark), "
                   "before the business commit and outside its transaction";
    event.record = DedupeRecord::seen_marked;
    host.record(std::move(event));
    return true;
  }
  core_.dedupe_hit(Probe::dedupe_account_external_atomic, DedupeStep::seen_set_refused, core_.me(),
                   message,
                   "external seen-set: message " + message.message_id +
                       " already marked (SET NX replied nil), acked without effect");
  return false;
}

}  // namespace

std::unique_ptr<AccountInboxMechanism> make_atomic_seen_set_inbox(AccountCore& core) {
  return std::make_unique<AtomicSeenSetInbox>(core);
}

}  // namespace inboxsim
