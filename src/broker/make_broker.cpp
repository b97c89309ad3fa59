// The one place that turns broker.kind into a broker.
#include <memory>
#include <utility>

#include "broker/jetstream/jetstream_broker.h"
#include "broker/message_broker.h"
#include "broker/rabbitmq/broker.h"
#include "domain/config.h"

namespace inboxsim {

std::unique_ptr<MessageBroker> make_broker(const Config& config,
                                           std::function<void(TraceEvent)> record) {
  if (config.broker_kind == BrokerKind::jetstream) {
    JetStreamWorldConfig settings;
    settings.prefetch = config.broker_prefetch;
    settings.ack_wait_ms = config.broker_ack_wait_ms;
    settings.max_deliver = config.broker_max_deliver;
    settings.dedupe_window_ms = config.broker_dedupe_window_ms;
    settings.nak_delay_ms = config.consumer_nak_delay_ms;
    return std::make_unique<JetStreamBroker>(std::move(record), settings);
  }
  return std::make_unique<Broker>(std::move(record), config.broker_prefetch,
                                  config.broker_delivery_limit,
                                  config.broker_queue_type == QueueType::quorum,
                                  config.broker_dead_letter == DeadLetter::dlx);
}

}  // namespace inboxsim
