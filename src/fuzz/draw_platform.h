// What a swarm seed runs on: the broker (broker.kind, and JetStream's own keys when it is
// JetStream) and account-service's inbox (account.inbox), drawn from a generator of their own so
// that a seed drawing RabbitMQ and the default inbox tells the story it told before they were
// drawn.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "domain/config.h"

namespace inboxsim {

struct GeneratorOptions;

// Draws the platform of `seed` into `config` (with --swarm only), leaving alone every key in
// options.pinned_keys: broker.kind (JetStream for a third of the seeds; never when a
// RabbitMQ-only key is pinned), JetStream's ack wait, dedupe window, in-progress and nak delay
// on JetStream, and the inbox (half the seeds keep the configured one; the others take any
// registry row that is a defence and knows every inbox key the campaign pinned).
void draw_platform(uint64_t seed, const GeneratorOptions& options, Config& config);

// On JetStream RabbitMQ's keys have no meaning, and the parser refuses them set (scenario/
// refusal.cpp): a JetStream seed keeps their defaults, so that its counterexample replays.
void keep_rabbitmq_defaults(Config& config);

// Whether `key` acts only with some account inboxes (a registry row's `keys`).
bool is_inbox_key(const std::string& key);

}  // namespace inboxsim
