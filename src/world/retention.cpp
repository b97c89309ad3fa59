#include "world/retention.h"

#include "domain/account_inbox.h"

namespace inboxsim {

namespace {

// The inbox cleanup's words: the Marten documents and the durable inbox's Handled envelopes
// are kept Wolverine's KeepAfterMessageHandling, not the window.
std::string inbox_words(const Config& config, const std::string& window) {
  const std::string keep = std::to_string(config.account_keep_after_handling_ms);
  switch (account_inbox_kind(config.account_inbox).retention) {
    case InboxRetention::handled_documents:
      return "documents handled more than " + keep + " ms ago deleted (KeepAfterMessageHandling)";
    case InboxRetention::handled_envelopes:
      return "Handled envelopes past their keep_until deleted from wolverine_incoming_envelopes "
             "(KeepAfterMessageHandling, " +
             keep + " ms)";
    case InboxRetention::delivered_rows: break;
  }
  return "rows delivered more than " + window + " ms ago deleted";
}

}  // namespace

Retention::Retention(const Config& config) {
  const std::string window = std::to_string(config.account_inbox_window_ms);
  const std::string ttl = std::to_string(config.transfer_processed_ttl_ms);
  account_inbox_words_ = "inbox cleanup: " + inbox_words(config, window);
  account_outbox_words_ = "outbox cleanup: rows delivered more than " + window + " ms ago deleted";
  transfer_processed_words_ = "TTL: processed_messages older than " + ttl + " ms deleted";
  transfer_outbox_words_ = "TTL: outbox rows sent more than " + ttl + " ms ago deleted";
}

std::optional<int64_t> Retention::take_due(int64_t now_ms) {
  if (now_ms < next_tick_ms_) return std::nullopt;
  const int64_t ticks_passed = (now_ms - next_tick_ms_) / kCleanupIntervalMs;
  const int64_t tick_ms = next_tick_ms_ + ticks_passed * kCleanupIntervalMs;
  next_tick_ms_ = tick_ms + kCleanupIntervalMs;
  return tick_ms;
}

}  // namespace inboxsim
