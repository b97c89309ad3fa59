// A "Redis SET of seen messageIds" (account.inbox = external-before, external-after):
// an external seen-set that survives a crash but is in no transaction of the database, checked
// and then marked with a second call (check-then-add: SISMEMBER, then SADD), before or after the
// business commit. A crash between the mark and the commit loses the work (before) or does it
// twice (after); two instances can both check before either marks (scenario 36).
#include "services/inbox/inbox.h"

namespace inboxsim {

namespace {

class SeenSetInbox final : public AccountInboxMechanism {
 public:
  SeenSetInbox(AccountCore& core, bool mark_before_commit)
      : core_(core), config_(core.config()), mark_before_commit_(mark_before_commit) {}

  Task<Outcome> handle(MessagePtr message) override;
  CleanupCounts cleanup(int64_t as_of_ms) override {
    return outbox_only_cleanup(core_, as_of_ms - config_.account_inbox_window_ms);
  }
  int64_t undelivered_outbox_rows() override { return swept_undelivered_outbox_rows(core_); }

 private:
  bool already_seen(const Message& message);

  AccountCore& core_;
  const Config& config_;
  bool mark_before_commit_;
};

Task<Outcome> SeenSetInbox::handle(MessagePtr message_ptr) {
  const Message& message = *message_ptr;
  const std::string_view change = "apply the change, write the outbox, commit";
  const std::string_view send = "send the outbox messages, then ack";
  const std::string_view mark = "mark the message in the seen-set";
  co_await core_.step("check the seen-set", CrashPointSet(CrashPoint::before_tx), message);
  if (!already_seen(message)) {
    co_await core_.step(std::string(mark_before_commit_ ? mark : change),
                        CrashPointSet(CrashPoint::after_precheck, CrashPoint::after_dedupe),
                        message);
    if (mark_before_commit_) {
      core_.mark_seen(core_.me(), core_.seen_key(message), message, "before");
      co_await core_.step(std::string(change), CrashPointSet(CrashPoint::after_mark), message);
    }
    {
      AccountCore::UnitOfWork work(core_);
      core_.consume(message);
      core_.crash_point(CrashPoint::after_effect, message);
      core_.commit(work);
    }
    co_await core_.step(std::string(mark_before_commit_ ? send : mark),
                        CrashPointSet(CrashPoint::after_commit), message);
    if (!mark_before_commit_) {
      core_.mark_seen(core_.me(), core_.seen_key(message), message, "after");
      co_await core_.step(std::string(send), CrashPointSet(CrashPoint::after_mark), message);
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

// The check: one call to the store, which says whether the key is there. Traces the dedupe hit
// when it is.
bool SeenSetInbox::already_seen(const Message& message) {
  ServiceHost& host = core_.host();
  if (!host.seen_store().contains(core_.seen_key(message))) {
    // Traced, because the race of two instances (scenario 36) is two of these answers given
    // before either mark: the check and the mark are two calls to the store.
    TraceEvent event = event_about(EventKind::dedupe_record, host.now_ms(), core_.me(), message);
    event.detail = "external seen-set: checked " + message.message_id +
                   ", not marked (check-then-add: the mark is a separate call)";
    event.record = DedupeRecord::seen_checked;
    host.record(std::move(event));
    return false;
  }
  core_.dedupe_hit(
      mark_before_commit_ ? Probe::dedupe_account_external_before
                          : Probe::dedupe_account_external_after,
      DedupeStep::seen_marked, core_.me(), message,
      "external seen-set: message " + message.message_id + " already marked, acked without effect");
  return true;
}

}  // namespace

std::unique_ptr<AccountInboxMechanism> make_seen_set_before_inbox(AccountCore& core) {
  return std::make_unique<SeenSetInbox>(core, true);
}

std::unique_ptr<AccountInboxMechanism> make_seen_set_after_inbox(AccountCore& core) {
  return std::make_unique<SeenSetInbox>(core, false);
}

}  // namespace inboxsim
