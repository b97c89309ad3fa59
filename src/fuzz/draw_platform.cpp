#include "fuzz/draw_platform.h"

#include <algorithm>
#include <array>

#include "domain/account_inbox.h"
#include "domain/broker_keys.h"
#include "fuzz/generator.h"
#include "kernel/assert.h"
#include "kernel/rng.h"

namespace inboxsim {

namespace {

// JetStream's ack wait: nats-server's default, and waits that a drawn story's pauses, delays
// and work times outlast, so that a slow consumer is redelivered to with no fault at all.
constexpr std::array<int64_t, 4> kAckWaitMsChoices = {30'000, 5'000, 1'000, 200};
// The streams' Duplicates window: the default, and windows short enough that a drawn
// re-publication (a duplicate or a lost confirm) falls after them and reaches the inbox.
constexpr std::array<int64_t, 3> kDedupeWindowMsChoices = {120'000, 1'000, 100};
constexpr int64_t kNakDelayMsMax = 500;

bool pinned(const GeneratorOptions& options, std::string_view key) {
  return std::find(options.pinned_keys.begin(), options.pinned_keys.end(), key) !=
         options.pinned_keys.end();
}

bool any_pinned(const GeneratorOptions& options, std::span<const std::string_view> keys) {
  return std::any_of(keys.begin(), keys.end(),
                     [&](std::string_view key) { return pinned(options, key); });
}

// JetStream's own keys, unless pinned. MaxDeliver stays unlimited and term_after off: either
// one gives a message up with no dead-letter queue, and a transfer whose message is given up
// never settles: a termination failure of the configuration, not of the bank (docs/fuzzing.md).
void draw_jetstream_keys(Rng& rng, const GeneratorOptions& options, Config& config) {
  const int64_t ack_wait_ms = kAckWaitMsChoices[rng.below(kAckWaitMsChoices.size())];
  const int64_t window_ms = kDedupeWindowMsChoices[rng.below(kDedupeWindowMsChoices.size())];
  const bool in_progress = rng.chance(1, 2);
  const int64_t nak_delay_ms = rng.chance(1, 3) ? rng.between(1, kNakDelayMsMax) : 0;
  if (!pinned(options, "broker.ack_wait_ms")) config.broker_ack_wait_ms = ack_wait_ms;
  if (!pinned(options, "broker.dedupe_window_ms")) config.broker_dedupe_window_ms = window_ms;
  if (!pinned(options, "consumer.in_progress")) config.consumer_in_progress = in_progress;
  if (!pinned(options, "consumer.nak_delay_ms")) config.consumer_nak_delay_ms = nak_delay_ms;
}

// Whether `kind` is a correct bank's inbox that knows every inbox key the campaign pinned (a
// pinned account.masstransit means the campaign tests MassTransit's inbox).
bool inbox_fits(const AccountInboxKind& kind, const GeneratorOptions& options) {
  if (!kind.is_a_defence) return false;
  for (const std::string& key : options.pinned_keys) {
    if (!is_inbox_key(key)) continue;
    if (std::find(kind.keys.begin(), kind.keys.end(), key) == kind.keys.end()) return false;
  }
  return true;
}

// Half the seeds keep the configured inbox when it fits; the others, and every seed whose
// configured inbox does not fit, take one of the rows that fit.
void draw_inbox(Rng& rng, const GeneratorOptions& options, Config& config) {
  std::vector<AccountInbox> fits;
  for (const AccountInboxKind& kind : account_inbox_kinds()) {
    if (inbox_fits(kind, options)) fits.push_back(kind.inbox);
  }
  const bool keep = rng.chance(1, 2);
  const uint64_t pick = rng.below(std::max<size_t>(fits.size(), 1));
  if (pinned(options, "account.inbox") || fits.empty()) return;
  if (keep && inbox_fits(account_inbox_kind(config.account_inbox), options)) return;
  config.account_inbox = fits[pick];
}

}  // namespace

bool is_inbox_key(const std::string& key) {
  for (const AccountInboxKind& kind : account_inbox_kinds()) {
    if (std::find(kind.keys.begin(), kind.keys.end(), key) != kind.keys.end()) return true;
  }
  return false;
}

void draw_platform(uint64_t seed, const GeneratorOptions& options, Config& config) {
  if (!options.swarm) return;
  // A generator of its own: every other draw of a seed is what it was before these.
  Rng rng(seed ^ 0x706c'6174'666f'726dULL);
  const bool jetstream = rng.chance(1, 3);
  const bool broker_pinned =
      pinned(options, "broker.kind") || any_pinned(options, rabbitmq_only_keys());
  if (!broker_pinned && jetstream) config.broker_kind = BrokerKind::jetstream;
  if (config.broker_kind == BrokerKind::jetstream) draw_jetstream_keys(rng, options, config);
  draw_inbox(rng, options, config);
}

void keep_rabbitmq_defaults(Config& config) {
  const Config defaults;
  config.broker_queue_type = defaults.broker_queue_type;
  config.broker_delivery_limit = defaults.broker_delivery_limit;
  config.broker_dead_letter = defaults.broker_dead_letter;
  config.broker_consumer_timeout_ms = defaults.broker_consumer_timeout_ms;
  config.broker_heartbeat_ms = defaults.broker_heartbeat_ms;
}

}  // namespace inboxsim
