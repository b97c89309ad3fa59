// A job: what the World has scheduled to happen at a moment of virtual time (kernel/scheduler.h
// orders them), one event of a run when its time comes. Every job has the fields that say whose
// it is; the rest is its payload, one small struct per kind, carrying only what that kind reads.
// World::dispatch (world/world.cpp) visits the payload, so that each kind's handler sees its own
// fields and no other kind's.
//
// A job's kind is the index of its payload in job::Payload. The number is part of the job's
// fingerprint (world_fingerprint.cpp), so the order of the alternatives, like that of JobKind,
// is fixed: changing it changes every explored state's fingerprint.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>
#include <variant>

namespace inboxsim {

// The kinds of job, in the order of job::Payload's alternatives.
enum class JobKind : uint8_t {
  deliver,            // a delivery reaches its consumer
  ack,                // an ack reaches the broker
  nack,               // a nack reaches the broker
  confirm,            // a publisher confirm reaches a relay
  publish_nack,       // the broker's nack of a publish reaches a relay
  relay_poll,         // a relay polls the outbox
  account_sweep,      // account-service's outbox delivery loop
  restart,            // a crashed instance comes back
  reconnect,          // an instance reopens a closed connection
  resume,             // a handler's next step begins
  heartbeat_timeout,  // the broker gives up on a silent connection
  pause_end,          // a paused instance goes on
  retry,              // a faulted handler's next attempt begins (account.retry)
  durability_poll,    // the wolverine inbox's durability agent polls the incoming table
  broker_timer,       // the broker's own timer comes due
};

namespace job {

// A delivery on the wire (Wire) reaches its consumer.
struct Deliver {
  size_t consumer = 0;      // the broker consumer
  int64_t delivery_id = 0;  // the delivery on the wire
};
// A consumer's ack of a delivery, on the channel it came on.
struct Ack {
  size_t consumer = 0;
  uint64_t channel = 0;
  int64_t delivery_tag = 0;
};
// A consumer's nack; `term`: JetStream's +TERM (consumer.term_after) instead of a nak.
struct Nack {
  size_t consumer = 0;
  uint64_t channel = 0;
  int64_t delivery_tag = 0;
  bool term = false;
};
// The broker's confirm of an outbox row's publish, on the relay's publishing channel then.
struct Confirm {
  uint64_t channel = 0;
  int64_t outbox_seq = 0;
};
// The broker's nack of an outbox row's publish.
struct PublishNack {
  uint64_t channel = 0;
  int64_t outbox_seq = 0;
};
struct RelayPoll {};
struct AccountSweep {};
struct Restart {};
// Reopens one broker consumer's connection, or (no consumer) every closed one of the instance:
// the client library recovering its connection after a pause.
struct Reconnect {
  std::optional<size_t> consumer;
};
// A handler's next step.
struct Resume {
  uint64_t handler = 0;
};
struct HeartbeatTimeout {};
struct PauseEnd {};
// A faulted handler's next attempt.
struct Retry {
  uint64_t handler = 0;
};
struct DurabilityPoll {};
// JetStream: an AckWait runs out. Without a clock, `consumer` is the work queue whose oldest
// lease runs out; with one, it is 0 and the broker finds what is due.
struct BrokerTimer {
  size_t consumer = 0;
};

using Payload =
    std::variant<Deliver, Ack, Nack, Confirm, PublishNack, RelayPoll, AccountSweep, Restart,
                 Reconnect, Resume, HeartbeatTimeout, PauseEnd, Retry, DurabilityPoll, BrokerTimer>;

// The payload of a kind: each kind's number names its own alternative.
template <JobKind kind>
using PayloadOf = std::variant_alternative_t<static_cast<size_t>(kind), Payload>;
static_assert(std::is_same_v<PayloadOf<JobKind::deliver>, Deliver>);
static_assert(std::is_same_v<PayloadOf<JobKind::ack>, Ack>);
static_assert(std::is_same_v<PayloadOf<JobKind::nack>, Nack>);
static_assert(std::is_same_v<PayloadOf<JobKind::confirm>, Confirm>);
static_assert(std::is_same_v<PayloadOf<JobKind::publish_nack>, PublishNack>);
static_assert(std::is_same_v<PayloadOf<JobKind::relay_poll>, RelayPoll>);
static_assert(std::is_same_v<PayloadOf<JobKind::account_sweep>, AccountSweep>);
static_assert(std::is_same_v<PayloadOf<JobKind::restart>, Restart>);
static_assert(std::is_same_v<PayloadOf<JobKind::reconnect>, Reconnect>);
static_assert(std::is_same_v<PayloadOf<JobKind::resume>, Resume>);
static_assert(std::is_same_v<PayloadOf<JobKind::heartbeat_timeout>, HeartbeatTimeout>);
static_assert(std::is_same_v<PayloadOf<JobKind::pause_end>, PauseEnd>);
static_assert(std::is_same_v<PayloadOf<JobKind::retry>, Retry>);
static_assert(std::is_same_v<PayloadOf<JobKind::durability_poll>, DurabilityPoll>);
static_assert(std::is_same_v<PayloadOf<JobKind::broker_timer>, BrokerTimer>);

// Visits a payload with one lambda per alternative (and, where a visitor wants one, a generic
// lambda for the rest): Overloaded{[](const Ack&) {...}, [](const auto&) {...}}.
template <typename... Fns>
struct Overloaded : Fns... {
  using Fns::operator()...;
};
template <typename... Fns>
Overloaded(Fns...) -> Overloaded<Fns...>;

}  // namespace job

// Each kind's word in the explorer's event log (LoggedEvent::kind), by JobKind.
inline constexpr std::array<std::string_view, 15> kJobKindWords = {
    "deliver",           "ack",           "nack",    "confirm",         "publish_nack",
    "relay_poll",        "account_sweep", "restart", "reconnect",       "resume",
    "heartbeat_timeout", "pause_end",     "retry",   "durability_poll", "broker_timer",
};
static_assert(kJobKindWords.size() == std::variant_size_v<job::Payload>);

inline std::string_view job_kind_word(JobKind kind) {
  return kJobKindWords[static_cast<size_t>(kind)];
}

struct Job {
  // The instance the job belongs to; 0 for a job on the wire or the broker's, which belongs to
  // none (the fingerprint hashes it all the same).
  size_t instance = 0;
  // Its instance's incarnation when scheduled, so that a crash voids it; 0: no crash does.
  uint64_t incarnation = 0;
  int64_t born = -1;  // the logged event that scheduled it (ExploreControl::log_events)
  job::Payload payload;

  // A job of `instance`, voided by a crash when `incarnation` is given.
  static Job of_instance(size_t instance, job::Payload payload, uint64_t incarnation = 0) {
    Job job;
    job.instance = instance;
    job.incarnation = incarnation;
    job.payload = payload;
    return job;
  }
  // A job of the wire or of the broker, which no instance owns.
  static Job unowned(job::Payload payload) {
    Job job;
    job.payload = payload;
    return job;
  }

  JobKind kind() const { return static_cast<JobKind>(payload.index()); }
  // The broker consumer at the far end of a delivery, an ack or a nack on the wire; none for
  // the other kinds, which act for their instance.
  std::optional<size_t> on_consumer() const {
    if (const auto* deliver = std::get_if<job::Deliver>(&payload)) return deliver->consumer;
    if (const auto* ack = std::get_if<job::Ack>(&payload)) return ack->consumer;
    if (const auto* nack = std::get_if<job::Nack>(&payload)) return nack->consumer;
    return std::nullopt;
  }
};

}  // namespace inboxsim
