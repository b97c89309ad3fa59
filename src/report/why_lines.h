// The narration's `↳` lines for decisions that follow from earlier events, and that no single
// event's sentence can explain: a handler waiting for an inbox row's lock (the first wait, and a
// later pass of the same delivery locking the row again), a delivery that waited behind its
// consumer's pause in the consumer's prefetch buffer, and a copy of a decided transfer's
// Transfer.Requested that reaches the ledger key (or, without the record of the decision, is
// judged against today's balance). The Narrator feeds it every event in order; what it keeps is
// one entry per (instance, message), per message id, per paused instance and per debited transfer,
// so it grows with the run's messages, as the Narrator's record of the relay's first ids does.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "domain/config.h"
#include "kernel/trace.h"

namespace inboxsim {

class WhyLines {
 public:
  void set_config(const Config& config) { config_ = config; }

  // The `↳` line event `number` needs (without the arrow), or nothing. `balances` are the
  // running balances when `balances_known` (the narration was given the opening balances).
  std::string line(const TraceEvent& event, int64_t number,
                   const std::map<std::string, int64_t>& balances, bool balances_known);

 private:
  std::string lock_wait_line(const TraceEvent& event) const;
  std::string waited_line(const TraceEvent& event) const;
  std::string decided_line(const TraceEvent& event, const std::map<std::string, int64_t>& balances,
                           bool balances_known) const;

  Config config_;
  // (instance, message id) pairs where the instance has worked on the message: a later lock
  // wait of that pair is a later pass of the same delivery.
  std::set<std::pair<std::string, std::string>> worked_on_;
  // When each message id was last published.
  std::map<std::string, int64_t> published_ms_;
  // Each instance's last pause: (paused at, resumed at; -1 while it is still paused).
  std::map<std::string, std::pair<int64_t, int64_t>> pauses_;
  // Each transfer's first DEBIT: the account, the amount (positive) and the event's number.
  struct Debit {
    std::string account;
    int64_t amount = 0;
    int64_t number = 0;
  };
  std::map<std::string, Debit> debits_;
};

}  // namespace inboxsim
