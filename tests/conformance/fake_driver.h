// The fake broker (src/broker/rabbitmq/broker.h) behind the driver interface: each operation
// becomes the Broker call the World makes for it, and each Delivery an observation line.
//
// What the Broker leaves to the World, the driver does the World's way, and says where:
// publisher confirms (World::publish_and_confirm confirms every publish the broker took, and a
// publish_nack fault refuses one without routing it), heartbeats (World::pause closes a
// connection silent for longer than the heartbeat timeout), and the consumers' connections.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "broker/rabbitmq/broker.h"
#include "driver.h"

namespace inboxsim::conformance {

class FakeDriver final : public Driver {
 public:
  explicit FakeDriver(const BrokerSettings& settings);

  std::vector<std::string> run(const Step& step, const std::vector<std::string>* expected) override;
  std::vector<std::string> drain() override;

 private:
  struct Consumer {
    size_t index = 0;                            // the Broker's consumer
    int64_t heartbeat_ms = 0;                    // 0: no heartbeats
    int64_t opened_ms = 0;                       // when its connection opened (the fake's clock)
    std::map<int64_t, uint64_t> channel_of_tag;  // unacked deliveries of the open channel
  };

  void declare(const Step& step);
  void consume(const Step& step);
  void publish(const Step& step, std::vector<std::string>& observed);
  void settle(const Step& step);
  void pause(const Step& step, std::vector<std::string>& observed);
  void inspect(const Step& step, std::vector<std::string>& observed) const;
  void redrive(const Step& step);
  void close(const std::string& consumer);
  // Dispatches what the Broker can and appends the deliveries as observations.
  void pump(std::vector<std::string>& observed);
  Consumer& consumer(const Step& step);
  size_t queue(const std::string& name, const Step& step) const;

  Broker broker_;
  int64_t consumer_timeout_ms_ = 0;  // 0: none
  // broker.sh's channel_tick_interval for the test node (RabbitMQ's default is 60000).
  static constexpr int64_t kChannelTickMs = 1000;
  std::map<std::string, size_t> queues_;
  std::map<std::string, Consumer> consumers_;
  std::vector<std::string> consumer_names_;  // by Broker consumer index
  int64_t now_ms_ = 0;
};

}  // namespace inboxsim::conformance
