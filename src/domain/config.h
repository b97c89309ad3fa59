// The defences and knobs of a run (docs/contract.md §3): which dedupe mechanism each service uses, which
// unique indexes exist, retention windows and broker limits.
//
// A Config is plain data. config_set() is the one place that turns a key and a value (from a
// scenario's "config" object or from --set KEY=VALUE) into a field, and says what was expected
// when it cannot.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "domain/account_inbox.h"

namespace inboxsim {

// processed_after: processed_messages in the same database, but inserted by a second
// transaction after the business commit: one store is not enough, one transaction is
// (scenario 45).
enum class TransferDedupe : uint8_t {
  processed_messages,
  none,
  external_before,
  external_after,
  processed_after
};
enum class DedupeKey : uint8_t { message_id, message_id_and_consumer };
// Whether transfer-service's relays claim the outbox rows they publish. none: a plain polling
// relay, which claims nothing, so two relays may both publish one row. skip_locked: a relay
// locks the rows it publishes and the others skip them (MassTransit's bus outbox delivery,
// SELECT ... FOR UPDATE SKIP LOCKED), until the row is marked sent or the relay's process dies
// (docs/model.md, "Relays").
enum class RelayClaim : uint8_t { none, skip_locked };
// RabbitMQ's queue types (docs/contract.md §8.2): a quorum queue counts deliveries (x-delivery-count) and
// dead-letters past the delivery limit; a classic queue does neither.
enum class QueueType : uint8_t { quorum, classic };
// What account-service's consumer does when the ledger's (transfer_id, type) key refuses a second
// entry: fault (the exception escapes; MassTransit retries and then moves the message to its
// _error queue) or ack (the consumer catches the key violation and treats the command as
// already done: no change, no reply, acked).
enum class LedgerConflict : uint8_t { fault, ack };
// What a quorum queue does with a message past its delivery limit (or rejected without
// requeue): none drops it (RabbitMQ 4.0 with no dead-letter exchange, which neither RabbitMQ nor
// MassTransit declares by default); dlx dead-letters it into `<queue>.dlq` (an operator declared
// a DLX, by policy or x-dead-letter-exchange).
enum class DeadLetter : uint8_t { none, dlx };
// The MassTransit release account-service runs (docs/contract.md §9.3, account.masstransit): 8.5 (8.5.3
// and later: the send transport retries a broker nack as it retries a closed channel), 8.3 and
// 8.2 (a nack faults the outbox pass at once).
enum class MassTransitVersion : uint8_t { v8_5, v8_3, v8_2 };
// account-service's database (account.database) and MassTransit's outbox IsolationLevel
// (account.isolation): what a waiter on the inbox row lock sees once the holder commits.
enum class AccountDatabase : uint8_t { postgres, sqlserver };
enum class Isolation : uint8_t { repeatable_read, read_committed };
// Marten's EventAppendMode for account-service's event stream (account.marten_append, with
// account.inbox = marten): quick (Marten 9's default, and ours) numbers the events inside the
// write transaction; rich (Marten 8's default) reads the stream's version before the write and
// writes with it, so a concurrent append to the same stream makes one fail
// (EventStreamUnexpectedMaxEventIdException).
enum class MartenAppend : uint8_t { rich, quick };
// An email the notifications consumer sends, outside every transaction (transfer.email):
// none (the default: no email), before_commit (the handler calls the mail API and then commits
// its notification row and processed_messages record), after_commit (it commits, then calls
// the mail API).
enum class EmailSend : uint8_t { none, before_commit, after_commit };
// Which broker the bank runs on (broker.kind): RabbitMQ (broker/rabbitmq/broker.h), or NATS
// JetStream (broker/jetstream/jetstream_broker.h), which redelivers by timer: a delivery not acked
// within the ack wait is delivered again, to any consumer (docs/model.md, "JetStream in the
// world").
enum class BrokerKind : uint8_t { rabbitmq, jetstream };

// MassTransit's UseMessageRetry on account-service's endpoint: the waits before each retry of a
// faulted delivery, in process (none, by default). Then the message goes to the _error queue.
struct RetryPolicy {
  enum class Kind : uint8_t { none, immediate, intervals };
  Kind kind = Kind::none;
  std::vector<int64_t> intervals_ms;  // one per retry (immediate: zeros)

  bool operator==(const RetryPolicy&) const = default;
};

struct Config {
  AccountInbox account_inbox = AccountInbox::masstransit;
  bool account_ledger_unique = true;
  int64_t account_inbox_window_ms = 1'800'000;
  TransferDedupe transfer_dedupe = TransferDedupe::processed_messages;
  bool transfer_processed_unique = true;
  DedupeKey transfer_dedupe_key = DedupeKey::message_id;
  int64_t transfer_processed_ttl_ms = 86'400'000;
  bool transfer_state_machine = true;
  bool transfer_notifications = false;
  bool relay_stable_message_id = true;
  RelayClaim relay_claim = RelayClaim::none;
  int64_t broker_prefetch = 16;
  int64_t broker_delivery_limit = 20;
  // Concurrency (docs/contract.md §8.1).
  int64_t account_instances = 1;  // processes of account-service competing on its queue
  int64_t transfer_instances = 1;
  int64_t work_ms_min = 0;  // consumer.work_ms "A..B": virtual ms each handler step takes
  int64_t work_ms_max = 0;
  int64_t broker_heartbeat_ms = 60'000;  // 0: off
  // Whether the inbox keys exist: inbox_state (message_id, consumer_id) and the Marten inbox
  // document's primary key. Dropping them mid-run is the drop_index step; this starts without.
  bool account_inbox_unique = true;
  // Fault paths (docs/contract.md §8.2).
  RetryPolicy account_retry;
  QueueType broker_queue_type = QueueType::quorum;
  // Whether account-service records a rejected debit under the transfer's
  // key (table rejected_debits) and rejects a later copy of it again, and whether a copy of a
  // debited transfer's request goes to the ledger key instead of being judged against the
  // balance (scenario 51). Our own addition to the bank: off by default, so that the default
  // bank keeps no record of its decisions (docs/model.md, "account-service").
  bool account_remember_rejections = false;
  LedgerConflict account_ledger_conflict = LedgerConflict::fault;
  // RabbitMQ's dead-lettering and consumer timeout (docs/contract.md §8.2).
  DeadLetter broker_dead_letter = DeadLetter::none;
  // A delivery unacked this long closes its channel (PRECONDITION_FAILED); 0: off.
  int64_t broker_consumer_timeout_ms = 1'800'000;
  // The MassTransit release modelled (docs/contract.md §9.3).
  MassTransitVersion account_masstransit = MassTransitVersion::v8_5;
  // How long the marten mode keeps a handled message's inbox document for
  // dedupe (Wolverine's DurabilitySettings.KeepAfterMessageHandling, 5 min).
  // account.inbox_window_ms stays MassTransit's DuplicateDetectionWindow (30 min).
  int64_t account_keep_after_handling_ms = 300'000;
  AccountDatabase account_database = AccountDatabase::postgres;
  Isolation account_isolation = Isolation::repeatable_read;
  MartenAppend account_marten_append = MartenAppend::quick;  // Marten 9, the latest release
  // How often the wolverine inbox's durability agent polls the incoming table for envelopes
  // whose owner node is gone (Wolverine's DurabilitySettings.ScheduledJobPollingTime, 5 s);
  // 0: no durability agent runs (DurabilityAgentEnabled = false).
  int64_t account_durability_poll_ms = 5'000;
  // An effect outside the transaction (needs transfer.notifications).
  EmailSend transfer_email = EmailSend::none;
  // The broker (docs/contract.md §9.4), and JetStream's own settings: AckWait, MaxDeliver (-1:
  // unlimited) and the streams' Duplicates window, nats-server 2.9's defaults.
  BrokerKind broker_kind = BrokerKind::rabbitmq;
  int64_t broker_ack_wait_ms = 30'000;
  int64_t broker_max_deliver = -1;
  int64_t broker_dedupe_window_ms = 120'000;
  // JetStream's client replies (nats.c's natsMsg_InProgress and natsMsg_NakWithDelay): whether
  // a handler tells the server before each step that it is still working, which restarts the
  // ack wait, and the delay a nak asks for (0: redelivered at the next pull).
  bool consumer_in_progress = false;
  int64_t consumer_nak_delay_ms = 0;
  // nats.c's natsMsg_Term: a handler that fails on a delivery the server has delivered this
  // many times gives it up (+TERM) instead of nakking it; 0: it always naks.
  int64_t consumer_term_after = 0;

  // Returns the instance count of `service`'s config key.
  int64_t instances(bool account) const { return account ? account_instances : transfer_instances; }
};

// The most virtual ms one handler step may take (consumer.work_ms).
inline constexpr int64_t kWorkMsMax = 600'000;

// Every config key, in the order docs/contract.md §3 lists them.
const std::vector<std::string>& config_keys();

// What a user is told of a key (`inboxsim config`, the bash completion): its meaning, its values
// in words, its default, and the fixed values it takes (empty for numbers and free text).
struct ConfigKeyInfo {
  std::string name;
  std::string summary;
  std::string values;
  nlohmann::ordered_json default_value;
  std::vector<std::string> choices;
};

// Every key's info, in config_keys() order. All of it comes from the one table in config.cpp
// that config_set and config_to_json read.
std::vector<ConfigKeyInfo> config_key_infos();

// Sets `key` from a JSON value of the right type (string for choices, bool, integer).
// Returns an empty string on success, else what was expected ("one of masstransit, marten, ...").
std::string config_set(Config& config, std::string_view key, const nlohmann::json& value);

// Sets `key` from text, as given by --set KEY=VALUE ("true", "1800000", "marten").
// Returns an empty string on success, else what was expected.
std::string config_set_text(Config& config, std::string_view key, std::string_view text);

// Returns the value of every key, as a JSON object with keys in config_keys() order.
nlohmann::ordered_json config_to_json(const Config& config);

// Returns only the keys whose value differs from the default, in config_keys() order.
nlohmann::ordered_json config_diff_json(const Config& config);

// A key that means nothing on the broker `config.broker_kind` names, set other than to its
// default (RabbitMQ's queue type, delivery limit, dead-lettering, consumer timeout and heartbeat
// on JetStream; JetStream's ack wait, MaxDeliver and dedupe window on RabbitMQ): the first such
// key, and what it must be instead and why.
struct KeyRefusal {
  std::string key;
  std::string expected;
};
std::optional<KeyRefusal> broker_key_refusal(const Config& config);

// Returns consumer.work_ms as written in config files: "A..B".
std::string work_ms_text(const Config& config);

// Returns account.retry as written in config files: "none", "immediate:3", "intervals:100,500".
std::string retry_text(const RetryPolicy& retry);

// The most retries account.retry may ask for.
inline constexpr size_t kRetriesMax = 20;

std::string_view account_inbox_name(AccountInbox inbox);
std::string_view transfer_dedupe_name(TransferDedupe dedupe);
std::string_view ledger_conflict_name(LedgerConflict conflict);
std::string_view dead_letter_name(DeadLetter dead_letter);
std::string_view masstransit_version_name(MassTransitVersion version);
std::string_view marten_append_name(MartenAppend append);
std::string_view email_send_name(EmailSend email);
std::string_view broker_kind_name(BrokerKind kind);

}  // namespace inboxsim
