#include "fake_driver.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "domain/config.h"
#include "domain/message.h"

namespace inboxsim::conformance {

namespace {

// The simulator's messages carry their routing key in their type; a script names the key.
MessageType type_of_key(const std::string& key, const Step& step) {
  for (const MessageType type : kAllMessageTypes) {
    if (routing_key(type) == key) return type;
  }
  throw std::runtime_error(step.pointer + "/key: \"" + key +
                           "\" is no routing key of the simulator's messages");
}

int64_t delivery_limit_of(const BrokerSettings& settings) {
  // A quorum queue without x-delivery-limit: the simulator has no such thing and uses its
  // default, broker.delivery_limit (RabbitMQ 4.0's default of 20).
  return settings.delivery_limit.value_or(Config{}.broker_delivery_limit);
}

std::string delivery_line(const std::string& consumer, const Delivery& delivery) {
  std::string line = consumer + ": " + delivery.message->message_id +
                     " tag=" + std::to_string(delivery.delivery_tag);
  if (delivery.redelivered) line += " redelivered";
  // The Broker's count 0 is RabbitMQ's absent header: a quorum queue adds x-delivery-count
  // only once a message has been returned, a classic queue never.
  if (delivery.delivery_count > 0) line += " count=" + std::to_string(delivery.delivery_count);
  return line;
}

}  // namespace

FakeDriver::FakeDriver(const BrokerSettings& settings)
    : broker_([](TraceEvent) {}, settings.prefetch, delivery_limit_of(settings), settings.quorum,
              settings.dead_letter),
      consumer_timeout_ms_(settings.consumer_timeout_ms) {}

std::vector<std::string> FakeDriver::run(const Step& step, const std::vector<std::string>*) {
  ++now_ms_;
  std::vector<std::string> observed;
  switch (step.op) {
    case Op::declare: declare(step); break;
    case Op::consume: consume(step); break;
    case Op::publish: publish(step, observed); break;
    case Op::ack:
    case Op::nack:
    case Op::reject: settle(step); break;
    case Op::close:
    case Op::kill: close(step.subject); break;
    case Op::reconnect:
      consumer(step).opened_ms = now_ms_;
      broker_.open_connection(consumer(step).index, now_ms_);
      break;
    case Op::pause: pause(step, observed); break;
    case Op::inspect: inspect(step, observed); break;
    case Op::redrive: redrive(step); break;
  }
  pump(observed);
  return observed;
}

std::vector<std::string> FakeDriver::drain() {
  std::vector<std::string> observed;
  pump(observed);
  return observed;
}

void FakeDriver::declare(const Step& step) {
  if (queues_.count(step.subject) != 0) {
    throw std::runtime_error(step.pointer + ": queue " + step.subject + " is declared twice");
  }
  queues_[step.subject] = broker_.declare_queue(step.subject, step.bindings);
}

void FakeDriver::consume(const Step& step) {
  if (consumers_.count(step.subject) != 0) {
    throw std::runtime_error(step.pointer + ": consumer " + step.subject + " exists already");
  }
  Consumer added;
  added.index = broker_.add_consumer(step.subject, queue(step.queue, step));
  added.heartbeat_ms = step.heartbeat_s * 1000;
  added.opened_ms = now_ms_;
  consumer_names_.push_back(step.subject);
  consumers_[step.subject] = added;
}

// The World's publisher: a publish the broker takes is confirmed, one refused by the
// publish_nack fault is not routed at all, and a confirm is lost only with its channel.
void FakeDriver::publish(const Step& step, std::vector<std::string>& observed) {
  if (step.fake_publish_nack) {
    observed.push_back("publisher: " + step.subject + " nack");
    return;
  }
  auto message = std::make_shared<Message>();
  message->message_id = step.subject;
  message->type = type_of_key(step.routing_key, step);
  broker_.publish(message);
  observed.push_back("publisher: " + step.subject +
                     (step.close_before_confirm ? " unconfirmed (channel closed)" : " ack"));
}

void FakeDriver::settle(const Step& step) {
  Consumer& settling = consumer(step);
  const auto found = settling.channel_of_tag.find(step.tag);
  if (found == settling.channel_of_tag.end()) {
    throw std::runtime_error(step.pointer + ": " + step.subject + " holds no delivery tag " +
                             std::to_string(step.tag));
  }
  const uint64_t channel = found->second;
  settling.channel_of_tag.erase(found);
  std::optional<Delivery> settled;
  if (step.op == Op::ack) {
    settled = broker_.ack(settling.index, channel, step.tag);
  } else if (step.requeue) {
    settled = broker_.nack(settling.index, channel, step.tag, now_ms_);
  } else {
    settled = broker_.reject(settling.index, channel, step.tag, now_ms_);
  }
  if (!settled) {
    throw std::runtime_error(step.pointer + ": the channel of tag " + std::to_string(step.tag) +
                             " is closed");
  }
}

// World::pause and World::heartbeat_close_ms: the broker checks for data every heartbeat
// interval from the connection's opening and closes it at the second check in a row that saw
// nothing; then it requeues its unacked deliveries. The fake's clock moves by the pause, and a
// consumer timeout due meanwhile closes its channel (World::consumer_timeout_due).
void FakeDriver::pause(const Step& step, std::vector<std::string>& observed) {
  const Consumer& paused = consumer(step);
  const int64_t start = now_ms_;
  now_ms_ += step.pause_ms;
  if (paused.heartbeat_ms > 0) {
    const int64_t interval = paused.heartbeat_ms;
    const int64_t checks =
        std::max<int64_t>(1, (start - paused.opened_ms + interval - 1) / interval);
    if (paused.opened_ms + (checks + 2) * interval < now_ms_) {
      close(step.subject);
      observed.push_back(step.subject + ": connection lost");
    }
  }
  while (consumer_timeout_ms_ > 0) {
    const auto due = broker_.next_consumer_timeout(consumer_timeout_ms_, kChannelTickMs);
    if (!due || due->at_ms > now_ms_) break;
    const std::string& name = consumer_names_.at(due->consumer);
    close(name);
    observed.push_back(name + ": channel closed PRECONDITION_FAILED");
  }
}

void FakeDriver::inspect(const Step& step, std::vector<std::string>& observed) const {
  queue(step.subject, step);
  size_t waiting = 0;
  for (const ParkedMessage& parked : broker_.parked()) {
    if (parked.queue != step.subject) continue;
    ++waiting;
    observed.push_back(step.subject + ": " + parked.message->message_id + " (" + parked.reason +
                       ")");
  }
  if (waiting == 0) observed.push_back(step.subject + ": empty");
}

void FakeDriver::redrive(const Step& step) { broker_.redrive(queue(step.subject, step)); }

void FakeDriver::close(const std::string& name) {
  Consumer& closing = consumers_.at(name);
  broker_.close_connection(closing.index, now_ms_, "connection closed");
  closing.channel_of_tag.clear();
}

void FakeDriver::pump(std::vector<std::string>& observed) {
  std::vector<Delivery> deliveries;
  broker_.pump(deliveries, now_ms_);
  for (const Delivery& delivery : deliveries) {
    const std::string& name = consumer_names_.at(delivery.consumer);
    consumers_.at(name).channel_of_tag[delivery.delivery_tag] = delivery.channel;
    observed.push_back(delivery_line(name, delivery));
  }
}

FakeDriver::Consumer& FakeDriver::consumer(const Step& step) {
  const auto found = consumers_.find(step.subject);
  if (found == consumers_.end()) {
    throw std::runtime_error(step.pointer + ": no consumer " + step.subject);
  }
  return found->second;
}

size_t FakeDriver::queue(const std::string& name, const Step& step) const {
  const std::optional<size_t> found = broker_.find_queue(name);
  if (!found) throw std::runtime_error(step.pointer + ": no queue " + name);
  return *found;
}

}  // namespace inboxsim::conformance
