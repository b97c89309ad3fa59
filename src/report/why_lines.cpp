#include "report/why_lines.h"

#include "domain/scenario.h"
#include "report/narrate.h"

namespace inboxsim {

namespace {

constexpr std::string_view kTransferRequested = "Transfer.Requested";

bool names_ledger_key(const TraceEvent& event) { return event.cause == FaultCause::ledger_key; }

}  // namespace

std::string WhyLines::line(const TraceEvent& event, int64_t number,
                           const std::map<std::string, int64_t>& balances, bool balances_known) {
  const std::string service(event.service);
  std::string why;
  switch (event.kind) {
    case EventKind::publish: published_ms_[event.message_id] = event.time_ms; break;
    case EventKind::paused: pauses_[service] = {event.time_ms, -1}; break;
    case EventKind::resumed:
      if (const auto pause = pauses_.find(service); pause != pauses_.end()) {
        pause->second.second = event.time_ms;
      }
      break;
    case EventKind::deliver: why = waited_line(event); break;
    case EventKind::lock_wait: why = lock_wait_line(event); break;
    case EventKind::effect:
      if (event.entry == EntryType::debit && !event.transfer.empty()) {
        debits_.emplace(event.transfer, Debit{event.account, -event.amount, number});
      }
      break;
    case EventKind::consumer_fault:
    case EventKind::rejected: why = decided_line(event, balances, balances_known); break;
    default: break;
  }
  if (!event.message_id.empty() && event.kind != EventKind::publish &&
      event.kind != EventKind::deliver) {
    worked_on_.emplace(service, event.message_id);
  }
  return why;
}

// MassTransit's inbox takes the row lock at the start of every pass (each its own transaction);
// the Marten and no-inbox variants take none.
std::string WhyLines::lock_wait_line(const TraceEvent& event) const {
  const std::string service(event.service);
  if (worked_on_.count({service, event.message_id}) > 0) {
    return service + " is not done with " + event.message_id +
           ": MassTransit's inbox works in passes, each a transaction of its own that first "
           "locks the inbox row again, so this later pass waits for the other instance's";
  }
  return "the row stays locked until the holder's transaction ends: before that " + service +
         " cannot read whether " + event.message_id +
         " was consumed, so the two deliveries cannot both find it unconsumed";
}

// A message published while its consumer was paused, and delivered to that consumer only after
// the pause: the broker had handed it to that consumer, where it waited.
std::string WhyLines::waited_line(const TraceEvent& event) const {
  const auto pause = pauses_.find(std::string(event.target));
  const auto published = published_ms_.find(event.message_id);
  if (pause == pauses_.end() || published == published_ms_.end()) return {};
  const auto [paused_ms, resumed_ms] = pause->second;
  if (resumed_ms < 0 || published->second < paused_ms || published->second > resumed_ms ||
      event.time_ms < resumed_ms || event.redelivered) {
    return {};
  }
  return event.message_id + " was published at " + human_duration(published->second) +
         ", while " + std::string(event.target) +
         " was paused, and the broker gave it to that instance (round robin over the consumers "
         "with room in their prefetch): a delivery handed to a consumer waits for it, so it "
         "runs only now, after the pause";
}

// A Transfer.Requested copy for a transfer whose DEBIT is in the ledger.
std::string WhyLines::decided_line(const TraceEvent& event,
                                   const std::map<std::string, int64_t>& balances,
                                   bool balances_known) const {
  if (event.type != kTransferRequested || event.transfer.empty()) return {};
  const auto debit = debits_.find(event.transfer);
  if (debit == debits_.end()) return {};
  const std::string& account = debit->second.account;
  const std::string amount = std::to_string(debit->second.amount);
  const std::string first = event.transfer + " already has a DEBIT (#" +
                            std::to_string(debit->second.number) + ")";
  if (event.kind == EventKind::rejected) {
    return first + ", but nothing tells this handler so: judged against " + account +
           "'s balance as it is now, the copy is refused, and a rejection goes to a saga that "
           "was never told of the debit";
  }
  if (!names_ledger_key(event)) return {};
  const auto balance = balances.find(account);
  if (balances_known && balance != balances.end() && balance->second < debit->second.amount &&
      config_.account_remember_rejections) {
    return first + ": a decided transfer is not judged again against " + account +
           "'s balance now (" + std::to_string(balance->second) + ", short of " + amount +
           "); with account.remember_rejections the copy is a second debit, which the ledger "
           "key (transfer_id, DEBIT) refuses";
  }
  return first + ": the copy is a second debit, which the ledger key (transfer_id, DEBIT) "
                 "refuses";
}

}  // namespace inboxsim
