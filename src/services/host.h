// What a service instance needs from the world around it: the clock, message ids, the broker,
// crash points and step boundaries, row locks, the trace and the checker. It is the services'
// one seam to the outside (as LevelDB's Env is), which is what lets the World inject every fault
// and every interleaving deterministically. Each instance of a service has its own host, which
// knows the instance's names and process.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>

#include "domain/commit.h"
#include "domain/coverage.h"
#include "domain/crash.h"
#include "domain/message.h"
#include "kernel/task.h"
#include "kernel/trace.h"

namespace inboxsim {

// A "Redis SET of seen messageIds": it survives a service crash, but it is not in the
// service's database, so no transaction covers it. One store per service, shared by its
// instances, as one Redis would be. A call is atomic, as a Redis command is: contains() and
// mark() are two calls (check-then-add), add() is one.
class ExternalSeenStore {
 public:
  bool contains(const std::string& key) const {
    heard(key);
    return keys_.count(key) > 0;
  }
  void mark(const std::string& key) {
    heard(key);
    keys_.insert(key);
  }
  // Marks `key` and returns whether it was not marked before, in one call: Redis's
  // `SET key value NX` (OK or nil) or SADD's reply (1 or 0).
  bool add(const std::string& key) {
    heard(key);
    return keys_.insert(key).second;
  }
  const std::set<std::string>& keys() const { return keys_; }

  // Hears every key a call names (the explorer's footprint of the call); none by default.
  void listen(std::function<void(const std::string&)> listener) { listener_ = std::move(listener); }

 private:
  void heard(const std::string& key) const {
    if (listener_) listener_(key);
  }

  std::set<std::string> keys_;
  std::function<void(const std::string&)> listener_;
};

enum class Outcome : uint8_t { ack, nack };

// What became of a publish that waited for its publisher confirm (RabbitMQ's confirms.md).
enum class PublishResult : uint8_t {
  confirmed,  // the broker routed it and said so
  lost,       // the channel closed before the confirm arrived: the message did reach the broker
  nacked,     // the broker refused it (basic.nack): it was not routed
};

// What one retention cleanup deleted: dedupe records (inbox rows, inbox documents,
// processed_messages) and outbox rows that were sent long enough ago.
struct CleanupCounts {
  int64_t dedupe_rows = 0;
  int64_t outbox_rows = 0;
};

// The participant names one instance appears under in traces (docs/contract.md §8.1).
struct InstanceNames {
  std::string_view service;        // "account-service", or "account-service#2" with several
  std::string_view relay;          // transfer-service only
  std::string_view notifications;  // transfer-service only
};

class ServiceHost {
 public:
  virtual ~ServiceHost() = default;

  virtual int64_t now_ms() const = 0;
  virtual const InstanceNames& names() const = 0;

  // Returns a message id never handed out before in this run (a NewId / UUID stand-in), for a
  // message the handling of message `cause` sends ("" for a message the story itself starts).
  virtual std::string next_message_id(const std::string& cause) = 0;

  // A crash point inside a step (an open transaction, a publish): throws ServiceCrash when an
  // armed crash fault selects this point of this instance.
  virtual void crash_point(CrashPoint point, const Message* message) = 0;

  // The boundary between two steps of the running handler, known by the names in `points`
  // (none, or one or two names for one place): an armed crash at one of them throws
  // ServiceCrash; an armed pause stops the instance; with consumer.work_ms the next step starts
  // later. Returns whether the handler must suspend; the host then resumes it.
  //
  // `resume` names the handler's state while it waits: where in its code it will go on and a
  // digest of the locals it still needs (ServiceCore::step computes it). The explorer counts
  // two waiting handlers as one state only when their `resume` is equal, so it must cover
  // everything the rest of the handler reads from its own frame.
  //
  // `next` is what the handler does when it goes on, named as the real system names it
  // ("MassTransit pass 2: consume"): the playground's label for that event.
  virtual Suspend between_steps(CrashPointSet points, const Message& message, uint64_t resume,
                                std::string next) = 0;
  // Whether anything reads `resume` and `next` (the explorer and the playground do; a fuzz
  // seed or a plain run reads neither). When false a handler may pass 0 and an empty label
  // instead of building them.
  virtual bool names_steps() const { return true; }

  // Takes the row lock `key` of this service's database for the running handler (a SELECT ...
  // FOR UPDATE that found its row). Returns whether the handler must wait for it; the host
  // resumes it once the lock is its own. The host releases every lock a handler still holds
  // when the handler ends, as a rollback does.
  // `resume` and `next` as for between_steps.
  virtual Suspend lock_row(const std::string& key, uint64_t resume, std::string next) = 0;
  // Releases a row lock the running handler holds (its transaction committed).
  virtual void unlock_row(const std::string& key) = 0;
  // Suspends the running handler for `ms` virtual ms, holding what it holds (MassTransit's send
  // transport waiting before it publishes again). `resume` and `next` as for between_steps.
  virtual Suspend sleep(int64_t ms, uint64_t resume, std::string next) = 0;

  // Publishes and waits for the publisher confirm (account-service's inline outbox send).
  virtual PublishResult publish_and_confirm(const MessagePtr& message) = 0;

  // Publishes from the transfer-service relay; the confirm, a nack or the loss of the channel
  // reaches the relay later (relay_confirmed, relay_publish_nacked, relay_channel_closed).
  virtual void relay_publish(const MessagePtr& message, int64_t outbox_seq) = 0;

  virtual void record(TraceEvent event) = 0;

  // Counts a coverage probe (docs/contract.md §8.3) that no trace event names on its own: which
  // mechanism caught a duplicate, which unique index rejected a row. It changes nothing else.
  virtual void reached(Probe probe) = 0;

  // Reports a committed transaction.
  virtual void committed(const CommitRecord& record) = 0;

  virtual void schedule_relay_poll() = 0;
  virtual void schedule_account_outbox_sweep() = 0;

  virtual ExternalSeenStore& seen_store() = 0;

  // An effect outside every transaction (transfer.email): the mail API was called, as `event`
  // (about the message the handler handles) says. Nothing rolls it back and a crash does not
  // undo it; the host traces it and counts it for the checker at once.
  virtual void email_sent(TraceEvent event) = 0;

  // Wolverine's durable inbox (account.inbox = wolverine). The world's hosts have a broker and a
  // durability agent; a host without them (a unit test's) may keep these defaults.
  //
  // Acks the running handler's delivery now, before the handler ends (the durable receiver acks
  // the broker once the envelope is stored); the handler's end then acks nothing.
  virtual void ack_now() {}
  // An envelope was stored Incoming: the durability agents poll while the table holds one.
  virtual void schedule_durability_poll() {}
};

// Returns a trace event about a message, with its id, type and transfer filled in.
TraceEvent event_about(EventKind kind, int64_t time_ms, std::string_view service,
                       const Message& message);

// Builds a message with a fresh envelope.
MessagePtr make_message(std::string message_id, MessageType type, const std::string& transfer,
                        const std::string& from, const std::string& to, int64_t amount,
                        std::string reason, int64_t occurred_at_ms);

}  // namespace inboxsim
