#include "domain/account_inbox.h"

#include <algorithm>
#include <array>

#include "domain/config.h"
#include "kernel/assert.h"

namespace inboxsim {

namespace {

using CP = CrashPoint;

// MassTransit: pass 1 looks the row up (after_precheck) and commits it (after_dedupe); pass 2
// writes the change (after_effect) and commits (after_commit); a send pass sends
// (after_outbox_send).
constexpr std::array<CrashPoint, 6> kMassTransitPoints = {CP::before_tx,    CP::after_precheck,
                                                          CP::after_dedupe, CP::after_effect,
                                                          CP::after_commit, CP::after_outbox_send};
// Marten: the document's pre-check (after_precheck), the document stored in the business
// transaction (after_dedupe, after_effect), then the swept outbox.
constexpr std::array<CrashPoint, 6> kMartenPoints = kMassTransitPoints;
// No inbox: no lookup at all; after_dedupe is where the dedupe step would be.
constexpr std::array<CrashPoint, 5> kNoInboxPoints = {
    CP::before_tx, CP::after_dedupe, CP::after_effect, CP::after_commit, CP::after_outbox_send};
// The external seen-set, check-then-add: the check (after_precheck and after_dedupe name the
// same boundary), the mark (after_mark), the business transaction.
constexpr std::array<CrashPoint, 7> kSeenSetPoints = {
    CP::before_tx,    CP::after_precheck,    CP::after_dedupe, CP::after_effect,
    CP::after_commit, CP::after_outbox_send, CP::after_mark};

// The external seen-set, checked and marked in one call (SET NX): that call (after_dedupe and
// after_mark name the same boundary), then the business transaction.
constexpr std::array<CrashPoint, 6> kAtomicSeenSetPoints = {CP::before_tx,         CP::after_dedupe,
                                                            CP::after_effect,      CP::after_commit,
                                                            CP::after_outbox_send, CP::after_mark};

// Wolverine's durable inbox: the store (before_tx, then after_store), the ack (after_ack), the
// handler's transaction that marks the envelope Handled (after_effect, after_commit), then the
// swept outbox.
constexpr std::array<CrashPoint, 6> kWolverinePoints = {CP::before_tx,    CP::after_effect,
                                                        CP::after_commit, CP::after_outbox_send,
                                                        CP::after_store,  CP::after_ack};

constexpr std::array<Probe, 2> kMassTransitProbes = {Probe::dedupe_masstransit,
                                                     Probe::dedupe_masstransit_resend};
constexpr std::array<Probe, 2> kMartenProbes = {Probe::dedupe_marten_precheck,
                                                Probe::dedupe_marten_backstop};
constexpr std::array<Probe, 1> kBeforeProbes = {Probe::dedupe_account_external_before};
constexpr std::array<Probe, 1> kAfterProbes = {Probe::dedupe_account_external_after};
constexpr std::array<Probe, 1> kAtomicProbes = {Probe::dedupe_account_external_atomic};
constexpr std::array<Probe, 1> kWolverineProbes = {Probe::dedupe_wolverine_incoming};

constexpr std::array<std::string_view, 4> kMassTransitKeys = {
    "account.inbox_unique", "account.masstransit", "account.database", "account.isolation"};
constexpr std::array<std::string_view, 3> kMartenKeys = {
    "account.inbox_unique", "account.keep_after_handling_ms", "account.marten_append"};
constexpr std::array<std::string_view, 3> kWolverineKeys = {
    "account.inbox_unique", "account.keep_after_handling_ms", "account.durability_poll_ms"};

// Marten's rich append fails a concurrent append with a unique violation: a consumer that acks
// every unique violation as a duplicate acks a debit that never happened.
void repair_marten(Config& config) {
  if (config.account_marten_append == MartenAppend::rich) {
    config.account_ledger_conflict = LedgerConflict::fault;
  }
}

constexpr std::array<AccountInboxKind, kAccountInboxCount> kKinds = {{
    {
        .inbox = AccountInbox::masstransit,
        .name = "masstransit",
        .summary = "MassTransit's Entity Framework inbox and consumer outbox: an inbox_state row "
                   "per message, a transaction per pass",
        .framework = InboxFramework::masstransit,
        .is_a_defence = true,
        .crash_points = kMassTransitPoints,
        .probes = kMassTransitProbes,
        .keys = kMassTransitKeys,
        .retention = InboxRetention::delivered_rows,
        .order_read_per_message = true,
    },
    {
        .inbox = AccountInbox::marten,
        .name = "marten",
        .summary = "Wolverine's inbox on Marten: a document per message looked up first, stored "
                   "with the event append, its primary key the backstop",
        .framework = InboxFramework::wolverine,
        .is_a_defence = true,
        .swept_outbox = true,
        .event_stream_ledger = true,
        .crash_points = kMartenPoints,
        .probes = kMartenProbes,
        .keys = kMartenKeys,
        .dropped_key_words = "inbox_documents' primary key (message_id)",
        .retention = InboxRetention::handled_documents,
        .repair = repair_marten,
    },
    {
        .inbox = AccountInbox::none,
        .name = "none",
        .summary = "no inbox: every delivery runs the business change",
        .framework = InboxFramework::masstransit,
        .swept_outbox = true,
        .crash_points = kNoInboxPoints,
        .retention = InboxRetention::delivered_rows,
    },
    {
        .inbox = AccountInbox::external_before,
        .name = "external-before",
        .summary = "a Redis SET of seen ids, check-then-add, marked before the business commit",
        .framework = InboxFramework::masstransit,
        .swept_outbox = true,
        .crash_points = kSeenSetPoints,
        .probes = kBeforeProbes,
        .retention = InboxRetention::delivered_rows,
    },
    {
        .inbox = AccountInbox::external_after,
        .name = "external-after",
        .summary = "a Redis SET of seen ids, check-then-add, marked after the business commit",
        .framework = InboxFramework::masstransit,
        .swept_outbox = true,
        .crash_points = kSeenSetPoints,
        .mark_after_commit = true,
        .probes = kAfterProbes,
        .retention = InboxRetention::delivered_rows,
    },
    // Not a defence: the mark is still outside the transaction, so a mark whose transaction
    // rolls back makes the redelivery look like a duplicate (scenario 70).
    {
        .inbox = AccountInbox::external_atomic,
        .name = "external-atomic",
        .summary = "a Redis SET of seen ids, checked and marked in one call (SET NX), before the "
                   "business commit",
        .framework = InboxFramework::masstransit,
        .swept_outbox = true,
        .crash_points = kAtomicSeenSetPoints,
        .probes = kAtomicProbes,
        .retention = InboxRetention::delivered_rows,
    },
    // A defence with the ledger key: the store is the dedupe record, in its own transaction
    // before the ack, and the handler's transaction marks it Handled with the business write;
    // a recovery that takes an envelope still being handled is caught by the ledger key alone
    // (scenario 72), so without it the bank is broken (the fuzzer's broken bank).
    {
        .inbox = AccountInbox::wolverine,
        .name = "wolverine",
        .summary = "Wolverine's durable inbox: the envelope stored (Incoming) and the broker acked "
                   "at once, handled from the table and marked Handled, a durability agent "
                   "recovering envelopes whose node is gone",
        .framework = InboxFramework::wolverine,
        .is_a_defence = true,
        .swept_outbox = true,
        .crash_points = kWolverinePoints,
        .probes = kWolverineProbes,
        .keys = kWolverineKeys,
        .dropped_key_words = "wolverine_incoming_envelopes' key (message_id)",
        .retention = InboxRetention::handled_envelopes,
        .store_and_ack = true,
    },
}};

// Row i is the mechanism whose value is i, and every row has a name, so AccountInbox indexes
// the table.
constexpr bool rows_in_enum_order() {
  for (size_t i = 0; i < kKinds.size(); ++i) {
    if (static_cast<size_t>(kKinds[i].inbox) != i || kKinds[i].name.empty()) return false;
  }
  return true;
}
static_assert(rows_in_enum_order());

}  // namespace

bool AccountInboxKind::has(CrashPoint point) const {
  return std::find(crash_points.begin(), crash_points.end(), point) != crash_points.end();
}

std::span<const AccountInboxKind> account_inbox_kinds() { return kKinds; }

const AccountInboxKind& account_inbox_kind(AccountInbox inbox) {
  const auto index = static_cast<size_t>(inbox);
  INBOXSIM_ASSERT(index < kKinds.size());
  const AccountInboxKind& kind = kKinds[index];
  INBOXSIM_ASSERT(kind.inbox == inbox);
  return kind;
}

std::optional<AccountInbox> parse_account_inbox(std::string_view name) {
  for (const AccountInboxKind& kind : kKinds) {
    if (kind.name == name) return kind.inbox;
  }
  return std::nullopt;
}

std::string account_inbox_names_text() {
  std::string text;
  for (const AccountInboxKind& kind : kKinds) {
    if (!text.empty()) text += ", ";
    text += kind.name;
  }
  return text;
}

AccountInbox default_account_inbox() { return AccountInbox::masstransit; }

AccountInbox no_account_inbox() { return AccountInbox::none; }

}  // namespace inboxsim
