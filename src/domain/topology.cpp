#include "domain/topology.h"

#include "domain/config.h"

namespace inboxsim {

std::vector<const QueueSpec*> declared_queues(const Config& config) {
  std::vector<const QueueSpec*> queues;
  for (const QueueSpec& queue : kQueues) {
    if (!queue.needs_notifications || config.transfer_notifications) queues.push_back(&queue);
  }
  return queues;
}

std::string dead_letter_queue_name(std::string_view queue) { return std::string(queue) + ".dlq"; }

std::string error_queue_name(std::string_view queue) { return std::string(queue) + "_error"; }

std::vector<std::string> redrivable_queues(const Config& config) {
  std::vector<std::string> names;
  const std::vector<const QueueSpec*> queues = declared_queues(config);
  for (const QueueSpec* queue : queues) {
    if (queue->error_queue) names.push_back(error_queue_name(queue->name));
  }
  // JetStream has no dead-letter queues (docs/model.md, "JetStream").
  if (config.broker_kind == BrokerKind::jetstream) return names;
  for (const QueueSpec* queue : queues) names.push_back(dead_letter_queue_name(queue->name));
  return names;
}

}  // namespace inboxsim
