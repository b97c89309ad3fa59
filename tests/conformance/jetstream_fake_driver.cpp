#include "jetstream_fake_driver.h"

#include <memory>
#include <stdexcept>

#include "domain/message.h"

namespace inboxsim::conformance {

std::vector<std::string> JsFakeDriver::run(const JsStep& step, const std::vector<std::string>*) {
  ++now_ms_;
  std::vector<std::string> observed;
  switch (step.op) {
    case JsOp::stream: add_stream(step); break;
    case JsOp::subscribe: subscribe(step); break;
    case JsOp::publish: publish(step, observed); break;
    case JsOp::fetch: fetch(step, observed); break;
    case JsOp::ack:
    case JsOp::nak:
    case JsOp::term:
    case JsOp::in_progress: reply(step); break;
    case JsOp::wait: now_ms_ += step.wait_ms; break;
    case JsOp::info: info(step, observed); break;
    case JsOp::kill: client(step).connected = false; break;
    case JsOp::reconnect:
      if (client(step).connected) throw std::runtime_error(step.pointer + ": still connected");
      client(step).connected = true;
      break;
  }
  js_.advance(now_ms_);
  advisories(observed);
  return observed;
}

void JsFakeDriver::add_stream(const JsStep& step) {
  std::string error;
  const std::optional<size_t> stream =
      js_.add_stream({step.subject, step.subjects, settings_.duplicates_ms}, error);
  if (!stream) throw std::runtime_error(step.pointer + ": " + error);
  JetStreamConsumerConfig config;
  config.durable = step.subject;
  config.ack_wait_ms = settings_.ack_wait_ms;
  config.max_deliver = settings_.max_deliver;
  config.max_ack_pending = settings_.max_ack_pending;
  if (!js_.add_consumer(*stream, config, error)) {
    throw std::runtime_error(step.pointer + ": " + error);
  }
}

void JsFakeDriver::subscribe(const JsStep& step) {
  if (clients_.count(step.subject) != 0) {
    throw std::runtime_error(step.pointer + ": client " + step.subject + " exists already");
  }
  const std::optional<size_t> stream = js_.find_stream(step.stream);
  if (!stream) throw std::runtime_error(step.pointer + ": no stream " + step.stream);
  clients_[step.subject].consumer = *js_.find_consumer(*stream, step.stream);
}

void JsFakeDriver::publish(const JsStep& step, std::vector<std::string>& observed) {
  auto message = std::make_shared<Message>();
  message->message_id = step.subject;
  const std::optional<JetStreamPubAck> ack =
      js_.publish(step.nats_subject, message, step.subject, now_ms_);
  if (!ack) throw std::runtime_error(step.pointer + ": no stream has " + step.nats_subject);
  if (!ack->duplicate) names_[{ack->stream, ack->sequence}] = step.subject;
  observed.push_back("publisher: " + step.subject + " seq=" + std::to_string(ack->sequence) +
                     (ack->duplicate ? " duplicate" : ""));
}

void JsFakeDriver::fetch(const JsStep& step, std::vector<std::string>& observed) {
  Client& fetching = client(step);
  const std::vector<JetStreamDelivery> got = js_.fetch(fetching.consumer, step.batch, now_ms_);
  for (const JetStreamDelivery& delivery : got) {
    observed.push_back(step.subject + ": " + delivery.message->message_id +
                       " stream=" + std::to_string(delivery.stream_sequence) +
                       " consumer=" + std::to_string(delivery.consumer_sequence) +
                       " delivered=" + std::to_string(delivery.delivery_count));
    fetching.deliveries.push_back(delivery);
  }
  if (got.empty()) observed.push_back(step.subject + ": no messages");
  // nats-server keeps a no-wait request until it expires when it delivered nothing, or when
  // MaxAckPending stopped it (consumer.go, loopAndGatherMsgs: "Dont expire oneshots if we are
  // here because of max ack pending limit").
  const bool at_limit = js_.info(fetching.consumer).num_ack_pending >= settings_.max_ack_pending;
  if (static_cast<int64_t>(got.size()) < step.batch && (got.empty() || at_limit)) {
    now_ms_ += kFetchExpiresMs;
  }
}

void JsFakeDriver::reply(const JsStep& step) {
  Client& replying = client(step);
  const JetStreamDelivery* target = nullptr;
  for (const JetStreamDelivery& delivery : replying.deliveries) {
    if (delivery.message->message_id != step.message) continue;
    if (step.sequence != 0 && delivery.stream_sequence != step.sequence) continue;
    target = &delivery;
  }
  if (target == nullptr) {
    throw std::runtime_error(step.pointer + ": " + step.subject + " got no delivery of " +
                             step.message);
  }
  switch (step.op) {
    case JsOp::ack: js_.ack(*target, now_ms_); break;
    case JsOp::nak: js_.nak(*target, step.delay_ms, now_ms_); break;
    case JsOp::term: js_.term(*target, now_ms_); break;
    case JsOp::in_progress: js_.in_progress(*target, now_ms_); break;
    default: throw std::logic_error("not a reply");
  }
}

void JsFakeDriver::info(const JsStep& step, std::vector<std::string>& observed) const {
  const std::optional<size_t> stream = js_.find_stream(step.subject);
  if (!stream) throw std::runtime_error(step.pointer + ": no stream " + step.subject);
  const JetStreamConsumerInfo info = js_.info(*js_.find_consumer(*stream, step.subject));
  observed.push_back(step.subject + ": ack_pending=" + std::to_string(info.num_ack_pending) +
                     " pending=" + std::to_string(info.num_pending));
}

void JsFakeDriver::advisories(std::vector<std::string>& observed) {
  for (const JetStreamAdvisory& advisory : js_.take_advisories()) {
    const size_t stream = js_.consumer_stream(advisory.consumer);
    observed.push_back("advisory: " + std::string(name_of(advisory.kind)) + " " +
                       names_.at({stream, advisory.stream_sequence}) +
                       " deliveries=" + std::to_string(advisory.deliveries));
  }
}

JsFakeDriver::Client& JsFakeDriver::client(const JsStep& step) {
  const auto found = clients_.find(step.subject);
  if (found == clients_.end())
    throw std::runtime_error(step.pointer + ": no client " + step.subject);
  if (!found->second.connected && step.op != JsOp::reconnect) {
    throw std::runtime_error(step.pointer + ": " + step.subject + " is not connected");
  }
  return found->second;
}

}  // namespace inboxsim::conformance
