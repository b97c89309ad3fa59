// A conformance script: broker operations and, after each, what RabbitMQ was seen to do.
//
// A script runs against the fake broker (src/broker) and against a real RabbitMQ, and the
// observations are compared (docs/conformance.md). The file:
//
//   { "description": "...", "claims": ["docs/model.md, The broker: ..."],
//     "broker": { "queue_type": "quorum" | "classic", "delivery_limit": N | "none",
//                 "prefetch": N, "dead_letter": "dlx" | "none", "consumer_timeout_ms": N },
//     "steps": [ { "declare": "account-service", "bind": ["transfers.#"] },
//                { "consume": "c1", "queue": "account-service", "heartbeat_s": 1 },
//                { "publish": "m1", "key": "transfers.transfer.requested",
//                  "then": ["publisher: m1 ack", "c1: m1 tag=1"] },
//                { "nack": "c1", "tag": 1, "requeue": true, "then": [...] }, ... ] }
//
// Each step is one operation of a client (declare, consume, publish, ack, nack,
// reject, close, kill, reconnect, pause) or of an operator (inspect, redrive), followed by
// `then`: the observations RabbitMQ produced after it, recorded from the real broker and
// checked against it whenever one is available. Where the simulator differs on purpose, the
// step says so: `fake_then` holds what the fake does instead and `difference` says why, so the
// comparison still holds the fake to what it claims.
//
// An observation is one line of text, "<subject>: <what>":
//   "c1: m1 tag=2 redelivered count=1"   a delivery to consumer c1 (count = x-delivery-count,
//                                        left out when the header is absent)
//   "publisher: m1 ack"                  a publisher confirm (ack, nack, or "unconfirmed
//                                        (channel closed)" when the channel closed first)
//   "c1: connection lost"                the broker closed c1's connection (missed heartbeats)
//   "c1: channel closed PRECONDITION_FAILED"  the broker closed c1's channel (consumer timeout)
//   "work.dlq: m1 (delivery_limit)"      inspect: a message waiting in a queue, with the reason
//   "work.dlq: empty"                    it was dead-lettered for
// Observations of one subject keep their order; the order between subjects is not observable
// (they come on different connections) and is not compared.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace inboxsim::conformance {

enum class Op : uint8_t {
  declare,    // a work queue bound to the topic exchange, with its dead-letter queue <name>.dlq
  consume,    // a consumer on its own connection, manual acks, the script's prefetch
  publish,    // one message with a message-id, on the publisher's confirm channel
  ack,        // basic.ack of one delivery tag
  nack,       // basic.nack of one delivery tag, requeue by default
  reject,     // basic.reject of one delivery tag, requeue by default
  close,      // the consumer closes its connection (or only its channel) cleanly
  kill,       // the consumer's process dies: its TCP connection drops without a close
  reconnect,  // the consumer opens a new connection and channel and consumes again
  pause,      // the consumer's process stops for `ms` (a GC pause): it sends nothing, not even
              // heartbeats, while everything else goes on
  inspect,    // an operator lists the messages waiting in a queue (a dead-letter queue)
  redrive,    // an operator moves every message of a dead-letter queue back to its queue
};

// The queue arguments and client settings every queue of a script shares, as the simulator's
// broker.* configuration keys do for a run.
struct BrokerSettings {
  bool quorum = true;
  // x-delivery-limit; nothing = RabbitMQ is given none and the fake keeps the simulator's
  // default (broker.delivery_limit), which is then a declared difference.
  std::optional<int64_t> delivery_limit;
  int64_t prefetch = 1;
  // "dlx" (the default here): every work queue gets a dead-letter exchange routing to
  // <name>.dlq; "none": no dead-letter exchange, as RabbitMQ and MassTransit declare by default.
  bool dead_letter = true;
  // The consumer timeout the fake applies (0: none). The real node's is fixed by broker.sh's
  // advanced.config (consumer_timeout 10000 ms, channel_tick_interval 1000 ms), so a script
  // that relies on it says 10000.
  int64_t consumer_timeout_ms = 0;
};

struct Step {
  Op op = Op::declare;
  std::string pointer;  // where the step is in the file, for messages: "/steps/3"
  // The queue (declare, inspect, redrive), the consumer (consume ... pause) or the message id
  // (publish) the operation is about.
  std::string subject;
  std::vector<std::string> bindings;                           // declare: topic patterns
  std::map<std::string, int64_t> rabbitmq_int_arguments;       // declare: given to RabbitMQ only
  std::map<std::string, std::string> rabbitmq_text_arguments;  // (the fake has no such feature)
  std::string queue;                                           // consume
  int64_t heartbeat_s = 0;                                     // consume: 0 = no heartbeats
  std::string routing_key;                                     // publish
  bool fake_publish_nack = false;     // publish: the fake refuses it (its publish_nack fault)
  bool close_before_confirm = false;  // publish: the channel closes before the confirm is read
  int64_t tag = 0;                    // ack, nack, reject
  bool requeue = true;                // nack, reject
  bool channel_only = false;          // close: the channel, not the connection
  int64_t pause_ms = 0;               // pause: the script's "ms"
  std::vector<std::string> then;      // what RabbitMQ did
  std::optional<std::vector<std::string>> fake_then;  // what the fake does instead, on purpose
  std::string difference;                             // why (required with fake_then)

  // The observations the fake must produce: `fake_then` where the script declares a
  // difference, `then` otherwise.
  const std::vector<std::string>& expected_of_fake() const { return fake_then ? *fake_then : then; }
};

struct Script {
  std::string path;
  std::string name;  // the file name without .json
  std::string description;
  std::vector<std::string> claims;  // the docs/model.md claims it checks
  BrokerSettings broker;
  std::vector<Step> steps;
};

// Reads and validates a script. On a problem returns nothing and sets `error` to one line that
// names the file, the place in it (JSON pointer) and what was expected.
std::optional<Script> load_script(const std::string& path, std::string& error);

// The operation's name as scripts spell it.
const char* op_name(Op op);

// The subject of an observation: the text before its first ": ".
std::string observation_subject(const std::string& observation);

// True when both lists hold the same observations subject by subject, in the same order within
// each subject (the order between subjects is not observable).
bool same_observations(const std::vector<std::string>& left, const std::vector<std::string>& right);

}  // namespace inboxsim::conformance
