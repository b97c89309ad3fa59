// A real RabbitMQ behind the driver interface, through rabbitmq-c (Debian's librabbitmq).
//
// Every client of a script has its own AMQP connection, as the simulator's instances do: one
// per consumer (channel 1, manual acks, basic.qos with the script's prefetch), one publisher
// (a confirm channel) and one for the operator (declarations, inspect, redrive). Names are
// prefixed with the script's name, so scripts can run at once against one broker; observations
// use the names of the script.
//
// RabbitMQ answers asynchronously: after each operation the driver reads every connection
// until the observations it was told to expect have arrived and then stays quiet for a while
// longer (to catch anything unexpected), or until a deadline passes. What it reports is only
// what arrived; the expectation just ends the wait early.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "driver.h"

namespace inboxsim::conformance {

struct Endpoint {
  std::string host = "127.0.0.1";
  int port = 5672;
};

class RabbitmqDriver final : public Driver {
 public:
  // Connects the publisher and the operator. Throws std::runtime_error when the broker cannot
  // be reached. `recording`: no expectations are given, so each step waits for quiet.
  RabbitmqDriver(const Endpoint& endpoint, const BrokerSettings& settings, std::string prefix,
                 bool recording);
  // Deletes the script's queues and exchange and closes every connection.
  ~RabbitmqDriver() override;

  RabbitmqDriver(const RabbitmqDriver&) = delete;
  RabbitmqDriver& operator=(const RabbitmqDriver&) = delete;

  std::vector<std::string> run(const Step& step, const std::vector<std::string>* expected) override;
  std::vector<std::string> drain() override;

 private:
  class Connection;
  struct Consumer {
    std::unique_ptr<Connection> connection;
    std::string queue;
    int64_t heartbeat_s = 0;
  };

  void declare(const Step& step);
  void consume(const Step& step);
  void start_consuming(const std::string& name, Consumer& consumer);
  void publish(const Step& step, std::vector<std::string>& observed);
  void settle(const Step& step);
  void close(const Step& step);
  void reconnect(const Step& step);
  void pause(const Step& step, std::vector<std::string>& observed);
  void redrive(const Step& step);
  // The messages waiting in a queue, as inspect observations, without taking them away.
  std::vector<std::string> list_queue(const std::string& name);
  // Reads every connection until `observed` (plus a fresh listing of `inspected`, if any)
  // matches `expected` and a quiet period has passed, or until the deadline.
  void wait(std::vector<std::string>& observed, const std::vector<std::string>* expected,
            const std::string& inspected);
  // Reads what has arrived on every open connection (but the skipped consumer's); returns true
  // if anything did.
  bool poll(std::vector<std::string>& observed, const std::string& skipped_consumer);
  bool poll_confirms(std::vector<std::string>& observed);
  bool poll_consumer(const std::string& name, Connection& connection,
                     std::vector<std::string>& observed);
  Consumer& consumer(const Step& step);
  std::string full_name(const std::string& name) const { return prefix_ + name; }

  Endpoint endpoint_;
  BrokerSettings settings_;
  std::string prefix_;
  bool recording_;
  std::unique_ptr<Connection> operator_;
  std::unique_ptr<Connection> publisher_;
  std::map<uint64_t, std::string> unconfirmed_;  // publish sequence number -> message id
  uint64_t next_publish_sequence_ = 1;
  std::map<std::string, Consumer> consumers_;
  std::vector<std::string> queues_;  // declared, with their dead-letter queues
};

}  // namespace inboxsim::conformance
