// What one committed service transaction changed, as the service reports it to the checker
// and the trace: balances as the database returned them, ledger entries, saga transitions,
// notifications, and the trace lines that belong to the commit.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "domain/crash.h"
#include "domain/result.h"
#include "domain/scenario.h"
#include "kernel/trace.h"

namespace inboxsim {

struct BalanceWrite {
  std::string account;
  int64_t balance = 0;  // the value the database holds after the write
};

struct SagaTransition {
  std::string transfer;
  std::optional<SagaState> from;  // empty when the saga row was created
  SagaState to = SagaState::requested;
};

// What one committed transaction changed, for the checker and the trace. A service fills it
// while its transaction is open and hands it over only after COMMIT succeeded, so a rolled-back
// transaction leaves no trace.
struct CommitRecord {
  ServiceId service = ServiceId::account;
  std::vector<LedgerEntry> ledger;
  std::vector<BalanceWrite> balances;
  std::vector<SagaTransition> transitions;
  std::vector<std::string> notifications;  // transfer ids notified
  std::vector<TraceEvent> events;          // effect, rejected, saga, ... lines to record
  bool outbox_written = false;

  void clear() {
    ledger.clear();
    balances.clear();
    transitions.clear();
    notifications.clear();
    events.clear();
    outbox_written = false;
  }
};

}  // namespace inboxsim
