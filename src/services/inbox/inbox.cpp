#include "services/inbox/inbox.h"

#include <array>

#include "kernel/assert.h"

namespace inboxsim {

namespace {

using MakeInbox = std::unique_ptr<AccountInboxMechanism> (*)(AccountCore& core);

struct MechanismRow {
  AccountInbox inbox;
  MakeInbox make;
};

// One row per mechanism, in the registry's order (domain/account_inbox.h).
constexpr std::array<MechanismRow, kAccountInboxCount> kMechanisms = {{
    {AccountInbox::masstransit, make_masstransit_inbox},
    {AccountInbox::marten, make_marten_inbox},
    {AccountInbox::none, make_no_inbox},
    {AccountInbox::external_before, make_seen_set_before_inbox},
    {AccountInbox::external_after, make_seen_set_after_inbox},
    {AccountInbox::external_atomic, make_atomic_seen_set_inbox},
    {AccountInbox::wolverine, make_wolverine_inbox},
}};

constexpr bool rows_in_enum_order() {
  for (size_t i = 0; i < kMechanisms.size(); ++i) {
    if (static_cast<size_t>(kMechanisms[i].inbox) != i || kMechanisms[i].make == nullptr) {
      return false;
    }
  }
  return true;
}
static_assert(rows_in_enum_order());

}  // namespace

std::unique_ptr<AccountInboxMechanism> make_account_inbox(AccountInbox inbox, AccountCore& core) {
  const auto index = static_cast<size_t>(inbox);
  INBOXSIM_ASSERT(index < kMechanisms.size());
  return kMechanisms[index].make(core);
}

// Only a store-and-ack mechanism is asked these (the registry says which).
Task<Outcome> AccountInboxMechanism::handle_stored(MessagePtr /*message*/) {
  INBOXSIM_ASSERT(false);
}

AccountInboxMechanism::Recovery AccountInboxMechanism::recover(
    const std::vector<int64_t>& /*live_nodes*/) {
  INBOXSIM_ASSERT(false);
}

void AccountInboxMechanism::dead_letter(const Message& /*message*/) { INBOXSIM_ASSERT(false); }

int64_t swept_undelivered_outbox_rows(AccountCore& core) {
  StatementUse count(core.connection().prepared(
      "SELECT COUNT(*) FROM outbox o WHERE o.delivered_ms IS NULL AND NOT EXISTS (SELECT 1"
      " FROM inbox_state i WHERE i.message_id = o.inbox_message_id AND i.delivered_ms IS NOT"
      " NULL)"));
  const bool has_row = count->executeStep();
  INBOXSIM_ASSERT(has_row);
  return count->getColumn(0).getInt64();
}

CleanupCounts outbox_only_cleanup(AccountCore& core, int64_t cutoff) {
  if (cutoff <= 0) return {};
  AccountCore::UnitOfWork work(core);
  const int64_t outbox_deleted = core.cleanup_outbox(cutoff);
  // Nothing deleted: the unit of work rolls back, and nothing is reported.
  if (outbox_deleted == 0) return {};
  core.commit(work);
  return {0, outbox_deleted};
}

}  // namespace inboxsim
