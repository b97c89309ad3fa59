// The account-service inbox seam: one dedupe mechanism (account.inbox) of one instance.
//
// A mechanism runs a whole delivery of a transfer command: its dedupe records, the unit of work
// in which it calls AccountCore::consume for the business change, and the order of the steps
// between them (where the host may crash, pause or interleave the instance). It also says what
// its retention cleanup deletes and how many outbox rows it has not sent. What the mechanism is
// (its name, framework, crash points, probes, keys) is its row in domain/account_inbox.h; its code
// is one file in this folder, made through the factory table below, chosen once per instance.
//
// The handler is one virtual call per delivery, which starts a coroutine; the coroutine's frame
// and its SQLite transactions cost far more than the call.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "domain/account_inbox.h"
#include "services/inbox/account_core.h"

namespace inboxsim {

class AccountInboxMechanism {
 public:
  virtual ~AccountInboxMechanism() = default;

  // Handles one delivery from queue `account-service`: a Task that ends with whether to ack or
  // nack. It may end by throwing ServiceCrash (a crash point fired; the open transaction rolled
  // back) or ConsumerFault (the handler failed and rolled back).
  virtual Task<Outcome> handle(MessagePtr message) = 0;

  // The retention cleanup as of `as_of_ms`: the mechanism's dedupe records past their window
  // and the outbox rows delivered before account.inbox_window_ms, in one transaction. Returns
  // how many rows of each went.
  virtual CleanupCounts cleanup(int64_t as_of_ms) = 0;

  // The outbox rows no send has delivered yet.
  virtual int64_t undelivered_outbox_rows() = 0;

  // The mechanisms that store the envelope and ack before handling it (the registry's
  // store_and_ack; none of the others is ever asked):

  // Handles an envelope already stored and acked, from the table: a Task as handle()'s.
  virtual Task<Outcome> handle_stored(MessagePtr message);
  // What one poll of the durability agent did: the envelopes it claimed for this node, which
  // the caller handles from the table, and whether any envelope is still Incoming.
  struct Recovery {
    std::vector<MessagePtr> recovered;
    bool incoming_left = false;
  };
  // One poll of the durability agent, given the node numbers that are alive.
  virtual Recovery recover(const std::vector<int64_t>& live_nodes);
  // The envelope's attempts are spent: it leaves the table for dead-letter storage.
  virtual void dead_letter(const Message& message);
  // The process started again: a new node.
  virtual void restarted() {}
  // This process's node number (0 when the mechanism has no nodes).
  virtual int64_t node_number() const { return 0; }
};

// One constructor per mechanism, each defined in the mechanism's file.
std::unique_ptr<AccountInboxMechanism> make_masstransit_inbox(AccountCore& core);
std::unique_ptr<AccountInboxMechanism> make_marten_inbox(AccountCore& core);
std::unique_ptr<AccountInboxMechanism> make_no_inbox(AccountCore& core);
std::unique_ptr<AccountInboxMechanism> make_seen_set_before_inbox(AccountCore& core);
std::unique_ptr<AccountInboxMechanism> make_seen_set_after_inbox(AccountCore& core);
std::unique_ptr<AccountInboxMechanism> make_atomic_seen_set_inbox(AccountCore& core);
std::unique_ptr<AccountInboxMechanism> make_wolverine_inbox(AccountCore& core);

// The mechanism of `inbox`, for the instance whose core is `core`.
std::unique_ptr<AccountInboxMechanism> make_account_inbox(AccountInbox inbox, AccountCore& core);

// The swept mechanisms' count of unsent outbox rows: every row not marked delivered, but for a
// message whose inbox_state row says delivered (there is none outside MassTransit's inbox).
int64_t swept_undelivered_outbox_rows(AccountCore& core);

// The cleanup of a mechanism with no dedupe records of its own in the database: the outbox rows
// delivered before `cutoff`, in one transaction.
CleanupCounts outbox_only_cleanup(AccountCore& core, int64_t cutoff);

}  // namespace inboxsim
