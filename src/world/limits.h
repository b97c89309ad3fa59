// The limits and timings of one simulated world, in one place (TigerBeetle style: a bound on
// everything, each named with its unit).
#pragma once

#include <cstdint>

namespace inboxsim {

// Limits of one run (TigerBeetle style: a bound on everything).
inline constexpr int64_t kEventsPerRunMax = 2'000'000;  // per run-until-quiescent
inline constexpr int64_t kLatencyMsMin = 1;
inline constexpr int64_t kLatencyMsMax = 4;
inline constexpr int64_t kRelayPollMsMin = 5;
inline constexpr int64_t kRelayPollMsMax = 20;
// A message delivered this many times from a classic queue stops the run: a classic queue has no
// delivery limit, so a poison message would loop for ever (the run says so, as a termination
// violation). On a quorum queue the delivery limit (at most 1000) ends the loop first.
inline constexpr int64_t kDeliveriesPerMessageMax = 1'000;
inline constexpr int64_t kReconnectMs = 500;
// RabbitMQ's channel_tick_interval (deps/rabbit/Makefile, v4.0.9): how often a channel checks
// its oldest unacked delivery against the consumer timeout.
inline constexpr int64_t kChannelTickMs = 60'000;
// The cleanup tick: MassTransit's InboxCleanupService waits QueryDelay (10 s) between sweeps
// (InboxCleanupServiceOptions.cs, v8.0.4 to v8.5.3). Cleanup runs lazily: the first time the
// clock reaches or passes a tick, once, as of the last tick passed (deleting by a cutoff is
// monotone, so one late run deletes what every missed tick would have).
inline constexpr int64_t kCleanupIntervalMs = 10'000;
// Wolverine's DurabilitySettings.StaleNodeTimeout (1 min): a node whose health check is older is
// dormant, and the durability agents recover its envelopes (world_durability.cpp).
inline constexpr int64_t kStaleNodeTimeoutMs = 60'000;
// The Mongo TTL monitor's period (mongod's ttlMonitorSleepSecs, 60 s): transfer-service's
// processed_messages and outbox TTL run as of the last whole minute a cleanup tick passed.
inline constexpr int64_t kTtlMonitorIntervalMs = 60'000;

}  // namespace inboxsim
