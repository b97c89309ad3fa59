// The crash model (docs/contract.md §2): named crash points inside every unit of work.
//
// A crash is a ServiceCrash thrown at the crash point. It unwinds the handler, so RAII rolls
// back the open SQLite transaction, exactly as a process death would; the World then closes the
// service's broker connection and restarts it later with only its committed data.
#pragma once

#include "kernel/trace.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace inboxsim {

enum class CrashPoint : uint8_t {
  before_tx,          // consumer: delivery received, nothing written
  after_precheck,     // consumer: a lookup before the write (Marten, seen-set, MassTransit pass 1)
  after_dedupe,       // consumer: the dedupe step ran (MassTransit: inbox row committed)
  after_effect,       // consumer: business change and outbox rows written, not committed
  after_commit,       // consumer: committed, not acked
  after_outbox_send,  // account-service: outbox rows sent, `delivered` not yet set
  after_publish,      // relay: published, not yet marked sent
  after_mark,         // external-* modes: the external seen-set was marked
  after_store,        // wolverine inbox: envelope stored (Incoming), the broker not yet acked
  after_ack,          // wolverine inbox: the broker acked, the envelope not yet handled
};

inline constexpr size_t kCrashPointCount = 10;

// A set of crash points: the names one step boundary is known by (in the external seen-set
// modes, the place after the lookup is both after_precheck and after_dedupe).
class CrashPointSet {
 public:
  constexpr CrashPointSet() = default;
  constexpr explicit CrashPointSet(CrashPoint point) : bits_(bit(point)) {}
  constexpr CrashPointSet(CrashPoint first, CrashPoint second) : bits_(bit(first) | bit(second)) {}

  constexpr bool contains(CrashPoint point) const { return (bits_ & bit(point)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }

 private:
  static constexpr uint16_t bit(CrashPoint point) {
    return static_cast<uint16_t>(1U << static_cast<unsigned>(point));
  }
  uint16_t bits_ = 0;
};

std::string_view crash_point_name(CrashPoint point);
// Returns where `point` is, in a student's words (the glossary prints one line per point).
std::string_view crash_point_meaning(CrashPoint point);
std::optional<CrashPoint> parse_crash_point(std::string_view name);

enum class ServiceId : uint8_t { account, transfer };

std::string_view service_name(ServiceId service);

// The crash points each service has (docs/contract.md §2, §8.1): transfer-service's relay publishes,
// account-service's consumer outbox sends. Both parser and fuzz generator read these lists.
std::span<const CrashPoint> crash_points_of(ServiceId service);

// The points between two steps where a `pause` can stop an instance of `service` (docs/contract.md §8.1).
std::span<const CrashPoint> pause_points_of(ServiceId service);
std::optional<ServiceId> parse_service(std::string_view name);

// Thrown at a crash point; carries nothing, because a dead process remembers nothing.
struct ServiceCrash {
  ServiceId service;
  CrashPoint point;
};

// Thrown by a consumer whose handler failed for a reason other than a crash (a unique index
// rejected a second ledger entry, a lost publisher confirm): the transaction rolls back and the
// delivery is nacked with requeue.
struct ConsumerFault {
  std::string_view reason;
  FaultCause cause = FaultCause::none;
  // An OperationCanceledException (MassTransit's MessageDeliveryTimeout ran out): the retry
  // filter retries it like any fault, but the rescue pipe ignores it, so once the retries are
  // spent the delivery is nacked with requeue instead of moved to the _error queue.
  bool cancelled = false;
};

}  // namespace inboxsim
