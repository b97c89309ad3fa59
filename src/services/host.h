// What a service needs from the world around it: the clock, message ids, the broker, crash
// points, the trace and the checker. It is the services' one seam to the outside (as LevelDB's
// Env is), which is what lets the World inject every fault deterministically.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "domain/commit.h"
#include "domain/crash.h"
#include "domain/message.h"
#include "kernel/trace.h"

namespace inboxsim {

// The seed's "Redis SET of seen messageIds": it survives a service crash, but it is not in the
// service's database, so no transaction covers it.
class ExternalSeenStore {
 public:
  bool contains(const std::string& key) const { return keys_.count(key) > 0; }
  void mark(const std::string& key) { keys_.insert(key); }

 private:
  std::set<std::string> keys_;
};

enum class Outcome : uint8_t { ack, nack };

class ServiceHost {
 public:
  virtual ~ServiceHost() = default;

  virtual int64_t now_ms() const = 0;

  // Returns a message id never handed out before in this run (a NewId / UUID stand-in).
  virtual std::string next_message_id() = 0;

  // Throws ServiceCrash when an armed crash fault selects this point of this service.
  virtual void crash_point(ServiceId service, CrashPoint point, const Message* message) = 0;

  // Publishes and waits for the publisher confirm (account-service's inline outbox send).
  // Returns false when the confirm was lost: the message did reach the broker.
  virtual bool publish_and_confirm(std::string_view publisher, const MessagePtr& message) = 0;

  // Publishes from the transfer-service relay; the confirm (or its loss) arrives later.
  virtual void relay_publish(const MessagePtr& message, int64_t outbox_seq) = 0;

  virtual void record(TraceEvent event) = 0;

  // Reports a committed transaction.
  virtual void committed(const CommitRecord& record) = 0;

  virtual void schedule_relay_poll() = 0;
  virtual void schedule_account_outbox_sweep() = 0;

  virtual ExternalSeenStore& seen_store(ServiceId service) = 0;
};

// Returns a trace event about a message, with its id, type and transfer filled in.
TraceEvent event_about(EventKind kind, int64_t time_ms, std::string_view service,
                       const Message& message);

// Builds a message with a fresh envelope.
MessagePtr make_message(std::string message_id, MessageType type, const std::string& transfer,
                        const std::string& from, const std::string& to, int64_t amount,
                        std::string reason, int64_t occurred_at_ms);

}  // namespace inboxsim
