// The result builder: the final state the checker's end-of-run checks read, and the RunResult of
// a run, finished or in the middle (the playground's snapshot).
#include <string>
#include <utility>
#include <vector>

#include "domain/participants.h"
#include "kernel/assert.h"
#include "world/world.h"
#include "world/world_events.h"

namespace inboxsim {

namespace {

// A parked message as the checker and the result name it.
ParkedMessageRef parked_ref_of(const ParkedMessage& parked) {
  return ParkedMessageRef{parked.queue, parked.message->transfer,
                          std::string(message_type_name(parked.message->type)),
                          parked.message->message_id};
}

}  // namespace

RunResult World::finish() {
  const Process& account = processes_.first(ServiceId::account);
  const Process& transfer = processes_.first(ServiceId::transfer);
  FinalState final_state;
  final_state.balances = account.account->balances();
  final_state.for_each_ledger_entry = [&](const auto& visit) {
    account.account->for_each_ledger_entry(visit);
  };
  final_state.for_each_saga = [&](const auto& visit) { transfer.transfer->for_each_saga(visit); };
  final_state.notifications = transfer.transfer->notification_counts();
  final_state.queued_messages =
      static_cast<int64_t>(broker_->ready_messages() + broker_->unacked_messages());
  final_state.unsent_outbox_rows =
      account.account->undelivered_outbox_rows() + transfer.transfer->unsent_outbox_rows();
  final_state.dead_lettered = stats_.stats().dead_lettered;
  final_state.quiescent = quiescent_;
  final_state.halted = halted_reason_;
  final_state.for_each_parked = [&](const auto& visit) {
    for (const ParkedMessage& parked : broker_->parked()) visit(parked_ref_of(parked));
  };
  checker_.check_final(final_state, now_ms());
  return snapshot();
}

RunResult World::snapshot() {
  const Process& account = processes_.first(ServiceId::account);
  const Process& transfer = processes_.first(ServiceId::transfer);
  RunResult result;
  result.config = config_to_json(config_);
  result.trace_hash = trace_.hash_hex();
  result.virtual_ms = now_ms();
  result.stats = stats_.stats();
  result.dedupe_hits = stats_.dedupe_hits();
  result.coverage = coverage_.coverage();
  result.published_ids = publications_.published_counts();
  result.sends = publications_.sends();
  result.dead_letter_queues = broker_->parked_totals();
  if (keep_final_tables_) {
    for (const ParkedMessage& message : broker_->parked()) {
      const ParkedMessageRef parked = parked_ref_of(message);
      result.parked.push_back(parked.queue + ": " + parked.type + " " + parked.transfer + " (" +
                              parked.message_id + ")");
    }
  }
  for (const auto& [name, spec] : accounts_) result.opening_balances[name] = spec.balance;
  result.balances = account.account->balances();
  if (keep_final_tables_) {
    result.transfers = transfer.transfer->sagas();
    result.transfer_amounts = transfer_amounts_;
    result.ledger = account.account->ledger();
  }
  for (size_t index = 0; index < kInvariantCount; ++index) {
    const auto invariant = static_cast<Invariant>(index);
    result.invariant_applies[index] = checker_.applies(invariant);
  }
  // Violations in contract order, each with the first detail found.
  for (size_t index = 0; index < kInvariantCount; ++index) {
    for (const Violation& violation : checker_.violations()) {
      if (static_cast<size_t>(violation.invariant) == index) result.violations.push_back(violation);
    }
  }
  if (keep_final_tables_) result.unfired_faults = faults_.unfired();
  result.events = trace_.events();
  result.envelopes = publications_.envelopes();
  if (rows_) result.rows = rows_->finish(*broker_);
  return result;
}

}  // namespace inboxsim
