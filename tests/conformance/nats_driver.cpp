#include "nats_driver.h"

#include <nats/nats.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

namespace inboxsim::conformance {

namespace {

// Generous on a loaded 2-core machine; a step that takes this long fails.
constexpr int64_t kRequestWaitMs = 5'000;
constexpr int64_t kAdvisoryWaitMs = 3'000;
// After an expected advisory, or a step that may cause one, how long to look for another.
constexpr int64_t kAdvisoryGraceMs = 40;
// A pull request the client gave up on at its deadline may live a few ms longer on the server,
// whose deadline started when it got the request; the driver lets it end before going on.
constexpr int64_t kFetchSettleMs = 50;

constexpr int64_t kNanosPerMs = 1'000'000;

void check(natsStatus status, const std::string& what) {
  if (status == NATS_OK) return;
  const char* last = nats_GetLastError(nullptr);
  throw std::runtime_error(
      what + ": " + natsStatus_GetText(status) +
      (last != nullptr && *last != '\0' ? std::string(" (") + last + ")" : ""));
}

void check_js(natsStatus status, jsErrCode code, const std::string& what) {
  if (status == NATS_OK) return;
  check(status, what + (code != 0 ? " (JetStream error " + std::to_string(code) + ")" : ""));
}

std::string sanitized(const std::string& name) {
  std::string out;
  for (const char c : name) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_';
    out += plain ? c : '_';
  }
  return out;
}

int64_t elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               since)
      .count();
}

const char* advisory_kind(const std::string& token) {
  if (token == "MAX_DELIVERIES") return "max_deliveries";
  if (token == "MSG_NAKED") return "nak";
  if (token == "MSG_TERMINATED") return "terminated";
  return nullptr;  // created, deleted, ...: not a script's business
}

}  // namespace

void close_nats_library() { nats_CloseAndWait(kRequestWaitMs); }

struct NatsDriver::Connection {
  natsConnection* connection = nullptr;
  jsCtx* js = nullptr;
  ~Connection() {
    jsCtx_Destroy(js);
    natsConnection_Destroy(connection);
  }
};

struct NatsDriver::Client {
  struct Got {
    std::string message;
    uint64_t stream_sequence = 0;
    natsMsg* msg = nullptr;
  };
  std::string stream;  // the script's name of it
  std::unique_ptr<Connection> connection;
  natsSubscription* subscription = nullptr;
  std::vector<Got> deliveries;

  void close() {
    for (Got& got : deliveries) natsMsg_Destroy(got.msg);
    deliveries.clear();
    natsSubscription_Destroy(subscription);
    subscription = nullptr;
    connection.reset();
  }
  ~Client() { close(); }
};

NatsDriver::NatsDriver(const std::string& host, int port, const JsSettings& settings,
                       const std::string& script_name)
    : url_("nats://" + host + ":" + std::to_string(port)),
      settings_(settings),
      prefix_(sanitized(script_name)) {
  admin_ = connect();
  natsSubscription* advisories = nullptr;
  check(natsConnection_SubscribeSync(&advisories, admin_->connection,
                                     "$JS.EVENT.ADVISORY.CONSUMER.*.*.*"),
        "subscribe to advisories");
  advisories_ = advisories;
}

NatsDriver::~NatsDriver() {
  clients_.clear();
  natsSubscription_Destroy(static_cast<natsSubscription*>(advisories_));
  for (const std::string& stream : streams_) {
    js_DeleteStream(admin_->js, stream.c_str(), nullptr, nullptr);
  }
}

std::unique_ptr<NatsDriver::Connection> NatsDriver::connect() const {
  auto out = std::make_unique<Connection>();
  natsOptions* options = nullptr;
  check(natsOptions_Create(&options), "options");
  natsOptions_SetURL(options, url_.c_str());
  natsOptions_SetAllowReconnect(options, false);
  natsOptions_SetTimeout(options, kRequestWaitMs);
  const natsStatus status = natsConnection_Connect(&out->connection, options);
  natsOptions_Destroy(options);
  check(status, "connect to " + url_);
  jsOptions js_options;
  jsOptions_Init(&js_options);
  js_options.Wait = kRequestWaitMs;
  check(natsConnection_JetStream(&out->js, out->connection, &js_options), "JetStream context");
  return out;
}

std::vector<std::string> NatsDriver::run(const JsStep& step,
                                         const std::vector<std::string>* expected) {
  std::vector<std::string> observed;
  switch (step.op) {
    case JsOp::stream: add_stream(step); break;
    case JsOp::subscribe: subscribe(step, /*again=*/false); break;
    case JsOp::publish: publish(step, observed); break;
    case JsOp::fetch: fetch(step, observed); break;
    case JsOp::ack:
    case JsOp::nak:
    case JsOp::term:
    case JsOp::in_progress: reply(step); break;
    case JsOp::wait: std::this_thread::sleep_for(std::chrono::milliseconds(step.wait_ms)); break;
    case JsOp::info: info(step, observed); break;
    case JsOp::kill: kill(step); break;
    case JsOp::reconnect: subscribe(step, /*again=*/true); break;
  }
  size_t wanted = 0;
  if (expected != nullptr) {
    for (const std::string& line : *expected)
      if (line.starts_with("advisory: ")) ++wanted;
  }
  const bool may_come = step.op == JsOp::fetch || step.op == JsOp::nak || step.op == JsOp::term;
  read_advisories(wanted, may_come, observed);
  return observed;
}

void NatsDriver::add_stream(const JsStep& step) {
  const std::string name = real_stream(step.subject);
  js_DeleteStream(admin_->js, name.c_str(), nullptr, nullptr);  // a leftover of a killed run
  std::vector<std::string> subjects;
  std::vector<const char*> pointers;
  for (const std::string& subject : step.subjects) subjects.push_back(prefix_ + "." + subject);
  for (const std::string& subject : subjects) pointers.push_back(subject.c_str());
  jsStreamConfig config;
  jsStreamConfig_Init(&config);
  config.Name = name.c_str();
  config.Subjects = pointers.data();
  config.SubjectsLen = static_cast<int>(pointers.size());
  config.Storage = js_FileStorage;
  config.Duplicates = settings_.duplicates_ms * kNanosPerMs;
  jsErrCode code = static_cast<jsErrCode>(0);
  jsStreamInfo* stream_info = nullptr;
  check_js(js_AddStream(&stream_info, admin_->js, &config, nullptr, &code), code,
           "add stream " + name);
  jsStreamInfo_Destroy(stream_info);
  streams_.push_back(name);
  jsConsumerConfig consumer;
  jsConsumerConfig_Init(&consumer);
  consumer.Durable = step.subject.c_str();
  consumer.DeliverPolicy = js_DeliverAll;
  consumer.AckPolicy = js_AckExplicit;
  consumer.AckWait = settings_.ack_wait_ms * kNanosPerMs;
  consumer.MaxDeliver = settings_.max_deliver;
  consumer.MaxAckPending = settings_.max_ack_pending;
  jsConsumerInfo* consumer_info = nullptr;
  check_js(js_AddConsumer(&consumer_info, admin_->js, name.c_str(), &consumer, nullptr, &code),
           code, "add consumer " + step.subject);
  jsConsumerInfo_Destroy(consumer_info);
}

void NatsDriver::subscribe(const JsStep& step, bool again) {
  std::unique_ptr<Client>& slot = clients_[step.subject];
  if (again != (slot != nullptr)) {
    throw std::runtime_error(step.pointer + ": " + (again ? "no client " : "client exists: ") +
                             step.subject);
  }
  if (again && slot->connection) throw std::runtime_error(step.pointer + ": still connected");
  if (!again) {
    slot = std::make_unique<Client>();
    slot->stream = step.stream;
  }
  slot->connection = connect();
  const std::string stream = real_stream(slot->stream);
  jsSubOptions options;
  jsSubOptions_Init(&options);
  options.Stream = stream.c_str();
  options.Consumer = slot->stream.c_str();
  jsErrCode code = static_cast<jsErrCode>(0);
  check_js(js_PullSubscribe(&slot->subscription, slot->connection->js, nullptr,
                            slot->stream.c_str(), nullptr, &options, &code),
           code, step.pointer + ": bind to consumer " + slot->stream);
}

void NatsDriver::publish(const JsStep& step, std::vector<std::string>& observed) {
  jsPubOptions options;
  jsPubOptions_Init(&options);
  options.MsgId = step.subject.c_str();
  jsPubAck* ack = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  const std::string subject = prefix_ + "." + step.nats_subject;
  check_js(js_Publish(&ack, admin_->js, subject.c_str(), step.subject.data(),
                      static_cast<int>(step.subject.size()), &options, &code),
           code, step.pointer + ": publish");
  const std::string stream = ack->Stream;
  if (!ack->Duplicate) names_[{stream, ack->Sequence}] = step.subject;
  observed.push_back("publisher: " + step.subject + " seq=" + std::to_string(ack->Sequence) +
                     (ack->Duplicate ? " duplicate" : ""));
  jsPubAck_Destroy(ack);
}

void NatsDriver::fetch(const JsStep& step, std::vector<std::string>& observed) {
  Client& fetching = client(step);
  jsFetchRequest request;
  jsFetchRequest_Init(&request);
  request.Batch = static_cast<int>(step.batch);
  request.NoWait = true;
  request.Expires = kFetchExpiresMs * kNanosPerMs;
  natsMsgList list{};
  const auto start = std::chrono::steady_clock::now();
  const natsStatus status = natsSubscription_FetchRequest(&list, fetching.subscription, &request);
  if (status != NATS_OK && status != NATS_TIMEOUT && status != NATS_NOT_FOUND) {
    check(status, step.pointer + ": fetch");
  }
  for (int index = 0; index < list.Count; ++index) {
    natsMsg* msg = list.Msgs[index];
    list.Msgs[index] = nullptr;  // the client keeps it, to answer it later
    jsMsgMetaData* meta = nullptr;
    check(natsMsg_GetMetaData(&meta, msg), step.pointer + ": metadata");
    const std::string name(natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg)));
    observed.push_back(step.subject + ": " + name +
                       " stream=" + std::to_string(meta->Sequence.Stream) +
                       " consumer=" + std::to_string(meta->Sequence.Consumer) +
                       " delivered=" + std::to_string(meta->NumDelivered));
    fetching.deliveries.push_back(Client::Got{name, meta->Sequence.Stream, msg});
    jsMsgMetaData_Destroy(meta);
  }
  if (list.Count == 0) observed.push_back(step.subject + ": no messages");
  natsMsgList_Destroy(&list);
  if (elapsed_ms(start) >= kFetchExpiresMs - 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(kFetchSettleMs));
  }
}

void NatsDriver::reply(const JsStep& step) {
  Client& replying = client(step);
  natsMsg* target = nullptr;
  for (const Client::Got& got : replying.deliveries) {
    if (got.message != step.message) continue;
    if (step.sequence != 0 && got.stream_sequence != step.sequence) continue;
    target = got.msg;
  }
  if (target == nullptr) {
    throw std::runtime_error(step.pointer + ": " + step.subject + " got no delivery of " +
                             step.message);
  }
  // With a Wait, nats.c sends every kind of reply as a request and waits for the server's.
  jsOptions options;
  jsOptions_Init(&options);
  options.Wait = kRequestWaitMs;
  jsErrCode code = static_cast<jsErrCode>(0);
  natsStatus status = NATS_OK;
  switch (step.op) {
    case JsOp::ack: status = natsMsg_AckSync(target, &options, &code); break;
    case JsOp::nak:
      status = step.delay_ms > 0 ? natsMsg_NakWithDelay(target, step.delay_ms, &options)
                                 : natsMsg_Nak(target, &options);
      break;
    case JsOp::term: status = natsMsg_Term(target, &options); break;
    case JsOp::in_progress: status = natsMsg_InProgress(target, &options); break;
    default: throw std::logic_error("not a reply");
  }
  check_js(status, code, step.pointer + ": " + js_op_name(step.op));
}

void NatsDriver::info(const JsStep& step, std::vector<std::string>& observed) {
  const std::string stream = real_stream(step.subject);
  jsConsumerInfo* info = nullptr;
  jsErrCode code = static_cast<jsErrCode>(0);
  check_js(
      js_GetConsumerInfo(&info, admin_->js, stream.c_str(), step.subject.c_str(), nullptr, &code),
      code, step.pointer + ": consumer info");
  observed.push_back(step.subject + ": ack_pending=" + std::to_string(info->NumAckPending) +
                     " pending=" + std::to_string(info->NumPending));
  jsConsumerInfo_Destroy(info);
}

// The process dies: its socket closes. A durable pull consumer keeps the deliveries pending.
void NatsDriver::kill(const JsStep& step) { client(step).close(); }

void NatsDriver::read_advisories(size_t wanted, bool may_come, std::vector<std::string>& observed) {
  auto* subscription = static_cast<natsSubscription*>(advisories_);
  const auto start = std::chrono::steady_clock::now();
  size_t got = 0;
  while (true) {
    int64_t timeout = got < wanted ? kAdvisoryWaitMs - elapsed_ms(start)
                                   : (may_come || wanted > 0 ? kAdvisoryGraceMs : 0);
    if (timeout <= 0) timeout = 1;
    natsMsg* msg = nullptr;
    const natsStatus status = natsSubscription_NextMsg(&msg, subscription, timeout);
    if (status == NATS_TIMEOUT) {
      if (got >= wanted || elapsed_ms(start) >= kAdvisoryWaitMs) return;
      continue;
    }
    check(status, "read advisories");
    const std::string subject = natsMsg_GetSubject(msg);
    const std::string body(natsMsg_GetData(msg), static_cast<size_t>(natsMsg_GetDataLength(msg)));
    natsMsg_Destroy(msg);
    // $JS.EVENT.ADVISORY.CONSUMER.<kind>.<stream>.<consumer>
    std::vector<std::string> tokens;
    for (size_t from = 0, dot = 0; dot != std::string::npos; from = dot + 1) {
      dot = subject.find('.', from);
      tokens.push_back(subject.substr(from, dot == std::string::npos ? dot : dot - from));
    }
    if (tokens.size() != 7 || !tokens[5].starts_with(prefix_ + "_")) continue;
    const char* kind = advisory_kind(tokens[4]);
    if (kind == nullptr) continue;
    const nlohmann::json advisory = nlohmann::json::parse(body);
    const auto sequence = advisory.at("stream_seq").get<uint64_t>();
    const auto found = names_.find({tokens[5], sequence});
    observed.push_back(std::string("advisory: ") + kind + " " +
                       (found == names_.end() ? "seq" + std::to_string(sequence) : found->second) +
                       " deliveries=" + std::to_string(advisory.at("deliveries").get<int64_t>()));
    ++got;
  }
}

NatsDriver::Client& NatsDriver::client(const JsStep& step) {
  const auto found = clients_.find(step.subject);
  if (found == clients_.end() || !found->second) {
    throw std::runtime_error(step.pointer + ": no client " + step.subject);
  }
  if (!found->second->connection) {
    throw std::runtime_error(step.pointer + ": " + step.subject + " is not connected");
  }
  return *found->second;
}

}  // namespace inboxsim::conformance
