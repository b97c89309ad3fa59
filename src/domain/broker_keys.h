// The config keys that mean something on one broker only (docs/contract.md §9.4): those that
// broker_key_refusal() (domain/config.h) refuses set on the other broker, by name, for the
// fuzzer, which must not draw a broker that a pinned key has no meaning on.
#pragma once

#include <span>
#include <string_view>

namespace inboxsim {

// RabbitMQ's queue type, delivery limit, dead-lettering, consumer timeout and heartbeat.
std::span<const std::string_view> rabbitmq_only_keys();
// JetStream's ack wait, MaxDeliver and dedupe window, and its client's in-progress, nak delay
// and term.
std::span<const std::string_view> jetstream_only_keys();

}  // namespace inboxsim
