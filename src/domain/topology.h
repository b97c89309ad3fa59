// The broker topology the bank declares (docs/contract.md §8.2): each work queue, the routing
// keys bound to it, the consumer that reads it, and the names of its error and dead-letter
// queues. The world declares it from here, the broker names a queue's dead-letter and error
// queues with the functions below, and the parser takes the queues a redrive may name from it.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace inboxsim {

struct Config;

// Who consumes a work queue.
enum class QueueConsumer : uint8_t { account, saga, notifications };

struct QueueSpec {
  std::string_view name;
  std::array<std::string_view, 2> bindings;  // routing-key patterns; an empty one is unused
  QueueConsumer consumer;
  // MassTransit's receive endpoint moves a message whose retries are spent to `<name>_error`;
  // transfer-service's consumers nack instead, so their queues have none.
  bool error_queue;
  bool needs_notifications;  // declared only with transfer.notifications
};

// In declaration order: the broker numbers the queues in this order, and a queue's dead-letter
// queue, then its error queue, right after it.
inline constexpr std::array<QueueSpec, 3> kQueues = {{
    {"account-service", {"transfers.#", ""}, QueueConsumer::account, true, false},
    {"transfer-service", {"accounts.#", ""}, QueueConsumer::saga, false, false},
    {"transfer-service.notifications",
     {"accounts.account.credited", "accounts.account.refunded"},
     QueueConsumer::notifications,
     false,
     true},
}};

// broker.kind = jetstream: a stream per publishing service, holding every subject it publishes
// on. Two streams may not share a subject (nats-server refuses it), so a work queue becomes a
// durable consumer on the stream its bindings fall in, the notifications queue a second,
// filtered, consumer on account-service's events (docs/model.md, "JetStream in the world").
struct StreamSpec {
  std::string_view name;
  std::string_view publisher;
  std::string_view subject;  // NATS: '>' is one or more tokens
};
inline constexpr std::array<StreamSpec, 2> kStreams = {{
    {"TRANSFERS", "transfer-service", "transfers.>"},
    {"ACCOUNTS", "account-service", "accounts.>"},
}};

// The work queues `config` declares, in declaration order.
std::vector<const QueueSpec*> declared_queues(const Config& config);

// "<queue>.dlq": where a quorum queue dead-letters with broker.dead_letter = dlx.
std::string dead_letter_queue_name(std::string_view queue);

// "<queue>_error": MassTransit's error queue for the endpoint.
std::string error_queue_name(std::string_view queue);

// The queues an operator can redrive under `config`: every error queue, then every work queue's
// dead-letter queue, in declaration order.
std::vector<std::string> redrivable_queues(const Config& config);

}  // namespace inboxsim
