// A JetStream conformance script: client operations on streams and durable pull consumers and,
// after each, what nats-server was seen to do (docs/conformance.md, "JetStream"). Like the
// RabbitMQ scripts (script.h), one runs against the model (src/broker/jetstream/jetstream.h) and
// against a real nats-server, and the observations are compared. The file:
//
//   { "description": "...", "claims": ["docs/model.md, JetStream: ..."],
//     "jetstream": { "ack_wait_ms": 1000, "max_deliver": -1, "max_ack_pending": 100,
//                    "duplicates_ms": 2000 },
//     "steps": [ { "stream": "account-service", "subjects": ["transfers.>"] },
//                { "subscribe": "c1", "consumer": "account-service" },
//                { "publish": "m1", "subject": "transfers.transfer.requested",
//                  "then": ["publisher: m1 seq=1"] },
//                { "fetch": "c1", "batch": 1,
//                  "then": ["c1: m1 stream=1 consumer=1 delivered=1"] },
//                { "wait_ms": 1200 }, { "ack": "c1", "message": "m1" }, ... ] }
//
// `stream` adds a stream and its durable consumer (the same name), with the script's settings;
// `subscribe` opens a client (its own connection) bound to the durable `consumer`; `publish`
// publishes a message whose Nats-Msg-Id and payload are its name; `fetch` pulls up to `batch`
// messages (a no-wait pull request that expires after kFetchExpiresMs when it cannot be filled);
// `ack`, `nak` (optional `delay_ms`), `term` and `in_progress` answer the client's latest
// delivery of `message` (or the one with stream sequence `seq`) and wait for the server's
// reply; `wait_ms` lets time pass; `info` reads the consumer's info; `kill` closes a client's
// connection without a word, `reconnect` opens a new one bound to the same consumer.
//
// Observations, "<subject>: <what>":
//   "publisher: m1 seq=1"                      the publish ack ("... duplicate" when the
//                                              stream had seen the Nats-Msg-Id)
//   "c1: m1 stream=1 consumer=2 delivered=2"   a delivery's metadata (natsMsg_GetMetaData)
//   "c1: no messages"                          a fetch that got nothing
//   "account-service: ack_pending=1 pending=0" js_GetConsumerInfo
//   "advisory: max_deliveries m1 deliveries=2" an advisory (max_deliveries, nak, terminated)
// As in script.h, only the order within one subject is compared.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace inboxsim::conformance {

// A pull request that cannot be filled at once ends when it expires (the server keeps it that
// long when it delivered nothing, or when MaxAckPending stopped it); both brokers count it.
inline constexpr int64_t kFetchExpiresMs = 200;

enum class JsOp : uint8_t {
  stream,
  subscribe,
  publish,
  fetch,
  ack,
  nak,
  term,
  in_progress,
  wait,
  info,
  kill,
  reconnect,
};

struct JsSettings {
  int64_t ack_wait_ms = 1000;
  int64_t max_deliver = -1;
  int64_t max_ack_pending = 100;
  int64_t duplicates_ms = 2000;
};

struct JsStep {
  JsOp op = JsOp::stream;
  std::string pointer;  // "/steps/3"
  // The stream (stream, info), the client (subscribe, fetch, ... reconnect) or the message
  // (publish) the step is about; empty for wait.
  std::string subject;
  std::vector<std::string> subjects;  // stream
  std::string stream;                 // subscribe: its "consumer" (named as its stream)
  std::string nats_subject;           // publish
  std::string message;                // ack, nak, term, in_progress
  uint64_t sequence = 0;              // ... optional: which delivery (0: the latest)
  int64_t batch = 1;                  // fetch
  int64_t delay_ms = 0;               // nak
  int64_t wait_ms = 0;                // wait
  std::vector<std::string> then;
  std::optional<std::vector<std::string>> fake_then;
  std::string difference;

  const std::vector<std::string>& expected_of_fake() const { return fake_then ? *fake_then : then; }
};

struct JsScript {
  std::string path;
  std::string name;
  std::string description;
  std::vector<std::string> claims;
  JsSettings settings;
  std::vector<JsStep> steps;
};

// Reads and validates a script; on a problem returns nothing and sets `error` to one line naming
// the file, the JSON pointer and what was expected.
std::optional<JsScript> load_jetstream_script(const std::string& path, std::string& error);

const char* js_op_name(JsOp op);

// One broker a JetStream script runs against (the model, or nats-server through libnats).
class JsDriver {
 public:
  virtual ~JsDriver() = default;
  // Performs the step; returns what the clients observed. `expected` only tells a live broker
  // how long to wait for what comes asynchronously (advisories).
  virtual std::vector<std::string> run(const JsStep& step,
                                       const std::vector<std::string>* expected) = 0;
};

}  // namespace inboxsim::conformance
