#include "domain/config.h"

#include <array>
#include <charconv>
#include <span>

#include "domain/broker_keys.h"
#include "domain/participants.h"
#include "kernel/assert.h"
#include "kernel/enum_names.h"
#include "kernel/text.h"

namespace inboxsim {

namespace {

constexpr std::array<std::string_view, 5> kTransferDedupeNames = {
    "processed_messages", "none", "external-before", "external-after", "processed-after"};
static_assert(names_every(kTransferDedupeNames, TransferDedupe::processed_after));
constexpr std::array<std::string_view, 2> kDedupeKeyNames = {"message_id", "message_id+consumer"};
static_assert(names_every(kDedupeKeyNames, DedupeKey::message_id_and_consumer));
constexpr std::array<std::string_view, 2> kRelayClaimNames = {"none", "skip_locked"};
static_assert(names_every(kRelayClaimNames, RelayClaim::skip_locked));
constexpr std::array<std::string_view, 2> kQueueTypeNames = {"quorum", "classic"};
static_assert(names_every(kQueueTypeNames, QueueType::classic));
constexpr std::array<std::string_view, 2> kLedgerConflictNames = {"fault", "ack"};
static_assert(names_every(kLedgerConflictNames, LedgerConflict::ack));
constexpr std::array<std::string_view, 2> kDeadLetterNames = {"none", "dlx"};
static_assert(names_every(kDeadLetterNames, DeadLetter::dlx));
constexpr std::array<std::string_view, 3> kMassTransitVersionNames = {"8.5", "8.3", "8.2"};
static_assert(names_every(kMassTransitVersionNames, MassTransitVersion::v8_2));
constexpr std::array<std::string_view, 2> kAccountDatabaseNames = {"postgres", "sqlserver"};
static_assert(names_every(kAccountDatabaseNames, AccountDatabase::sqlserver));
constexpr std::array<std::string_view, 2> kIsolationNames = {"repeatable_read", "read_committed"};
static_assert(names_every(kIsolationNames, Isolation::read_committed));
constexpr std::array<std::string_view, 2> kMartenAppendNames = {"rich", "quick"};
static_assert(names_every(kMartenAppendNames, MartenAppend::quick));
constexpr std::array<std::string_view, 3> kEmailSendNames = {"none", "before_commit",
                                                             "after_commit"};
static_assert(names_every(kEmailSendNames, EmailSend::after_commit));
constexpr std::array<std::string_view, 2> kBrokerKindNames = {"rabbitmq", "jetstream"};
static_assert(names_every(kBrokerKindNames, BrokerKind::jetstream));

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

namespace {

// A key's row: how a value is set and how it reads back, its values in words, and the fixed
// values a completion may offer (none for numbers and free text).
struct KeyRow {
  std::string_view name;
  std::string_view summary;
  std::string (*set)(Config&, const nlohmann::json&);
  nlohmann::ordered_json (*get)(const Config&);
  std::string (*values)();
  std::vector<std::string> (*choices)();
};

template <size_t N>
std::vector<std::string> names_of(const std::array<std::string_view, N>& names) {
  return {names.begin(), names.end()};
}

std::vector<std::string> no_choices() { return {}; }

template <bool Config::*Field>
KeyRow bool_key(std::string_view name, std::string_view summary) {
  return {name, summary,
          [](Config& config, const nlohmann::json& value) { return set_bool(config.*Field, value); },
          [](const Config& config) { return nlohmann::ordered_json(config.*Field); },
          [] { return std::string("true or false"); },
          [] { return std::vector<std::string>{"true", "false"}; }};
}

template <int64_t Config::*Field, int64_t Low, int64_t High>
KeyRow integer_key(std::string_view name, std::string_view summary) {
  return {name, summary,
          [](Config& config, const nlohmann::json& value) {
            return set_integer(config.*Field, value, Low, High);
          },
          [](const Config& config) { return nlohmann::ordered_json(config.*Field); },
          [] { return "an integer from " + std::to_string(Low) + " to " + std::to_string(High); },
          no_choices};
}

template <auto Field, const auto& Names>
KeyRow choice_key(std::string_view name, std::string_view summary) {
  return {name, summary,
          [](Config& config, const nlohmann::json& value) {
            return set_choice(config.*Field, Names, value);
          },
          [](const Config& config) {
            return nlohmann::ordered_json(Names[static_cast<size_t>(config.*Field)]);
          },
          [] { return one_of(Names).substr(7); },  // without "one of "
          [] { return names_of(Names); }};
}

// Every config key, in the order docs/contract.md §3 lists them and config_to_json writes them.
// config_keys, config_set, config_to_json, `inboxsim config` and the bash completion read it.
const std::vector<KeyRow>& key_rows() {
  static const std::vector<KeyRow> rows = {
      {"account.inbox", "account-service's dedupe mechanism (docs/model.md, the inbox seam)",
       [](Config& config, const nlohmann::json& value) {
         return set_account_inbox(config.account_inbox, value);
       },
       [](const Config& config) {
         return nlohmann::ordered_json(account_inbox_name(config.account_inbox));
       },
       [] { return account_inbox_names_text(); },
       [] {
         std::vector<std::string> names;
         for (const AccountInboxKind& kind : account_inbox_kinds()) names.emplace_back(kind.name);
         return names;
       }},
      bool_key<&Config::account_ledger_unique>(
          "account.ledger_unique", "the ledger's unique key (transfer_id, type), the backstop"),
      integer_key<&Config::account_inbox_window_ms, 0, kWindowMsMax>(
          "account.inbox_window_ms",
          "MassTransit's DuplicateDetectionWindow: delivered inbox rows older are cleaned up"),
      choice_key<&Config::transfer_dedupe, kTransferDedupeNames>(
          "transfer.dedupe", "transfer-service's dedupe mechanism"),
      bool_key<&Config::transfer_processed_unique>(
          "transfer.processed_unique", "the unique key of transfer-service's processed_messages"),
      choice_key<&Config::transfer_dedupe_key, kDedupeKeyNames>(
          "transfer.dedupe_key", "what processed_messages is keyed by"),
      integer_key<&Config::transfer_processed_ttl_ms, 0, kWindowMsMax>(
          "transfer.processed_ttl_ms", "how long processed_messages rows are kept"),
      bool_key<&Config::transfer_state_machine>(
          "transfer.state_machine", "whether the saga refuses an event its state does not expect"),
      bool_key<&Config::transfer_notifications>(
          "transfer.notifications", "a second consumer in transfer-service, on the bank's events"),
      bool_key<&Config::relay_stable_message_id>(
          "relay.stable_message_id", "whether the outbox relay republishes with the stored id"),
      choice_key<&Config::relay_claim, kRelayClaimNames>(
          "relay.claim", "whether a relay locks the outbox rows it publishes (skip_locked)"),
      integer_key<&Config::broker_prefetch, 1, kPrefetchMax>(
          "broker.prefetch", "unacked deliveries a consumer may hold (basic.qos)"),
      integer_key<&Config::broker_delivery_limit, 1, kDeliveryLimitMax>(
          "broker.delivery_limit", "a quorum queue's returns before it drops or dead-letters"),
      integer_key<&Config::account_instances, 1, kInstancesMax>(
          "account.instances", "processes of account-service competing on its queue"),
      integer_key<&Config::transfer_instances, 1, kInstancesMax>(
          "transfer.instances", "processes of transfer-service competing on its queues"),
      {"consumer.work_ms", "virtual ms each handler step takes, drawn from the run's PRNG",
       set_work_ms,
       [](const Config& config) { return nlohmann::ordered_json(work_ms_text(config)); },
       [] {
         return "a range \"A..B\" of milliseconds with 0 <= A <= B <= " +
                std::to_string(kWorkMsMax) + " (or one integer N, meaning N..N)";
       },
       no_choices},
      integer_key<&Config::broker_heartbeat_ms, 0, kWindowMsMax>(
          "broker.heartbeat_ms", "the heartbeat interval (0: off)"),
      bool_key<&Config::account_inbox_unique>(
          "account.inbox_unique", "whether the inbox keys exist from the start"),
      {"account.retry", "MassTransit's UseMessageRetry; after it, the _error queue",
       [](Config& config, const nlohmann::json& value) {
         return set_retry(config.account_retry, value);
       },
       [](const Config& config) { return nlohmann::ordered_json(retry_text(config.account_retry)); },
       [] {
         return "\"none\", \"immediate:N\" (N from 1 to " + std::to_string(kRetriesMax) +
                ") or \"intervals:A,B,...\" (up to " + std::to_string(kRetriesMax) +
                " waits in ms)";
       },
       no_choices},
      choice_key<&Config::broker_queue_type, kQueueTypeNames>(
          "broker.queue_type", "RabbitMQ's queue type: a quorum queue counts deliveries"),
      bool_key<&Config::account_remember_rejections>(
          "account.remember_rejections",
          "whether a rejected debit is recorded under the transfer's key"),
      choice_key<&Config::account_ledger_conflict, kLedgerConflictNames>(
          "account.ledger_conflict",
          "what the consumer does when the ledger key refuses a second entry"),
      choice_key<&Config::broker_dead_letter, kDeadLetterNames>(
          "broker.dead_letter", "past the delivery limit: dropped, or moved to <queue>.dlq"),
      integer_key<&Config::broker_consumer_timeout_ms, 0, kWindowMsMax>(
          "broker.consumer_timeout_ms",
          "a delivery unacked this long closes its channel (0: off)"),
      choice_key<&Config::account_masstransit, kMassTransitVersionNames>(
          "account.masstransit", "the MassTransit release account-service runs"),
      choice_key<&Config::account_database, kAccountDatabaseNames>(
          "account.database", "what a waiter on the inbox row lock sees once the holder commits"),
      choice_key<&Config::account_isolation, kIsolationNames>(
          "account.isolation", "MassTransit's outbox IsolationLevel"),
      integer_key<&Config::account_keep_after_handling_ms, 0, kWindowMsMax>(
          "account.keep_after_handling_ms",
          "Wolverine's KeepAfterMessageHandling: how long a handled message's record is kept"),
      choice_key<&Config::account_marten_append, kMartenAppendNames>(
          "account.marten_append", "Marten's EventAppendMode for account-service's stream"),
      choice_key<&Config::transfer_email, kEmailSendNames>(
          "transfer.email", "a mail API the notifications consumer calls, outside every transaction"),
      integer_key<&Config::account_durability_poll_ms, 0, kWindowMsMax>(
          "account.durability_poll_ms",
          "how often the wolverine inbox's durability agent recovers envelopes (0: no agent)"),
      choice_key<&Config::broker_kind, kBrokerKindNames>(
          "broker.kind", "the broker: RabbitMQ, or NATS JetStream (redelivery by ack wait)"),
      integer_key<&Config::broker_ack_wait_ms, 1, kWindowMsMax>(
          "broker.ack_wait_ms",
          "jetstream: AckWait, after which an unacked delivery goes to any consumer again"),
      integer_key<&Config::broker_max_deliver, -1, kDeliveryLimitMax>(
          "broker.max_deliver",
          "jetstream: MaxDeliver, deliveries before the consumer gives up (-1 or 0: unlimited)"),
      integer_key<&Config::broker_dedupe_window_ms, 100, kWindowMsMax>(
          "broker.dedupe_window_ms",
          "jetstream: the streams' Duplicates window for publishes with the same message id"),
      bool_key<&Config::consumer_in_progress>(
          "consumer.in_progress",
          "jetstream: before each step a handler says it is still working (+WPI), restarting "
          "the ack wait"),
      integer_key<&Config::consumer_nak_delay_ms, 0, kWindowMsMax>(
          "consumer.nak_delay_ms",
          "jetstream: the delay a nak asks for before the redelivery (0: at the next pull)"),
      integer_key<&Config::consumer_term_after, 0, kDeliveryLimitMax>(
          "consumer.term_after",
          "jetstream: a handler failing on a delivery made this many times terms it (+TERM) "
          "instead of nakking (0: never)"),
  };
  return rows;
}

const KeyRow* find_key(std::string_view key) {
  for (const KeyRow& row : key_rows()) {
    if (row.name == key) return &row;
  }
  return nullptr;
}

}  // namespace

const std::vector<std::string>& config_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> names;
    for (const KeyRow& row : key_rows()) names.emplace_back(row.name);
    return names;
  }();
  return keys;
}

std::vector<ConfigKeyInfo> config_key_infos() {
  std::vector<ConfigKeyInfo> infos;
  const Config defaults;
  for (const KeyRow& row : key_rows()) {
    infos.push_back({std::string(row.name), std::string(row.summary), row.values(),
                     row.get(defaults), row.choices()});
  }
  return infos;
}

std::string config_set(Config& config, std::string_view key, const nlohmann::json& value) {
  if (const KeyRow* row = find_key(key)) return row->set(config, value);
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

std::string_view broker_kind_name(BrokerKind kind) {
  return kBrokerKindNames[static_cast<size_t>(kind)];
}

nlohmann::ordered_json config_to_json(const Config& config) {
  nlohmann::ordered_json out;
  for (const KeyRow& row : key_rows()) out[std::string(row.name)] = row.get(config);
  return out;
}

namespace {

// A broker's key: the value a config has, and whether it is the default.
struct BrokerKey {
  std::string_view name;
  bool is_default;
  std::string_view why;
};

}  // namespace

namespace {

constexpr std::array<std::string_view, 5> kRabbitMqOnlyKeys = {
    "broker.queue_type", "broker.delivery_limit", "broker.dead_letter",
    "broker.consumer_timeout_ms", "broker.heartbeat_ms"};
constexpr std::array<std::string_view, 6> kJetStreamOnlyKeys = {
    "broker.ack_wait_ms",   "broker.max_deliver",    "broker.dedupe_window_ms",
    "consumer.in_progress", "consumer.nak_delay_ms", "consumer.term_after"};

}  // namespace

std::span<const std::string_view> rabbitmq_only_keys() { return kRabbitMqOnlyKeys; }
std::span<const std::string_view> jetstream_only_keys() { return kJetStreamOnlyKeys; }

std::optional<KeyRefusal> broker_key_refusal(const Config& config) {
  const Config defaults;
  const bool jetstream = config.broker_kind == BrokerKind::jetstream;
  const std::array<BrokerKey, 5> rabbitmq_keys = {{
      {"broker.queue_type", config.broker_queue_type == defaults.broker_queue_type,
       "a JetStream consumer counts deliveries itself, whatever the queue (set broker.max_deliver)"},
      {"broker.delivery_limit", config.broker_delivery_limit == defaults.broker_delivery_limit,
       "JetStream's limit is the consumer's MaxDeliver (set broker.max_deliver)"},
      {"broker.dead_letter", config.broker_dead_letter == defaults.broker_dead_letter,
       "JetStream has no dead-letter queue: past MaxDeliver a message stays in the stream, with "
       "an advisory"},
      {"broker.consumer_timeout_ms",
       config.broker_consumer_timeout_ms == defaults.broker_consumer_timeout_ms,
       "JetStream closes no connection over a slow delivery: its ack wait redelivers it "
       "(set broker.ack_wait_ms)"},
      {"broker.heartbeat_ms", config.broker_heartbeat_ms == defaults.broker_heartbeat_ms,
       "a pull consumer's deliveries do not hang on its client's connection: a silent client "
       "loses nothing until the ack wait runs out"},
  }};
  const std::array<BrokerKey, 6> jetstream_keys = {{
      {"broker.ack_wait_ms", config.broker_ack_wait_ms == defaults.broker_ack_wait_ms,
       "RabbitMQ redelivers nothing by timer (its consumer timeout closes the channel instead)"},
      {"broker.max_deliver", config.broker_max_deliver == defaults.broker_max_deliver,
       "RabbitMQ's limit is a quorum queue's broker.delivery_limit"},
      {"broker.dedupe_window_ms",
       config.broker_dedupe_window_ms == defaults.broker_dedupe_window_ms,
       "RabbitMQ does not deduplicate publishes"},
      {"consumer.in_progress", config.consumer_in_progress == defaults.consumer_in_progress,
       "AMQP has no reply that extends a delivery's time: RabbitMQ's consumer timeout counts "
       "from the delivery"},
      {"consumer.nak_delay_ms", config.consumer_nak_delay_ms == defaults.consumer_nak_delay_ms,
       "a basic.nack with requeue puts the message back at once (RabbitMQ has no nack delay)"},
      {"consumer.term_after", config.consumer_term_after == defaults.consumer_term_after,
       "the bank's RabbitMQ consumers give a message up through MassTransit's error queue or "
       "the quorum queue's broker.delivery_limit"},
  }};
  // The lists the fuzzer reads name the same keys, in the same order.
  for (size_t i = 0; i < rabbitmq_keys.size(); ++i) {
    INBOXSIM_ASSERT(rabbitmq_keys[i].name == kRabbitMqOnlyKeys[i]);
  }
  for (size_t i = 0; i < jetstream_keys.size(); ++i) {
    INBOXSIM_ASSERT(jetstream_keys[i].name == kJetStreamOnlyKeys[i]);
  }
  for (const BrokerKey& key : jetstream ? std::span<const BrokerKey>(rabbitmq_keys)
                                        : std::span<const BrokerKey>(jetstream_keys)) {
    if (key.is_default) continue;
    const std::string_view broker = jetstream ? "jetstream" : "rabbitmq";
    const std::string value = config_to_json(config)[std::string(key.name)].dump();
    return KeyRefusal{std::string(key.name),
                      "its default on broker.kind = " + std::string(broker) + ", not " + value +
                          ": " + std::string(key.why)};
  }
  return std::nullopt;
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
