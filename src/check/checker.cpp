#include "check/checker.h"

#include <algorithm>
#include <set>

#include "kernel/assert.h"

namespace inboxsim {

namespace {

size_t entry_index(EntryType type) { return static_cast<size_t>(type); }

std::string money(int64_t amount) { return std::to_string(amount); }

}  // namespace

Checker::Checker(const std::map<std::string, AccountSpec>& accounts, bool notifications_enabled,
                 bool emails_enabled)
    : notifications_enabled_(notifications_enabled), emails_enabled_(emails_enabled) {
  for (const auto& [name, spec] : accounts) {
    opening_[name] = spec.balance;
    balance_[name] = spec.balance;
    ledger_sum_[name] = 0;
    opening_total_ += spec.balance;
  }
  balance_total_ = opening_total_;
}

bool Checker::applies(Invariant invariant) const {
  if (invariant == Invariant::notified) return notifications_enabled_;
  if (invariant == Invariant::emailed) return emails_enabled_;
  return true;
}

void Checker::on_email(const std::string& transfer, int64_t now_ms) {
  INBOXSIM_ASSERT(emails_enabled_);
  uint16_t& emails = emails_[transfer];
  count_one(emails);
  if (emails > 1) {
    report(Invariant::emailed,
           "transfer " + transfer + " emailed its customer " + std::to_string(emails) + " times",
           now_ms);
  }
}

void Checker::register_transfer(const std::string& id, int64_t amount) {
  transfers_[id].set_amount(amount);
}

int64_t Checker::in_flight(const TransferFacts& facts) const {
  const bool debited = facts.entries[entry_index(EntryType::debit)] > 0;
  const bool settled = facts.entries[entry_index(EntryType::credit)] > 0 ||
                       facts.entries[entry_index(EntryType::refund)] > 0;
  return debited && !settled ? facts.amount() : 0;
}

void Checker::on_commit(const CommitRecord& record, int64_t now_ms) {
  std::set<std::string> touched_transfers;
  std::set<std::string> touched_accounts;
  for (const LedgerEntry& entry : record.ledger) {
    TransferFacts& facts = transfers_[entry.transfer];
    in_flight_total_ -= in_flight(facts);
    count_one(facts.entries[entry_index(entry.type)]);
    in_flight_total_ += in_flight(facts);
    ledger_sum_[entry.account] += entry.amount;
    touched_transfers.insert(entry.transfer);
    touched_accounts.insert(entry.account);
  }
  for (const BalanceWrite& write : record.balances) {
    balance_total_ += write.balance - balance_[write.account];
    balance_[write.account] = write.balance;
    touched_accounts.insert(write.account);
  }
  for (const SagaTransition& transition : record.transitions) {
    check_transition(transition, now_ms);
    transfers_[transition.transfer].set_state(transition.to);
    touched_transfers.insert(transition.transfer);
  }
  for (const std::string& transfer : record.notifications) {
    uint16_t& notifications = transfers_[transfer].notifications;
    count_one(notifications);
    const int64_t count = notifications;
    if (notifications_enabled_ && count > 1) {
      report(Invariant::notified,
             "transfer " + transfer + " notified " + std::to_string(count) + " times", now_ms);
    }
  }
  for (const std::string& id : touched_transfers) check_transfer(id, transfers_[id], now_ms);
  for (const std::string& account : touched_accounts) check_account(account, now_ms);
  if (balance_total_ + in_flight_total_ != opening_total_) {
    report(Invariant::conservation,
           "balances " + money(balance_total_) + " + in flight " + money(in_flight_total_) + " = " +
               money(balance_total_ + in_flight_total_) + ", opening total " +
               money(opening_total_),
           now_ms);
  }
}

void Checker::check_transition(const SagaTransition& transition, int64_t now_ms) {
  if (is_legal_transition(transition.from, transition.to)) return;
  const std::string from =
      transition.from ? std::string(saga_state_name(*transition.from)) : std::string("(none)");
  report(Invariant::legal_transitions,
         "transfer " + transition.transfer + " went " + from + " -> " +
             std::string(saga_state_name(transition.to)),
         now_ms);
}

void Checker::check_transfer(std::string_view id, const TransferFacts& facts, int64_t now_ms) {
  for (size_t type = 0; type < facts.entries.size(); ++type) {
    if (facts.entries[type] > 1) {
      report(Invariant::single_effect,
             "transfer " + std::string(id) + " has " + std::to_string(facts.entries[type]) + " " +
                 std::string(entry_type_name(static_cast<EntryType>(type))) + " entries",
             now_ms);
    }
  }
  if (!facts.state() || !is_terminal(*facts.state())) return;
  const int64_t debits = facts.entries[entry_index(EntryType::debit)];
  const int64_t credits = facts.entries[entry_index(EntryType::credit)];
  const int64_t refunds = facts.entries[entry_index(EntryType::refund)];
  bool agrees = true;
  switch (*facts.state()) {
    case SagaState::completed: agrees = debits == 1 && credits == 1 && refunds == 0; break;
    case SagaState::rejected: agrees = debits == 0 && credits == 0 && refunds == 0; break;
    case SagaState::failed: agrees = debits == 1 && credits == 0 && refunds == 1; break;
    default: break;
  }
  if (!agrees) {
    report(Invariant::saga_ledger,
           "transfer " + std::string(id) + " is " + std::string(saga_state_name(*facts.state())) +
               " with DEBIT x" + std::to_string(debits) + ", CREDIT x" + std::to_string(credits) +
               ", REFUND x" + std::to_string(refunds),
           now_ms);
  }
}

void Checker::check_account(const std::string& account, int64_t now_ms) {
  const int64_t balance = balance_[account];
  const int64_t expected = opening_[account] + ledger_sum_[account];
  if (balance != expected) {
    report(Invariant::ledger_balance,
           "account " + account + " balance " + money(balance) +
               " but opening + ledger = " + money(expected),
           now_ms);
  }
  if (balance < 0) {
    report(Invariant::no_overdraft, "account " + account + " balance " + money(balance), now_ms);
  }
}

namespace {

// " (stuck behind account-service_error: Transfer.Requested m-1)" when a message of the
// transfer waits in a dead-letter or error queue, else "".
std::string parked_behind(const std::string& transfer, const FinalState& state) {
  std::string text;
  if (!state.for_each_parked) return text;
  state.for_each_parked([&](const ParkedMessageRef& message) {
    if (message.transfer != transfer) return;
    text += (text.empty() ? " (stuck behind " : "; ") + message.queue + ": " + message.type + " " +
            message.message_id;
  });
  return text.empty() ? text : text + ")";
}

}  // namespace

void Checker::check_final(const FinalState& state, int64_t now_ms) {
  const std::map<std::string, int64_t> ledger_sum = rebuild_facts(state);
  check_balances(state, ledger_sum, now_ms);
  if (notifications_enabled_) check_notified(now_ms);
  if (emails_enabled_) check_emailed(now_ms);
  const std::string unsettled = unsettled_text(state);
  if (!unsettled.empty()) report(Invariant::termination, "did not settle: " + unsettled, now_ms);
}

// Rebuilds every fact from the databases, not from what transactions reported, so a reporting
// mistake cannot hide a broken invariant. In place: only the amounts stay (a copy of a million
// transfers' facts would double what the checker holds). Returns each account's ledger sum.
std::map<std::string, int64_t> Checker::rebuild_facts(const FinalState& state) {
  TransferTable<TransferFacts>& transfers = transfers_;
  transfers.for_each([](std::string_view, TransferFacts& facts) {
    const int64_t amount = facts.amount();
    facts = TransferFacts{};
    facts.set_amount(amount);
  });
  std::map<std::string, int64_t> ledger_sum;
  if (state.for_each_ledger_entry) {
    state.for_each_ledger_entry([&](const LedgerEntry& entry) {
      count_one(transfers[entry.transfer].entries[entry_index(entry.type)]);
      ledger_sum[entry.account] += entry.amount;
    });
  }
  if (state.for_each_saga) {
    state.for_each_saga([&](const std::string& id, SagaState saga) { transfers[id].set_state(saga); });
  }
  for (const auto& [id, count] : state.notifications) {
    transfers[id].notifications = static_cast<uint16_t>(std::min<int64_t>(count, kFactCountMax));
  }
  return ledger_sum;
}

// Each account against its ledger, each transfer against its saga, and conservation: the
// balances and the money in flight add up to the opening total.
void Checker::check_balances(const FinalState& state,
                             const std::map<std::string, int64_t>& ledger_sum, int64_t now_ms) {
  int64_t total = 0;
  for (const auto& [account, balance] : state.balances) {
    total += balance;
    balance_[account] = balance;
    const auto found = ledger_sum.find(account);
    ledger_sum_[account] = found == ledger_sum.end() ? 0 : found->second;
    check_account(account, now_ms);
  }
  int64_t in_flight_total = 0;
  transfers_.for_each([&](std::string_view id, const TransferFacts& facts) {
    in_flight_total += in_flight(facts);
    check_transfer(id, facts, now_ms);
  });
  if (total + in_flight_total != opening_total_) {
    report(Invariant::conservation,
           "at the end: balances " + money(total) + " + in flight " + money(in_flight_total) +
               ", opening total " + money(opening_total_),
           now_ms);
  }
}

// Every finished transfer notified exactly once (transfer.notifications on).
void Checker::check_notified(int64_t now_ms) {
  transfers_.for_each([&](std::string_view id, const TransferFacts& facts) {
    const bool finished = facts.state() == SagaState::completed || facts.state() == SagaState::failed;
    if (finished && facts.notifications != 1) {
      report(Invariant::notified,
             "transfer " + std::string(id) + " is " +
                 std::string(saga_state_name(*facts.state())) + " with " +
                 std::to_string(facts.notifications) + " notifications",
             now_ms);
    }
  });
}

// Every finished transfer emailed exactly once (transfer.email on).
void Checker::check_emailed(int64_t now_ms) {
  transfers_.for_each([&](std::string_view id, const TransferFacts& facts) {
    const bool finished =
        facts.state() == SagaState::completed || facts.state() == SagaState::failed;
    const auto found = emails_.find(std::string(id));
    const int64_t emails = found == emails_.end() ? 0 : found->second;
    if (finished && emails != 1) {
      report(Invariant::emailed,
             "transfer " + std::string(id) + " is " +
                 std::string(saga_state_name(*facts.state())) + " with " +
                 std::to_string(emails) + " emails sent",
             now_ms);
    }
  });
}

// What did not settle at the end, for termination: transfers not in a terminal state (and
// where their messages are parked), a halt or no quiescence, messages still queued, outbox
// rows unsent. Empty when everything settled.
std::string Checker::unsettled_text(const FinalState& state) const {
  std::string unsettled;
  transfers_.for_each([&](std::string_view id, const TransferFacts& facts) {
    if (!facts.state() || !is_terminal(*facts.state())) {
      if (!unsettled.empty()) unsettled += ", ";
      unsettled += std::string(id) + " is " +
                   (facts.state() ? std::string(saga_state_name(*facts.state())) : "unknown");
      unsettled += parked_behind(std::string(id), state);
    }
  });
  if (!state.halted.empty()) {
    unsettled += (unsettled.empty() ? "" : "; ") + state.halted;
  } else if (!state.quiescent) {
    unsettled +=
        (unsettled.empty() ? "" : "; ") + std::string("no quiescence within the event bound");
  }
  if (state.queued_messages > 0) {
    unsettled += (unsettled.empty() ? "" : "; ") + std::to_string(state.queued_messages) +
                 " messages still queued";
  }
  if (state.unsent_outbox_rows > 0) {
    unsettled += (unsettled.empty() ? "" : "; ") + std::to_string(state.unsent_outbox_rows) +
                 " outbox rows unsent";
  }
  if (!unsettled.empty() && state.dead_lettered > 0) {
    unsettled += " (" + std::to_string(state.dead_lettered) + " dead-lettered)";
  }
  return unsettled;
}

void Checker::report(Invariant invariant, std::string detail, int64_t now_ms) {
  const auto index = static_cast<size_t>(invariant);
  INBOXSIM_ASSERT(index < kInvariantCount);
  if (violated_[index]) return;
  violated_[index] = true;
  violations_.push_back(Violation{invariant, std::move(detail), now_ms});
  if (on_violation) on_violation(violations_.back());
}

void Checker::fingerprint(Hasher& hasher) const {
  hasher.add_signed(balance_total_).add_signed(in_flight_total_);
  for (const auto& [account, balance] : balance_) hasher.add(account).add_signed(balance);
  for (const auto& [account, sum] : ledger_sum_) hasher.add(account).add_signed(sum);
  transfers_.for_each([&](std::string_view id, const TransferFacts& facts) {
    hasher.add(id).add_signed(facts.amount()).add_signed(facts.notifications);
    for (const int64_t entries : facts.entries) hasher.add_signed(entries);
    hasher.add_signed(facts.state() ? static_cast<int64_t>(*facts.state()) : -1);
  });
  for (const auto& [transfer, emails] : emails_) hasher.add(transfer).add_signed(emails);
  for (const bool violated : violated_) hasher.add(violated);
}

}  // namespace inboxsim
