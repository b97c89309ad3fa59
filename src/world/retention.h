// Retention: when the services' cleanup passes are due (the inbox window, Marten's
// KeepAfterMessageHandling, transfer-service's TTL monitor) and the trace's words for what a
// pass deleted. World runs a pass on the instances it finds up; this part owns the tick.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "domain/config.h"
#include "world/limits.h"

namespace inboxsim {

class Retention {
 public:
  explicit Retention(const Config& config);

  // The tick a pass runs for when one is due at `now_ms`: the last tick at or before it (a pass
  // that several ticks missed runs once, for the latest). Moves the next tick past it.
  std::optional<int64_t> take_due(int64_t now_ms);
  // When the next pass is due (part of the world's state: the explorer's fingerprint reads it).
  int64_t next_tick_ms() const { return next_tick_ms_; }

  // The TTL monitor's tick for a pass at `tick_ms`: it runs on a coarser interval.
  static int64_t ttl_monitor_tick(int64_t tick_ms) {
    return tick_ms - tick_ms % kTtlMonitorIntervalMs;
  }

  // What a pass deleted, in the mechanism's words: account-service's inbox (or Marten's
  // documents, or the durable inbox's Handled envelopes) and outbox, transfer-service's
  // processed_messages and outbox.
  const std::string& account_inbox_words() const { return account_inbox_words_; }
  const std::string& account_outbox_words() const { return account_outbox_words_; }
  const std::string& transfer_processed_words() const { return transfer_processed_words_; }
  const std::string& transfer_outbox_words() const { return transfer_outbox_words_; }

 private:
  int64_t next_tick_ms_ = kCleanupIntervalMs;
  std::string account_inbox_words_;
  std::string account_outbox_words_;
  std::string transfer_processed_words_;
  std::string transfer_outbox_words_;
};

}  // namespace inboxsim
