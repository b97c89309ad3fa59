// No inbox (account.inbox = none): every delivery runs the business change in one transaction,
// and the outbox is swept after the commit. The ledger key, if it exists, is the only defence.
#include "services/inbox/inbox.h"

namespace inboxsim {

namespace {

class NoInbox final : public AccountInboxMechanism {
 public:
  explicit NoInbox(AccountCore& core) : core_(core), config_(core.config()) {}

  Task<Outcome> handle(MessagePtr message) override;
  CleanupCounts cleanup(int64_t as_of_ms) override;
  int64_t undelivered_outbox_rows() override { return swept_undelivered_outbox_rows(core_); }

 private:
  AccountCore& core_;
  const Config& config_;
};

Task<Outcome> NoInbox::handle(MessagePtr message_ptr) {
  const Message& message = *message_ptr;
  co_await core_.step("apply the change, write the outbox, commit",
                      CrashPointSet(CrashPoint::before_tx), message);
  // Where a dedupe step would be: there is none.
  core_.crash_point(CrashPoint::after_dedupe, message);
  {
    AccountCore::UnitOfWork work(core_);
    core_.consume(message);
    core_.crash_point(CrashPoint::after_effect, message);
    core_.commit(work);
  }
  co_await core_.step("send the outbox messages, then ack", CrashPointSet(CrashPoint::after_commit),
                      message);
  const AccountCore::OutboxSend sent = core_.send_pending_outbox();
  if (!sent.confirmed_seqs.empty()) {
    co_await core_.step("mark the sent outbox rows, then ack",
                        CrashPointSet(CrashPoint::after_outbox_send), message,
                        AccountCore::sent_digest(sent));
  }
  core_.finish_outbox_send(sent);
  co_return Outcome::ack;
}

// No dedupe records: only the outbox rows delivered before the window go.
CleanupCounts NoInbox::cleanup(int64_t as_of_ms) {
  return outbox_only_cleanup(core_, as_of_ms - config_.account_inbox_window_ms);
}

}  // namespace

std::unique_ptr<AccountInboxMechanism> make_no_inbox(AccountCore& core) {
  return std::make_unique<NoInbox>(core);
}

}  // namespace inboxsim
