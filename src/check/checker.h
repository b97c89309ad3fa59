// The invariants of docs/contract.md §4: whether money was invented or destroyed, whether the ledger and
// the balances agree, whether any effect happened twice, whether the saga and the ledger agree,
// whether every saga change was legal, whether a balance went negative, whether every finished
// transfer was notified once, and whether the world settled.
//
// Safety invariants are checked incrementally after every committed transaction, from what the
// transaction reported (balances as the database returned them). check_final() checks them all
// again from the databases' committed state, and checks termination. Each invariant is reported
// once, with the first detail that broke it.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "domain/commit.h"
#include "domain/result.h"
#include "check/transfer_table.h"
#include "kernel/assert.h"
#include "domain/scenario.h"
#include "kernel/fingerprint.h"

namespace inboxsim {

// A message waiting in a dead-letter or error queue at the end of a run.
struct ParkedMessageRef {
  std::string queue;
  std::string transfer;
  std::string type;
  std::string message_id;
};

// The committed state of both services and the broker at the end of a run. The ledger and the
// sagas, a few rows per transfer, are read as the checker goes rather than held (an empty
// function: no rows).
struct FinalState {
  std::map<std::string, int64_t> balances;
  std::function<void(const std::function<void(const LedgerEntry&)>&)> for_each_ledger_entry;
  std::function<void(const std::function<void(const std::string&, SagaState)>&)> for_each_saga;
  std::map<std::string, int64_t> notifications;
  int64_t queued_messages = 0;     // ready or unacked in the broker
  int64_t unsent_outbox_rows = 0;  // both services
  int64_t dead_lettered = 0;
  bool quiescent = true;  // the last run reached quiescence within its bound
  std::string halted;     // why the run stopped at a bound other than the event count, if it did
  // Calls its argument with each message in a dead-letter or error queue (empty: none). Read
  // only to say what an unsettled transfer is stuck behind: a long story parks many messages.
  std::function<void(const std::function<void(const ParkedMessageRef&)>&)> for_each_parked;
};

class Checker {
 public:
  // `emails_enabled`: the notifications consumer sends an email (transfer.email), and the
  // emailed invariant applies.
  Checker(const std::map<std::string, AccountSpec>& accounts, bool notifications_enabled,
          bool emails_enabled = false);

  // Remembers a transfer's amount (in flight once debited).
  void register_transfer(const std::string& id, int64_t amount);

  // Checks the safety invariants after one committed transaction.
  void on_commit(const CommitRecord& record, int64_t now_ms);

  // Counts an email sent for `transfer`, an effect outside every transaction: a second one
  // breaks emailed at once.
  void on_email(const std::string& transfer, int64_t now_ms);

  // Checks every invariant from the final committed state.
  void check_final(const FinalState& state, int64_t now_ms);

  // Violations found so far, one per invariant, in the order found.
  const std::vector<Violation>& violations() const { return violations_; }
  bool violated(Invariant invariant) const { return violated_[static_cast<size_t>(invariant)]; }
  bool applies(Invariant invariant) const;

  // What the checker knows, for the explorer: balances, ledger sums and each transfer's facts.
  void fingerprint(Hasher& hasher) const;

  // Called once per newly violated invariant.
  std::function<void(const Violation&)> on_violation;

 private:
  // What the checker knows of one transfer, kept small: a long run has a million of them.
  // The counts stop at kFactCountMax; every check asks whether one is above 1.
  static constexpr uint16_t kFactCountMax = std::numeric_limits<uint16_t>::max();
  // Sixteen bytes: the amount (below 2^53, docs/contract.md §6) shares a word with the saga state.
  struct TransferFacts {
    static constexpr int kStateShift = 56;
    static constexpr uint64_t kAmountMask = (uint64_t{1} << kStateShift) - 1;

    uint64_t amount_and_state = 0;  // amount in the low 56 bits; state + 1 above (0: none yet)
    std::array<uint16_t, 3> entries{};  // per EntryType
    uint16_t notifications = 0;

    int64_t amount() const { return static_cast<int64_t>(amount_and_state & kAmountMask); }
    void set_amount(int64_t amount) {
      INBOXSIM_ASSERT(amount >= 0);
      INBOXSIM_ASSERT(static_cast<uint64_t>(amount) <= kAmountMask);
      amount_and_state = (amount_and_state & ~kAmountMask) | static_cast<uint64_t>(amount);
    }
    std::optional<SagaState> state() const {
      const uint64_t code = amount_and_state >> kStateShift;
      if (code == 0) return std::nullopt;
      return static_cast<SagaState>(code - 1);
    }
    void set_state(SagaState state) {
      amount_and_state = (amount_and_state & kAmountMask) |
                         ((static_cast<uint64_t>(state) + 1) << kStateShift);
    }
  };
  static_assert(sizeof(TransferFacts) == 16);
  static void count_one(uint16_t& count) {
    if (count < kFactCountMax) ++count;
  }

  void report(Invariant invariant, std::string detail, int64_t now_ms);
  int64_t in_flight(const TransferFacts& facts) const;
  void check_transfer(std::string_view id, const TransferFacts& facts, int64_t now_ms);
  void check_account(const std::string& account, int64_t now_ms);
  void check_transition(const SagaTransition& transition, int64_t now_ms);
  std::map<std::string, int64_t> rebuild_facts(const FinalState& state);
  void check_balances(const FinalState& state, const std::map<std::string, int64_t>& ledger_sum,
                      int64_t now_ms);
  void check_notified(int64_t now_ms);
  void check_emailed(int64_t now_ms);
  std::string unsettled_text(const FinalState& state) const;

  bool notifications_enabled_;
  bool emails_enabled_;
  // Emails per transfer, counted as the host reports them (no database holds them); only the
  // runs with transfer.email on fill it.
  std::map<std::string, uint16_t> emails_;
  int64_t opening_total_ = 0;
  int64_t balance_total_ = 0;
  int64_t in_flight_total_ = 0;
  std::map<std::string, int64_t> opening_;
  std::map<std::string, int64_t> balance_;
  std::map<std::string, int64_t> ledger_sum_;
  TransferTable<TransferFacts> transfers_;
  std::array<bool, kInvariantCount> violated_{};
  std::vector<Violation> violations_;
};

}  // namespace inboxsim
