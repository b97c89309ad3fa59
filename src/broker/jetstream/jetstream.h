// A model of NATS JetStream (nats-server 2.9, Debian 12's 2.9.10): streams that store what is
// published on their subjects, durable pull consumers that deliver it, and redelivery by timer.
// docs/model.md ("JetStream") cites the server's source for every rule below, and the
// conformance scripts in tests/conformance/jetstream/ hold the model to a real nats-server.
//
// What it models, in the server's words:
// - A stream stores every message published on one of its subjects, numbered from 1 (the
//   stream sequence); no two streams may share a subject. A publish with a `Nats-Msg-Id` seen
//   by the stream within its `Duplicates` window is not stored: the publish ack says
//   `duplicate` and carries the sequence of the first. The window counts from that first
//   publication; a duplicate does not restart it.
// - A durable consumer delivers a stream's messages to whoever pulls (fetch), each delivery
//   with its metadata: the stream sequence, the consumer sequence (one per delivery, a
//   redelivery included) and the delivery count. A delivery not acked within `AckWait` is
//   delivered again, to the next fetch of any client, while the first may still be handling it;
//   redeliveries come before new messages. An ack names the message by its stream sequence, so
//   a late ack from the first holder settles the message for both.
// - `MaxDeliver`: a message due for one more delivery than that is no longer delivered; the
//   server publishes a max-deliveries advisory once and keeps the message in the stream (there
//   is no dead-letter queue). `nak` redelivers at once, or after its delay; `term` settles the
//   message without redelivery (and an advisory); `in_progress` restarts the AckWait clock.
// - `MaxAckPending` caps the unacked deliveries of the consumer, all its clients together: a
//   fetch gets no new message while the consumer is at it (redeliveries still come).
//
// Time is the simulator's: every call takes `now_ms`, which never goes back, and the model
// reads no clock. What the server does on its own timers (the AckWait check, the dedupe purge)
// happens here at the exact instant it is due, before whatever the call does at `now_ms`.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "domain/message.h"
#include "kernel/fingerprint.h"

namespace inboxsim {

// nats-server 2.9.10's defaults and limits (server/consumer.go, server/stream.go).
inline constexpr int64_t kJetStreamAckWaitDefaultMs = 30'000;      // JsAckWaitDefault
inline constexpr int64_t kJetStreamDuplicatesDefaultMs = 120'000;  // StreamDefaultDuplicatesWindow
inline constexpr int64_t kJetStreamDuplicatesMinMs = 100;          // "needs to be >= 100ms"
inline constexpr int64_t kJetStreamMaxAckPendingDefault = 1'000;   // JsDefaultMaxAckPending
inline constexpr int64_t kJetStreamMaxDeliverUnlimited = -1;
// Bounds of the model itself: a fetch's batch, and messages kept per stream.
inline constexpr int64_t kJetStreamBatchMax = 10'000;
inline constexpr size_t kJetStreamStoredMax = 1'000'000;

// A subject's tokens, split on '.' ("transfers.transfer.requested": three).
std::vector<std::string_view> nats_subject_tokens(std::string_view subject);
// True when a NATS subject matches a subject pattern: tokens split on '.', '*' matches one
// token, '>' (last) one or more.
bool nats_subject_matches(std::string_view pattern, std::string_view subject);
// True when some subject could match both patterns (nats-server refuses such streams).
bool nats_subjects_overlap(std::string_view left, std::string_view right);

struct JetStreamStreamConfig {
  std::string name;
  std::vector<std::string> subjects;
  int64_t duplicates_ms = kJetStreamDuplicatesDefaultMs;
};

struct JetStreamConsumerConfig {
  std::string durable;
  std::string filter_subject;  // empty: every subject of the stream
  int64_t ack_wait_ms = kJetStreamAckWaitDefaultMs;
  int64_t max_deliver = kJetStreamMaxDeliverUnlimited;  // -1: unlimited
  int64_t max_ack_pending = kJetStreamMaxAckPendingDefault;
};

// The publish ack (PubAck). `duplicate`: the stream had seen the Nats-Msg-Id within its window
// and stored nothing; `sequence` is then the first message's.
struct JetStreamPubAck {
  size_t stream = 0;
  uint64_t sequence = 0;
  bool duplicate = false;
};

// One delivery, with the metadata its ack subject carries ($JS.ACK.<stream>.<consumer>.
// <delivered>.<stream seq>.<consumer seq>.<timestamp>.<pending>, natsMsg_GetMetaData).
struct JetStreamDelivery {
  MessagePtr message;
  size_t consumer = 0;
  uint64_t stream_sequence = 0;
  uint64_t consumer_sequence = 0;
  int64_t delivery_count = 0;  // NumDelivered: 1 on the first delivery
  uint64_t pending = 0;        // NumPending: messages the consumer has not delivered yet
};

enum class JetStreamAdvisoryKind : uint8_t { max_deliveries, nak, terminated };
std::string_view name_of(JetStreamAdvisoryKind kind);

// An advisory the server publishes on $JS.EVENT.ADVISORY.CONSUMER.<kind>.<stream>.<consumer>.
struct JetStreamAdvisory {
  JetStreamAdvisoryKind kind = JetStreamAdvisoryKind::max_deliveries;
  size_t consumer = 0;
  uint64_t stream_sequence = 0;
  int64_t deliveries = 0;
  int64_t at_ms = 0;
};

// What js_GetConsumerInfo reports of a consumer.
struct JetStreamConsumerInfo {
  uint64_t num_pending = 0;     // stored messages not delivered yet
  int64_t num_ack_pending = 0;  // delivered, not acked (nor dropped past MaxDeliver)
  uint64_t delivered_consumer_sequence = 0;
  uint64_t delivered_stream_sequence = 0;
};

class JetStream {
 public:
  // Adds a stream; returns its index, or nothing with `error` saying what nats-server would
  // refuse (no subjects, a subject another stream has, a window under 100 ms, a name twice).
  std::optional<size_t> add_stream(JetStreamStreamConfig config, std::string& error);
  // Adds a durable pull consumer on a stream, with explicit acks, delivering from the first
  // message; returns its index, or nothing with `error`.
  std::optional<size_t> add_consumer(size_t stream, JetStreamConsumerConfig config,
                                     std::string& error);

  std::optional<size_t> find_stream(std::string_view name) const;
  std::optional<size_t> find_consumer(size_t stream, std::string_view durable) const;
  const JetStreamStreamConfig& stream_config(size_t stream) const;
  const JetStreamConsumerConfig& consumer_config(size_t consumer) const;
  size_t consumer_stream(size_t consumer) const;
  size_t consumer_count() const { return consumers_.size(); }

  // Publishes on `subject` with a Nats-Msg-Id (empty: none, never a duplicate). Returns the
  // publish ack, or nothing when no stream has the subject (the client gets no responders).
  std::optional<JetStreamPubAck> publish(std::string_view subject, const MessagePtr& message,
                                         std::string_view msg_id, int64_t now_ms);

  // A pull request of `batch` messages, served at once: redeliveries due first (at most
  // MaxDeliver deliveries each), then new messages while the consumer is under MaxAckPending.
  // REQUIRES: 1 <= batch <= kJetStreamBatchMax.
  std::vector<JetStreamDelivery> fetch(size_t consumer, int64_t batch, int64_t now_ms);

  // The four replies a client sends to a delivery's ack subject. Each returns true when the
  // delivery's message was still pending on the consumer (the server acks the reply either
  // way, and a reply for a message no longer pending does nothing).
  bool ack(const JetStreamDelivery& delivery, int64_t now_ms);
  // `delay_ms` <= 0: redeliver at the next fetch; else not before `delay_ms` from now.
  bool nak(const JetStreamDelivery& delivery, int64_t delay_ms, int64_t now_ms);
  bool term(const JetStreamDelivery& delivery, int64_t now_ms);
  bool in_progress(const JetStreamDelivery& delivery, int64_t now_ms);

  // Runs the server's timers up to `now_ms`: AckWait expiries queue their messages for
  // redelivery, and Nats-Msg-Ids older than their window are forgotten.
  // REQUIRES: now_ms is not before the time of the previous call.
  void advance(int64_t now_ms);
  // When the next timer is due (an AckWait expiry or a Nats-Msg-Id leaving its window), if
  // any: the World's scheduler reads it (an explored run, with no clock, asks
  // ack_wait_may_expire instead).
  std::optional<int64_t> next_due_ms() const;

  JetStreamConsumerInfo info(size_t consumer) const;
  // What a view of the consumer shows (broker/jetstream/jetstream_broker.h): the stored message at
  // a stream sequence, the messages pending on the consumer (in stream order, with whether each is
  // queued for redelivery), and the stream sequences it has not delivered yet. REQUIRES
  // (message_at): 1 <= sequence <= the stream's last.
  const MessagePtr& message_at(size_t stream, uint64_t sequence) const;
  struct PendingEntry {
    uint64_t stream_sequence = 0;
    int64_t deliveries = 0;
    bool redelivery_due = false;
  };
  std::vector<PendingEntry> pending_entries(size_t consumer) const;
  std::vector<uint64_t> undelivered_sequences(size_t consumer) const;
  // When the next AckWait runs out, if a delivery is pending and not queued for redelivery yet
  // (the Nats-Msg-Ids' window, unlike next_due_ms, is left out: forgetting one changes nothing
  // until the next publish, which forgets it itself).
  std::optional<int64_t> next_ack_wait_expiry_ms() const { return next_expiry_ms(INT64_MAX); }
  // The advisories published since the last call, in order.
  std::vector<JetStreamAdvisory> take_advisories();

  // The explorer's ack wait choice (docs/model.md, "Exploration"): whether a delivery pending
  // on the consumer and not queued for redelivery has an AckWait that could run out, and that
  // AckWait running out now, for the oldest such delivery (its wait started first: earliest
  // timestamp, then earliest start). The delivery is queued for redelivery as checkPending
  // queues it. Returns its stream sequence.
  // REQUIRES (expire_oldest): ack_wait_may_expire(consumer).
  bool ack_wait_may_expire(size_t consumer) const;
  uint64_t expire_oldest(size_t consumer, int64_t now_ms);
  // Adds everything that decides what the model does next: each stream's stored messages and
  // the Nats-Msg-Ids its window remembers; each consumer's next message, its deliveries given
  // out, its pending messages (in the order their AckWaits would run out, with their delivery
  // counts) and its redelivery queue in order.
  void fingerprint(Hasher& hasher) const;

 private:
  struct Stored {
    uint64_t sequence = 0;
    std::string subject;
    MessagePtr message;
  };
  struct SeenId {
    std::string id;
    uint64_t sequence = 0;
    int64_t stored_ms = 0;
  };
  struct Stream {
    JetStreamStreamConfig config;
    std::vector<Stored> messages;       // by sequence (limits retention: nothing is removed)
    std::map<std::string, SeenId> ids;  // the dedupe window's Nats-Msg-Ids
    std::deque<SeenId> ids_in_order;    // the same, oldest first (for forgetting them)
  };
  struct Pending {
    uint64_t consumer_sequence = 0;  // of the first delivery (the server keeps it)
    int64_t timestamp_ms = 0;        // AckWait runs from here
    // Orders deliveries whose AckWait started at the same instant: the consumer's count of
    // AckWait starts (Consumer::wait_starts) when this one's last started.
    uint64_t wait_start = 0;
  };
  struct Consumer {
    JetStreamConsumerConfig config;
    size_t stream = 0;
    uint64_t next_stream_sequence = 1;             // the next new message to look at
    uint64_t delivered = 0;                        // the last consumer sequence given out
    std::map<uint64_t, Pending> pending;           // by stream sequence
    std::map<uint64_t, int64_t> redelivery_count;  // by stream sequence
    std::deque<uint64_t> redeliver;                // due for redelivery, in order
    uint64_t wait_starts = 0;  // AckWait clocks started: deliveries, redeliveries, in_progress
  };

  bool queued_for_redelivery(const Consumer& consumer, uint64_t sequence) const;
  void drop_from_redelivery(Consumer& consumer, uint64_t sequence);
  // The first expiry at or before `until_ms`, of any consumer, if any.
  std::optional<int64_t> next_expiry_ms(int64_t until_ms) const;
  void expire_at(int64_t at_ms);
  void forget_ids(int64_t now_ms);
  // Takes one due redelivery off the queue (past MaxDeliver: drops it, with the advisory, and
  // takes the next), or nothing.
  std::optional<JetStreamDelivery> next_redelivery(size_t consumer_index, int64_t now_ms);
  std::optional<JetStreamDelivery> next_new(size_t consumer_index, int64_t now_ms);
  uint64_t undelivered(const Consumer& consumer) const;
  // Settles a pending message (ack, term). Returns whether it was pending.
  bool settle(Consumer& consumer, uint64_t sequence);
  void advise(JetStreamAdvisoryKind kind, size_t consumer, uint64_t sequence, int64_t deliveries,
              int64_t now_ms);
  // The consumer's pending messages that are not queued for redelivery, oldest AckWait first.
  std::vector<uint64_t> expirable_in_order(const Consumer& consumer) const;

  std::vector<Stream> streams_;
  std::vector<Consumer> consumers_;
  std::vector<JetStreamAdvisory> advisories_;
  int64_t now_ms_ = 0;
};

}  // namespace inboxsim
