#include "domain/config.h"

#include <array>
#include <charconv>

#include "domain/participants.h"
#include "kernel/assert.h"
#include "kernel/text.h"

namespace inboxsim {

namespace {

constexpr std::array<std::string_view, 5> kTransferDedupeNames = {
    "processed_messages", "none", "external-before", "external-after", "processed-after"};
constexpr std::array<std::string_view, 2> kDedupeKeyNames = {"message_id", "message_id+consumer"};
constexpr std::array<std::string_view, 2> kQueueTypeNames = {"quorum", "classic"};
constexpr std::array<std::string_view, 2> kLedgerConflictNames = {"fault", "ack"};
constexpr std::array<std::string_view, 2> kDeadLetterNames = {"none", "dlx"};
constexpr std::array<std::string_view, 3> kMassTransitVersionNames = {"8.5", "8.3", "8.2"};
constexpr std::array<std::string_view, 2> kAccountDatabaseNames = {"postgres", "sqlserver"};
constexpr std::array<std::string_view, 2> kIsolationNames = {"repeatable_read", "read_committed"};
constexpr std::array<std::string_view, 2> kMartenAppendNames = {"rich", "quick"};
constexpr std::array<std::string_view, 3> kEmailSendNames = {"none", "before_commit",
                                                             "after_commit"};

// The largest value accepted for a millisecond window: 100 years, well inside int64.
constexpr int64_t kWindowMsMax = 100LL * 365 * 24 * 3600 * 1000;
constexpr int64_t kPrefetchMax = 10'000;
constexpr int64_t kDeliveryLimitMax = 1'000;

template <size_t N>
std::string one_of(const std::array<std::string_view, N>& names) {
  std::string text = "one of ";
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) text += ", ";
    text += names[i];
  }
  return text;
}

template <typename Enum, size_t N>
std::string set_choice(Enum& field, const std::array<std::string_view, N>& names,
                       const nlohmann::json& value) {
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    for (size_t i = 0; i < N; ++i) {
      if (names[i] == text) {
        field = static_cast<Enum>(i);
        return {};
      }
    }
  }
  return "a string, " + one_of(names);
}

// account.inbox: the names are the registry's (domain/account_inbox.h).
std::string set_account_inbox(AccountInbox& field, const nlohmann::json& value) {
  if (value.is_string()) {
    const std::optional<AccountInbox> inbox =
        parse_account_inbox(value.get_ref<const std::string&>());
    if (inbox) {
      field = *inbox;
      return {};
    }
  }
  return "a string, one of " + account_inbox_names_text();
}

std::string set_bool(bool& field, const nlohmann::json& value) {
  if (!value.is_boolean()) return "true or false";
  field = value.get<bool>();
  return {};
}

std::string set_integer(int64_t& field, const nlohmann::json& value, int64_t low, int64_t high) {
  const std::string expected =
      "an integer from " + std::to_string(low) + " to " + std::to_string(high);
  if (!value.is_number_integer()) return expected;
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(high)) {
    return expected;
  }
  const auto number = value.get<int64_t>();
  if (number < low || number > high) return expected;
  field = number;
  return {};
}

// Reads "A..B" (or a single N, meaning N..N) with 0 <= A <= B <= kWorkMsMax.
std::string set_work_ms(Config& config, const nlohmann::json& value) {
  const std::string expected =
      "a range \"A..B\" of milliseconds with 0 <= A <= B <= " + std::to_string(kWorkMsMax) +
      " (or one integer N, meaning N..N)";
  int64_t low = 0;
  int64_t high = 0;
  if (value.is_number_integer()) {
    if (!set_integer(low, value, 0, kWorkMsMax).empty()) return expected;
    high = low;
  } else if (value.is_string()) {
    const std::string_view text = value.get_ref<const std::string&>();
    const size_t dots = text.find("..");
    if (dots == std::string_view::npos) return expected;
    auto parse = [](std::string_view part, int64_t& number) {
      const char* end = part.data() + part.size();
      const auto [ptr, error] = std::from_chars(part.data(), end, number);
      return !part.empty() && error == std::errc() && ptr == end;
    };
    if (!parse(text.substr(0, dots), low) || !parse(text.substr(dots + 2), high)) return expected;
  } else {
    return expected;
  }
  if (low < 0 || low > high || high > kWorkMsMax) return expected;
  config.work_ms_min = low;
  config.work_ms_max = high;
  return {};
}

bool parse_ms(std::string_view part, int64_t& number) {
  const char* end = part.data() + part.size();
  const auto [ptr, error] = std::from_chars(part.data(), end, number);
  return !part.empty() && error == std::errc() && ptr == end && number >= 0 &&
         number <= kWindowMsMax;
}

// Reads "none", "immediate:N" (1 <= N <= kRetriesMax) or "intervals:A,B,..." (up to kRetriesMax
// waits in ms).
std::string set_retry(RetryPolicy& retry, const nlohmann::json& value) {
  const std::string expected = "\"none\", \"immediate:N\" (N from 1 to " +
                               std::to_string(kRetriesMax) + ") or \"intervals:A,B,...\" (up to " +
                               std::to_string(kRetriesMax) + " waits in ms)";
  if (!value.is_string()) return expected;
  const std::string_view text = value.get_ref<const std::string&>();
  RetryPolicy parsed;
  if (text == "none") {
    retry = parsed;
    return {};
  }
  int64_t number = 0;
  if (text.starts_with("immediate:")) {
    if (!parse_ms(text.substr(10), number) || number < 1 ||
        number > static_cast<int64_t>(kRetriesMax)) {
      return expected;
    }
    parsed.kind = RetryPolicy::Kind::immediate;
    parsed.intervals_ms.assign(static_cast<size_t>(number), 0);
    retry = parsed;
    return {};
  }
  if (!text.starts_with("intervals:")) return expected;
  parsed.kind = RetryPolicy::Kind::intervals;
  for (const std::string_view part : split_commas(text.substr(10))) {
    if (!parse_ms(part, number)) return expected;
    parsed.intervals_ms.push_back(number);
    if (parsed.intervals_ms.size() > kRetriesMax) return expected;
  }
  retry = parsed;
  return {};
}

}  // namespace

std::string retry_text(const RetryPolicy& retry) {
  switch (retry.kind) {
    case RetryPolicy::Kind::none: return "none";
    case RetryPolicy::Kind::immediate:
      return "immediate:" + std::to_string(retry.intervals_ms.size());
    case RetryPolicy::Kind::intervals: {
      std::string text = "intervals:";
      for (size_t i = 0; i < retry.intervals_ms.size(); ++i) {
        text += (i > 0 ? "," : "") + std::to_string(retry.intervals_ms[i]);
      }
      return text;
    }
  }
  INBOXSIM_ASSERT(false);
}

std::string work_ms_text(const Config& config) {
  return std::to_string(config.work_ms_min) + ".." + std::to_string(config.work_ms_max);
}

const std::vector<std::string>& config_keys() {
  static const std::vector<std::string> keys = {"account.inbox",
                                                "account.ledger_unique",
                                                "account.inbox_window_ms",
                                                "transfer.dedupe",
                                                "transfer.processed_unique",
                                                "transfer.dedupe_key",
                                                "transfer.processed_ttl_ms",
                                                "transfer.state_machine",
                                                "transfer.notifications",
                                                "relay.stable_message_id",
                                                "broker.prefetch",
                                                "broker.delivery_limit",
                                                "account.instances",
                                                "transfer.instances",
                                                "consumer.work_ms",
                                                "broker.heartbeat_ms",
                                                "account.inbox_unique",
                                                "account.retry",
                                                "broker.queue_type",
                                                "account.remember_rejections",
                                                "account.ledger_conflict",
                                                "broker.dead_letter",
                                                "broker.consumer_timeout_ms",
                                                "account.masstransit",
                                                "account.database",
                                                "account.isolation",
                                                "account.keep_after_handling_ms",
                                                "account.marten_append",
                                                "transfer.email",
                                                "account.durability_poll_ms"};
  return keys;
}

std::string config_set(Config& config, std::string_view key, const nlohmann::json& value) {
  if (key == "account.inbox") return set_account_inbox(config.account_inbox, value);
  if (key == "account.ledger_unique") return set_bool(config.account_ledger_unique, value);
  if (key == "account.inbox_window_ms") {
    return set_integer(config.account_inbox_window_ms, value, 0, kWindowMsMax);
  }
  if (key == "transfer.dedupe") {
    return set_choice(config.transfer_dedupe, kTransferDedupeNames, value);
  }
  if (key == "transfer.processed_unique") return set_bool(config.transfer_processed_unique, value);
  if (key == "transfer.dedupe_key") {
    return set_choice(config.transfer_dedupe_key, kDedupeKeyNames, value);
  }
  if (key == "transfer.processed_ttl_ms") {
    return set_integer(config.transfer_processed_ttl_ms, value, 0, kWindowMsMax);
  }
  if (key == "transfer.state_machine") return set_bool(config.transfer_state_machine, value);
  if (key == "transfer.notifications") return set_bool(config.transfer_notifications, value);
  if (key == "relay.stable_message_id") return set_bool(config.relay_stable_message_id, value);
  if (key == "broker.prefetch") return set_integer(config.broker_prefetch, value, 1, kPrefetchMax);
  if (key == "broker.delivery_limit") {
    return set_integer(config.broker_delivery_limit, value, 1, kDeliveryLimitMax);
  }
  if (key == "account.instances") {
    return set_integer(config.account_instances, value, 1, kInstancesMax);
  }
  if (key == "transfer.instances") {
    return set_integer(config.transfer_instances, value, 1, kInstancesMax);
  }
  if (key == "consumer.work_ms") return set_work_ms(config, value);
  if (key == "broker.heartbeat_ms") {
    return set_integer(config.broker_heartbeat_ms, value, 0, kWindowMsMax);
  }
  if (key == "account.inbox_unique") return set_bool(config.account_inbox_unique, value);
  if (key == "account.retry") return set_retry(config.account_retry, value);
  if (key == "broker.queue_type") {
    return set_choice(config.broker_queue_type, kQueueTypeNames, value);
  }
  if (key == "account.remember_rejections") {
    return set_bool(config.account_remember_rejections, value);
  }
  if (key == "account.ledger_conflict") {
    return set_choice(config.account_ledger_conflict, kLedgerConflictNames, value);
  }
  if (key == "broker.dead_letter") {
    return set_choice(config.broker_dead_letter, kDeadLetterNames, value);
  }
  if (key == "broker.consumer_timeout_ms") {
    return set_integer(config.broker_consumer_timeout_ms, value, 0, kWindowMsMax);
  }
  if (key == "account.masstransit") {
    return set_choice(config.account_masstransit, kMassTransitVersionNames, value);
  }
  if (key == "account.database") {
    return set_choice(config.account_database, kAccountDatabaseNames, value);
  }
  if (key == "account.isolation") {
    return set_choice(config.account_isolation, kIsolationNames, value);
  }
  if (key == "account.keep_after_handling_ms") {
    return set_integer(config.account_keep_after_handling_ms, value, 0, kWindowMsMax);
  }
  if (key == "account.marten_append") {
    return set_choice(config.account_marten_append, kMartenAppendNames, value);
  }
  if (key == "transfer.email") return set_choice(config.transfer_email, kEmailSendNames, value);
  if (key == "account.durability_poll_ms") {
    return set_integer(config.account_durability_poll_ms, value, 0, kWindowMsMax);
  }
  std::string expected = "a known config key: ";
  bool first = true;
  for (const auto& name : config_keys()) {
    if (!first) expected += ", ";
    expected += name;
    first = false;
  }
  return expected;
}

std::string config_set_text(Config& config, std::string_view key, std::string_view text) {
  // Interpret the text as the JSON type the key wants: bools and integers by their spelling,
  // everything else as a string, so config_set gives the same messages for both sources.
  nlohmann::json value;
  int64_t number = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (text == "true" || text == "false") {
    value = (text == "true");
  } else if (!text.empty() && error == std::errc() && end == text.data() + text.size()) {
    value = number;
  } else {
    value = std::string(text);
  }
  return config_set(config, key, value);
}

std::string_view account_inbox_name(AccountInbox inbox) {
  return account_inbox_kind(inbox).name;
}

std::string_view transfer_dedupe_name(TransferDedupe dedupe) {
  return kTransferDedupeNames[static_cast<size_t>(dedupe)];
}

std::string_view ledger_conflict_name(LedgerConflict conflict) {
  return kLedgerConflictNames[static_cast<size_t>(conflict)];
}

std::string_view dead_letter_name(DeadLetter dead_letter) {
  return kDeadLetterNames[static_cast<size_t>(dead_letter)];
}

std::string_view masstransit_version_name(MassTransitVersion version) {
  return kMassTransitVersionNames[static_cast<size_t>(version)];
}

std::string_view marten_append_name(MartenAppend append) {
  return kMartenAppendNames[static_cast<size_t>(append)];
}

std::string_view email_send_name(EmailSend email) {
  return kEmailSendNames[static_cast<size_t>(email)];
}

nlohmann::ordered_json config_to_json(const Config& config) {
  nlohmann::ordered_json out;
  out["account.inbox"] = account_inbox_name(config.account_inbox);
  out["account.ledger_unique"] = config.account_ledger_unique;
  out["account.inbox_window_ms"] = config.account_inbox_window_ms;
  out["transfer.dedupe"] = transfer_dedupe_name(config.transfer_dedupe);
  out["transfer.processed_unique"] = config.transfer_processed_unique;
  out["transfer.dedupe_key"] = kDedupeKeyNames[static_cast<size_t>(config.transfer_dedupe_key)];
  out["transfer.processed_ttl_ms"] = config.transfer_processed_ttl_ms;
  out["transfer.state_machine"] = config.transfer_state_machine;
  out["transfer.notifications"] = config.transfer_notifications;
  out["relay.stable_message_id"] = config.relay_stable_message_id;
  out["broker.prefetch"] = config.broker_prefetch;
  out["broker.delivery_limit"] = config.broker_delivery_limit;
  out["account.instances"] = config.account_instances;
  out["transfer.instances"] = config.transfer_instances;
  out["consumer.work_ms"] = work_ms_text(config);
  out["broker.heartbeat_ms"] = config.broker_heartbeat_ms;
  out["account.inbox_unique"] = config.account_inbox_unique;
  out["account.retry"] = retry_text(config.account_retry);
  out["broker.queue_type"] = kQueueTypeNames[static_cast<size_t>(config.broker_queue_type)];
  out["account.remember_rejections"] = config.account_remember_rejections;
  out["account.ledger_conflict"] = ledger_conflict_name(config.account_ledger_conflict);
  out["broker.dead_letter"] = dead_letter_name(config.broker_dead_letter);
  out["broker.consumer_timeout_ms"] = config.broker_consumer_timeout_ms;
  out["account.masstransit"] = masstransit_version_name(config.account_masstransit);
  out["account.database"] = kAccountDatabaseNames[static_cast<size_t>(config.account_database)];
  out["account.isolation"] = kIsolationNames[static_cast<size_t>(config.account_isolation)];
  out["account.keep_after_handling_ms"] = config.account_keep_after_handling_ms;
  out["account.marten_append"] = marten_append_name(config.account_marten_append);
  out["transfer.email"] = email_send_name(config.transfer_email);
  out["account.durability_poll_ms"] = config.account_durability_poll_ms;
  return out;
}

nlohmann::ordered_json config_diff_json(const Config& config) {
  const auto current = config_to_json(config);
  const auto defaults = config_to_json(Config{});
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [key, value] : current.items()) {
    if (value != defaults[key]) out[key] = value;
  }
  return out;
}

}  // namespace inboxsim
