#include "rabbitmq_driver.h"

#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <thread>
#include <variant>

namespace inboxsim::conformance {

namespace {

using Clock = std::chrono::steady_clock;

// How long a step may take to show what it is expected to show. RabbitMQ on the same machine
// answers within milliseconds; the margin is for a loaded CI machine.
constexpr auto kStepDeadline = std::chrono::seconds(8);
// How long the observations must stay unchanged after they match: anything the broker does
// beyond what was expected shows up within it (dispatch on a local broker takes a millisecond).
constexpr auto kQuietPeriod = std::chrono::milliseconds(150);
// Recording has no expectation to wait for, so it waits for a longer silence.
constexpr auto kRecordingQuietPeriod = std::chrono::milliseconds(600);
constexpr auto kPollInterval = std::chrono::milliseconds(2);
// Listing a queue takes and puts back every message in it: done less often than polling.
constexpr auto kListingInterval = std::chrono::milliseconds(40);
constexpr auto kConnectTimeout = std::chrono::seconds(5);
// Bounds on the operator's loops over a queue's messages.
constexpr int kQueueMessagesMax = 10'000;
constexpr int kFrameMax = 131072;

std::string text_of(amqp_bytes_t bytes) {
  return std::string(static_cast<const char*>(bytes.bytes), bytes.len);
}

amqp_bytes_t bytes_of(const std::string& text) {
  return amqp_bytes_t{text.size(), const_cast<char*>(text.data())};
}

// Throws if an RPC failed, with what the library or the broker said.
void check(const amqp_rpc_reply_t& reply, const std::string& what) {
  switch (reply.reply_type) {
    case AMQP_RESPONSE_NORMAL: return;
    case AMQP_RESPONSE_NONE: throw std::runtime_error(what + ": no reply from the broker");
    case AMQP_RESPONSE_LIBRARY_EXCEPTION:
      throw std::runtime_error(what + ": " + amqp_error_string2(reply.library_error));
    case AMQP_RESPONSE_SERVER_EXCEPTION: break;
  }
  if (reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
    const auto* close = static_cast<amqp_connection_close_t*>(reply.reply.decoded);
    throw std::runtime_error(what +
                             ": connection closed by the broker: " + text_of(close->reply_text));
  }
  if (reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
    const auto* close = static_cast<amqp_channel_close_t*>(reply.reply.decoded);
    throw std::runtime_error(what +
                             ": channel closed by the broker: " + text_of(close->reply_text));
  }
  throw std::runtime_error(what + ": unexpected reply from the broker");
}

void check_status(int status, const std::string& what) {
  if (status != AMQP_STATUS_OK) throw std::runtime_error(what + ": " + amqp_error_string2(status));
}

// Queue arguments, kept alive while a declaration uses them.
class Arguments {
 public:
  void add(const std::string& key, std::variant<int64_t, std::string> value) {
    keys_.push_back(key);
    values_.push_back(std::move(value));
  }
  amqp_table_t table() {
    entries_.clear();
    for (size_t index = 0; index < keys_.size(); ++index) {
      amqp_table_entry_t entry{};
      entry.key = bytes_of(keys_[index]);
      if (const auto* number = std::get_if<int64_t>(&values_[index])) {
        entry.value.kind = AMQP_FIELD_KIND_I64;
        entry.value.value.i64 = *number;
      } else {
        entry.value.kind = AMQP_FIELD_KIND_UTF8;
        entry.value.value.bytes = bytes_of(std::get<std::string>(values_[index]));
      }
      entries_.push_back(entry);
    }
    return amqp_table_t{static_cast<int>(entries_.size()), entries_.data()};
  }

 private:
  std::vector<std::string> keys_;
  std::vector<std::variant<int64_t, std::string>> values_;
  std::vector<amqp_table_entry_t> entries_;
};

const amqp_field_value_t* header(const amqp_basic_properties_t& properties, const char* key) {
  if ((properties._flags & AMQP_BASIC_HEADERS_FLAG) == 0) return nullptr;
  for (int index = 0; index < properties.headers.num_entries; ++index) {
    const amqp_table_entry_t& entry = properties.headers.entries[index];
    if (text_of(entry.key) == key) return &entry.value;
  }
  return nullptr;
}

std::optional<int64_t> integer_of(const amqp_field_value_t& value) {
  switch (value.kind) {
    case AMQP_FIELD_KIND_I8: return value.value.i8;
    case AMQP_FIELD_KIND_U8: return value.value.u8;
    case AMQP_FIELD_KIND_I16: return value.value.i16;
    case AMQP_FIELD_KIND_U16: return value.value.u16;
    case AMQP_FIELD_KIND_I32: return value.value.i32;
    case AMQP_FIELD_KIND_U32: return value.value.u32;
    case AMQP_FIELD_KIND_I64: return value.value.i64;
    case AMQP_FIELD_KIND_U64: return static_cast<int64_t>(value.value.u64);
    default: return std::nullopt;
  }
}

std::string message_id(const amqp_basic_properties_t& properties) {
  if ((properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG) == 0) return "(no message-id)";
  return text_of(properties.message_id);
}

// The reason RabbitMQ dead-lettered a message: x-first-death-reason, else the first x-death
// entry's reason (dlx.md, "Dead-Lettered Messages").
std::string death_reason(const amqp_basic_properties_t& properties) {
  if (const amqp_field_value_t* first = header(properties, "x-first-death-reason")) {
    if (first->kind == AMQP_FIELD_KIND_UTF8 || first->kind == AMQP_FIELD_KIND_BYTES) {
      return text_of(first->value.bytes);
    }
  }
  const amqp_field_value_t* deaths = header(properties, "x-death");
  if (deaths == nullptr || deaths->kind != AMQP_FIELD_KIND_ARRAY ||
      deaths->value.array.num_entries == 0) {
    return "no x-death";
  }
  const amqp_field_value_t& death = deaths->value.array.entries[0];
  if (death.kind != AMQP_FIELD_KIND_TABLE) return "no x-death";
  for (int index = 0; index < death.value.table.num_entries; ++index) {
    const amqp_table_entry_t& entry = death.value.table.entries[index];
    if (text_of(entry.key) == "reason") return text_of(entry.value.value.bytes);
  }
  return "no reason";
}

// "c1: m1 tag=2 redelivered count=1", as script.h describes observations.
std::string delivery_line(const std::string& consumer, const amqp_basic_deliver_t& deliver,
                          const amqp_basic_properties_t& properties) {
  std::string line =
      consumer + ": " + message_id(properties) + " tag=" + std::to_string(deliver.delivery_tag);
  if (deliver.redelivered != 0) line += " redelivered";
  if (const amqp_field_value_t* count = header(properties, "x-delivery-count")) {
    const std::optional<int64_t> value = integer_of(*count);
    line += " count=" + (value ? std::to_string(*value) : std::string("?"));
  }
  return line;
}

}  // namespace

// One AMQP connection and its current channel.
class RabbitmqDriver::Connection {
 public:
  Connection(const Endpoint& endpoint, int64_t heartbeat_s, std::string name)
      : name_(std::move(name)) {
    state_ = amqp_new_connection();
    amqp_socket_t* socket = amqp_tcp_socket_new(state_);
    if (socket == nullptr) throw std::runtime_error(name_ + ": cannot create a socket");
    timeval timeout{std::chrono::duration_cast<std::chrono::seconds>(kConnectTimeout).count(), 0};
    check_status(amqp_socket_open_noblock(socket, endpoint.host.c_str(), endpoint.port, &timeout),
                 name_ + ": connecting to " + endpoint.host + ":" + std::to_string(endpoint.port));
    check(amqp_login(state_, "/", 0, kFrameMax, static_cast<int>(heartbeat_s),
                     AMQP_SASL_METHOD_PLAIN, "guest", "guest"),
          name_ + ": login");
    open_ = true;
    open_channel();
  }

  ~Connection() {
    if (open_) close();
    amqp_destroy_connection(state_);
  }

  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  amqp_connection_state_t state() const { return state_; }
  amqp_channel_t channel() const { return channel_; }
  bool open() const { return open_; }
  bool channel_open() const { return open_ && channel_open_; }
  const std::string& name() const { return name_; }

  // Opens the next channel of this connection (channel numbers are never reused here, so a
  // frame still on the wire for a closed channel cannot be taken for the new one's).
  void open_channel() {
    ++channel_;
    amqp_channel_open(state_, channel_);
    check(amqp_get_rpc_reply(state_), name_ + ": channel.open");
    channel_open_ = true;
  }

  // The broker closed the current channel (a consumer timeout): confirm it, as the protocol
  // asks, and return true. A client that was not reading finds the close repeated (RabbitMQ
  // 3.10.8 sends it again at every tick until the close-ok comes): false for those.
  bool channel_closed_by_broker(amqp_channel_t channel) {
    if (channel != channel_ || !channel_open_) return false;
    channel_open_ = false;
    amqp_channel_close_ok_t ok{};
    check_status(amqp_send_method(state_, channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &ok),
                 name_ + ": channel.close-ok");
    return true;
  }

  void close_channel() {
    channel_open_ = false;
    check(amqp_channel_close(state_, channel_, AMQP_REPLY_SUCCESS), name_ + ": channel.close");
  }

  void close() {
    open_ = false;
    if (channel_open_) amqp_channel_close(state_, channel_, AMQP_REPLY_SUCCESS);
    channel_open_ = false;
    amqp_connection_close(state_, AMQP_REPLY_SUCCESS);
  }

  // The process dies: the socket goes away without a close handshake.
  void drop() {
    open_ = false;
    channel_open_ = false;
    shutdown(amqp_get_sockfd(state_), SHUT_RDWR);
  }

  enum class Read { frame, nothing, lost };

  // The next frame if one has arrived; `lost` when the connection is gone.
  Read next_frame(amqp_frame_t& frame) {
    if (!open_) return Read::nothing;
    timeval no_wait{0, 0};
    const int status = amqp_simple_wait_frame_noblock(state_, &frame, &no_wait);
    if (status == AMQP_STATUS_OK) return Read::frame;
    if (status == AMQP_STATUS_TIMEOUT) return Read::nothing;
    open_ = false;
    channel_open_ = false;
    return Read::lost;
  }

 private:
  amqp_connection_state_t state_ = nullptr;
  amqp_channel_t channel_ = 0;
  bool open_ = false;
  bool channel_open_ = false;
  std::string name_;
};

RabbitmqDriver::RabbitmqDriver(const Endpoint& endpoint, const BrokerSettings& settings,
                               std::string prefix, bool recording)
    : endpoint_(endpoint), settings_(settings), prefix_(std::move(prefix)), recording_(recording) {
  operator_ = std::make_unique<Connection>(endpoint_, 0, "operator");
  publisher_ = std::make_unique<Connection>(endpoint_, 0, "publisher");
  amqp_confirm_select(publisher_->state(), publisher_->channel());
  check(amqp_get_rpc_reply(publisher_->state()), "publisher: confirm.select");
  const std::string exchange = full_name("banking.events");
  amqp_exchange_declare(operator_->state(), operator_->channel(), bytes_of(exchange),
                        amqp_cstring_bytes("topic"), 0, 0, 0, 0, amqp_empty_table);
  check(amqp_get_rpc_reply(operator_->state()), "exchange.declare " + exchange);
}

RabbitmqDriver::~RabbitmqDriver() {
  consumers_.clear();
  publisher_.reset();
  if (operator_ && operator_->channel_open()) {
    for (const std::string& queue : queues_) {
      amqp_queue_delete(operator_->state(), operator_->channel(), bytes_of(full_name(queue)), 0, 0);
    }
    amqp_exchange_delete(operator_->state(), operator_->channel(),
                         bytes_of(full_name("banking.events")), 0);
  }
}

std::vector<std::string> RabbitmqDriver::run(const Step& step,
                                             const std::vector<std::string>* expected) {
  std::vector<std::string> observed;
  std::string inspected;
  switch (step.op) {
    case Op::declare: declare(step); break;
    case Op::consume: consume(step); break;
    case Op::publish: publish(step, observed); break;
    case Op::ack:
    case Op::nack:
    case Op::reject: settle(step); break;
    case Op::close:
    case Op::kill: close(step); break;
    case Op::reconnect: reconnect(step); break;
    case Op::pause: pause(step, observed); break;
    case Op::inspect: inspected = step.subject; break;
    case Op::redrive: redrive(step); break;
  }
  wait(observed, recording_ ? nullptr : expected, inspected);
  return observed;
}

std::vector<std::string> RabbitmqDriver::drain() {
  std::vector<std::string> observed;
  const std::vector<std::string> nothing;
  wait(observed, recording_ ? nullptr : &nothing, "");
  return observed;
}

void RabbitmqDriver::declare(const Step& step) {
  const std::string queue = full_name(step.subject);
  const std::string dead_letters = queue + ".dlq";
  amqp_connection_state_t state = operator_->state();
  const amqp_channel_t channel = operator_->channel();
  // A queue left over by an earlier run that died would carry its messages into this one.
  for (const std::string& name : {queue, dead_letters}) {
    amqp_queue_delete(state, channel, bytes_of(name), 0, 0);
    check(amqp_get_rpc_reply(state), "queue.delete " + name);
  }
  if (settings_.dead_letter) {
    amqp_queue_declare(state, channel, bytes_of(dead_letters), 0, 1, 0, 0, amqp_empty_table);
    check(amqp_get_rpc_reply(state), "queue.declare " + dead_letters);
  }
  Arguments arguments;
  if (settings_.quorum) {
    arguments.add("x-queue-type", std::string("quorum"));
    if (settings_.delivery_limit) arguments.add("x-delivery-limit", *settings_.delivery_limit);
  }
  // The fake's dead-letter queue <name>.dlq: a dead-letter exchange (the default one) that
  // routes to it; with dead_letter "none", no dead-letter exchange at all.
  if (settings_.dead_letter) {
    arguments.add("x-dead-letter-exchange", std::string());
    arguments.add("x-dead-letter-routing-key", dead_letters);
  }
  for (const auto& [key, value] : step.rabbitmq_int_arguments) arguments.add(key, value);
  for (const auto& [key, value] : step.rabbitmq_text_arguments) arguments.add(key, value);
  amqp_queue_declare(state, channel, bytes_of(queue), 0, 1, 0, 0, arguments.table());
  check(amqp_get_rpc_reply(state), "queue.declare " + queue);
  queues_.push_back(step.subject);
  if (settings_.dead_letter) queues_.push_back(step.subject + ".dlq");
  for (const std::string& pattern : step.bindings) {
    amqp_queue_bind(state, channel, bytes_of(queue), bytes_of(full_name("banking.events")),
                    bytes_of(pattern), amqp_empty_table);
    check(amqp_get_rpc_reply(state), "queue.bind " + queue + " " + pattern);
  }
}

void RabbitmqDriver::consume(const Step& step) {
  if (consumers_.count(step.subject) != 0) {
    throw std::runtime_error(step.pointer + ": consumer " + step.subject + " exists already");
  }
  Consumer& added = consumers_[step.subject];
  added.queue = step.queue;
  added.heartbeat_s = step.heartbeat_s;
  added.connection = std::make_unique<Connection>(endpoint_, step.heartbeat_s, step.subject);
  start_consuming(step.subject, added);
}

void RabbitmqDriver::start_consuming(const std::string& name, Consumer& consumer) {
  Connection& connection = *consumer.connection;
  // Per-consumer prefetch (global = false), as the simulator's consumers have.
  amqp_basic_qos(connection.state(), connection.channel(), 0,
                 static_cast<uint16_t>(settings_.prefetch), 0);
  check(amqp_get_rpc_reply(connection.state()), name + ": basic.qos");
  amqp_basic_consume(connection.state(), connection.channel(), bytes_of(full_name(consumer.queue)),
                     bytes_of(name), 0, 0, 0, amqp_empty_table);
  check(amqp_get_rpc_reply(connection.state()), name + ": basic.consume");
}

void RabbitmqDriver::publish(const Step& step, std::vector<std::string>& observed) {
  amqp_basic_properties_t properties{};
  properties._flags = AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
  properties.message_id = bytes_of(step.subject);
  properties.delivery_mode = 2;  // persistent
  check_status(amqp_basic_publish(publisher_->state(), publisher_->channel(),
                                  bytes_of(full_name("banking.events")), bytes_of(step.routing_key),
                                  0, 0, &properties, bytes_of(step.subject)),
               "publisher: basic.publish " + step.subject);
  if (!step.close_before_confirm) {
    unconfirmed_[next_publish_sequence_++] = step.subject;
    return;
  }
  // The channel closes before the confirm is read: whatever arrives for it is dropped, as a
  // client library drops what comes for a closed channel. The next channel counts anew.
  publisher_->close_channel();
  observed.push_back("publisher: " + step.subject + " unconfirmed (channel closed)");
  unconfirmed_.clear();
  next_publish_sequence_ = 1;
  publisher_->open_channel();
  amqp_confirm_select(publisher_->state(), publisher_->channel());
  check(amqp_get_rpc_reply(publisher_->state()), "publisher: confirm.select");
}

void RabbitmqDriver::settle(const Step& step) {
  Connection& connection = *consumer(step).connection;
  if (!connection.channel_open()) {
    throw std::runtime_error(step.pointer + ": " + step.subject + " has no open channel");
  }
  const auto tag = static_cast<uint64_t>(step.tag);
  int status = AMQP_STATUS_OK;
  if (step.op == Op::ack) {
    status = amqp_basic_ack(connection.state(), connection.channel(), tag, 0);
  } else if (step.op == Op::nack) {
    status =
        amqp_basic_nack(connection.state(), connection.channel(), tag, 0, step.requeue ? 1 : 0);
  } else {
    status = amqp_basic_reject(connection.state(), connection.channel(), tag, step.requeue ? 1 : 0);
  }
  check_status(status, step.subject + ": " + op_name(step.op));
}

void RabbitmqDriver::close(const Step& step) {
  Connection& connection = *consumer(step).connection;
  if (step.op == Op::kill) {
    connection.drop();
  } else if (step.channel_only) {
    connection.close_channel();
  } else {
    connection.close();
  }
}

void RabbitmqDriver::reconnect(const Step& step) {
  Consumer& reconnecting = consumer(step);
  if (reconnecting.connection->open()) {
    reconnecting.connection->open_channel();
  } else {
    reconnecting.connection =
        std::make_unique<Connection>(endpoint_, reconnecting.heartbeat_s, step.subject);
  }
  start_consuming(step.subject, reconnecting);
}

// The paused consumer's connection is not read (so not even heartbeats go out) while every
// other connection is.
void RabbitmqDriver::pause(const Step& step, std::vector<std::string>& observed) {
  Consumer& paused = consumer(step);
  // Its last frame goes out as the pause begins (as the simulator assumes): rabbitmq-c sends a
  // heartbeat only once a whole interval has passed, which would leave the silence before the
  // pause up to one interval long and the close window blurred by as much.
  if (paused.heartbeat_s > 0 && paused.connection->open()) {
    amqp_frame_t heartbeat{};
    heartbeat.frame_type = AMQP_FRAME_HEARTBEAT;
    heartbeat.channel = 0;
    check_status(amqp_send_frame(paused.connection->state(), &heartbeat),
                 step.subject + ": heartbeat");
  }
  const auto until = Clock::now() + std::chrono::milliseconds(step.pause_ms);
  while (Clock::now() < until) {
    poll(observed, step.subject);
    std::this_thread::sleep_for(kPollInterval);
  }
}

// An operator's move of every dead-lettered message back to its queue: each is published anew
// (same message-id) through the default exchange, then taken off the dead-letter queue.
void RabbitmqDriver::redrive(const Step& step) {
  const std::string dead_letters = full_name(step.subject);
  const std::string suffix = ".dlq";
  if (!step.subject.ends_with(suffix)) {
    throw std::runtime_error(step.pointer + ": redrive needs a dead-letter queue <queue>.dlq");
  }
  const std::string target = full_name(step.subject.substr(0, step.subject.size() - suffix.size()));
  amqp_connection_state_t state = operator_->state();
  const amqp_channel_t channel = operator_->channel();
  for (int moved = 0; moved < kQueueMessagesMax; ++moved) {
    const amqp_rpc_reply_t reply = amqp_basic_get(state, channel, bytes_of(dead_letters), 0);
    check(reply, "basic.get " + dead_letters);
    if (reply.reply.id != AMQP_BASIC_GET_OK_METHOD) return;
    const uint64_t tag = static_cast<amqp_basic_get_ok_t*>(reply.reply.decoded)->delivery_tag;
    amqp_message_t message;
    check(amqp_read_message(state, channel, &message, 0), "reading from " + dead_letters);
    amqp_basic_properties_t properties{};
    properties._flags = AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG;
    properties.message_id = message.properties.message_id;
    properties.delivery_mode = 2;
    const int published = amqp_basic_publish(state, channel, amqp_cstring_bytes(""),
                                             bytes_of(target), 0, 0, &properties, message.body);
    amqp_destroy_message(&message);
    check_status(published, "publishing to " + target);
    check_status(amqp_basic_ack(state, channel, tag, 0), "basic.ack on " + dead_letters);
  }
  throw std::runtime_error(step.pointer + ": more than " + std::to_string(kQueueMessagesMax) +
                           " messages to redrive");
}

// basic.get without acks on a channel of its own, then the channel closes: RabbitMQ puts every
// message back where it was.
std::vector<std::string> RabbitmqDriver::list_queue(const std::string& name) {
  operator_->open_channel();
  amqp_connection_state_t state = operator_->state();
  const amqp_channel_t channel = operator_->channel();
  std::vector<std::string> listed;
  for (int taken = 0; taken < kQueueMessagesMax; ++taken) {
    const amqp_rpc_reply_t reply = amqp_basic_get(state, channel, bytes_of(full_name(name)), 0);
    check(reply, "basic.get " + name);
    if (reply.reply.id != AMQP_BASIC_GET_OK_METHOD) break;
    amqp_message_t message;
    check(amqp_read_message(state, channel, &message, 0), "reading from " + name);
    listed.push_back(name + ": " + message_id(message.properties) + " (" +
                     death_reason(message.properties) + ")");
    amqp_destroy_message(&message);
  }
  operator_->close_channel();
  // Declarations go on on a fresh channel of the operator's.
  operator_->open_channel();
  if (listed.empty()) listed.push_back(name + ": empty");
  return listed;
}

void RabbitmqDriver::wait(std::vector<std::string>& observed,
                          const std::vector<std::string>* expected, const std::string& inspected) {
  const auto deadline = Clock::now() + kStepDeadline;
  const auto quiet = expected ? kQuietPeriod : kRecordingQuietPeriod;
  auto last_change = Clock::now();
  auto last_listing = Clock::time_point{};
  std::vector<std::string> listing;
  while (Clock::now() < deadline) {
    if (poll(observed, "")) last_change = Clock::now();
    if (!inspected.empty() && Clock::now() - last_listing >= kListingInterval) {
      std::vector<std::string> fresh = list_queue(inspected);
      last_listing = Clock::now();
      if (fresh != listing) last_change = Clock::now();
      listing = std::move(fresh);
    }
    std::vector<std::string> all = observed;
    all.insert(all.end(), listing.begin(), listing.end());
    const bool settled = Clock::now() - last_change >= quiet;
    if (settled && (expected == nullptr || same_observations(all, *expected))) break;
    std::this_thread::sleep_for(kPollInterval);
  }
  observed.insert(observed.end(), listing.begin(), listing.end());
}

bool RabbitmqDriver::poll(std::vector<std::string>& observed, const std::string& skipped_consumer) {
  bool arrived = poll_confirms(observed);
  for (auto& [name, consumer] : consumers_) {
    if (name != skipped_consumer)
      arrived = poll_consumer(name, *consumer.connection, observed) || arrived;
  }
  return arrived;
}

// Confirms of the publisher's current channel (sequence numbers count per channel; those of a
// closed channel are dropped, as a client library drops them).
bool RabbitmqDriver::poll_confirms(std::vector<std::string>& observed) {
  bool arrived = false;
  amqp_frame_t frame;
  for (int frames = 0; frames < kQueueMessagesMax; ++frames) {
    if (publisher_->next_frame(frame) != Connection::Read::frame) break;
    if (frame.frame_type != AMQP_FRAME_METHOD || frame.channel != publisher_->channel()) continue;
    const amqp_method_number_t method = frame.payload.method.id;
    uint64_t tag = 0;
    bool multiple = false;
    if (method == AMQP_BASIC_ACK_METHOD) {
      const auto* ack = static_cast<amqp_basic_ack_t*>(frame.payload.method.decoded);
      tag = ack->delivery_tag;
      multiple = ack->multiple != 0;
    } else if (method == AMQP_BASIC_NACK_METHOD) {
      const auto* nack = static_cast<amqp_basic_nack_t*>(frame.payload.method.decoded);
      tag = nack->delivery_tag;
      multiple = nack->multiple != 0;
    } else {
      continue;
    }
    const char* verdict = method == AMQP_BASIC_ACK_METHOD ? " ack" : " nack";
    for (auto it = unconfirmed_.begin(); it != unconfirmed_.end() && it->first <= tag;) {
      if (it->first != tag && !multiple) {
        ++it;
        continue;
      }
      observed.push_back("publisher: " + it->second + verdict);
      it = unconfirmed_.erase(it);
      arrived = true;
    }
  }
  if (!publisher_->open()) throw std::runtime_error("publisher: the broker closed its connection");
  return arrived;
}

// Deliveries to one consumer, and the loss of its connection.
bool RabbitmqDriver::poll_consumer(const std::string& name, Connection& connection,
                                   std::vector<std::string>& observed) {
  bool arrived = false;
  amqp_frame_t frame;
  for (int frames = 0; frames < kQueueMessagesMax; ++frames) {
    const Connection::Read read = connection.next_frame(frame);
    if (read == Connection::Read::nothing) break;
    arrived = true;
    if (read == Connection::Read::lost) {
      observed.push_back(name + ": connection lost");
      break;
    }
    if (frame.frame_type != AMQP_FRAME_METHOD) continue;
    if (frame.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD) {
      const auto* close = static_cast<amqp_channel_close_t*>(frame.payload.method.decoded);
      const std::string reply = text_of(close->reply_text);
      // Only the consumer timeout closes a consumer's channel in these scripts; anything
      // else is a broken script.
      if (reply.rfind("PRECONDITION_FAILED - delivery acknowledgement", 0) != 0) {
        throw std::runtime_error(name + ": channel closed by the broker: " + reply);
      }
      if (connection.channel_closed_by_broker(frame.channel)) {
        observed.push_back(name + ": channel closed PRECONDITION_FAILED");
      }
      continue;
    }
    if (frame.payload.method.id != AMQP_BASIC_DELIVER_METHOD) continue;
    const auto deliver = *static_cast<amqp_basic_deliver_t*>(frame.payload.method.decoded);
    amqp_message_t message;
    check(amqp_read_message(connection.state(), frame.channel, &message, 0),
          name + ": reading a delivery");
    // A delivery for a channel closed meanwhile is void: the broker requeued it.
    if (frame.channel == connection.channel() && connection.channel_open()) {
      observed.push_back(delivery_line(name, deliver, message.properties));
    }
    amqp_destroy_message(&message);
  }
  return arrived;
}

RabbitmqDriver::Consumer& RabbitmqDriver::consumer(const Step& step) {
  const auto found = consumers_.find(step.subject);
  if (found == consumers_.end())
    throw std::runtime_error(step.pointer + ": no consumer " + step.subject);
  return found->second;
}

}  // namespace inboxsim::conformance
