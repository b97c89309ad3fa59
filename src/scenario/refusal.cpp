// What needs no World of scenario/runner.h: a step in words, and why a story cannot run
// without a clock. The parser uses both (its fuzz target links this file, not the runner).
#include <string>

#include "kernel/assert.h"
#include "scenario/runner.h"

namespace inboxsim {

std::string describe_step(const Step& step) {
  switch (step.kind) {
    case StepKind::transfer:
      return "transfer " + step.transfer.id + ": " + step.transfer.from + " -> " +
             step.transfer.to + " " + std::to_string(step.transfer.amount);
    case StepKind::fault: return "fault armed: " + describe_fault(step.fault);
    case StepKind::run:
      return step.until_quiescent ? std::string("run until quiescent")
                                  : "run for " + std::to_string(step.ms) + " ms";
    case StepKind::advance: return "advance " + std::to_string(step.ms) + " ms";
    case StepKind::drop_index: return "drop index " + std::string(index_name(step.index));
    case StepKind::redrive:
      return step.queue == "all" ? "redrive every error and dead-letter queue (an operator "
                                   "replays them)"
                                 : "redrive " + step.queue + " (an operator replays it)";
    case StepKind::publish:
      return "publish by hand: " + std::string(message_type_name(step.message.type)) + " " +
             step.message.transfer + " (" + step.message.message_id + ") to " +
             (step.exchange.empty() ? std::string("the default exchange") : step.exchange) +
             ", routing key " + step.routing_key;
    case StepKind::restore_index: return "restore index " + std::string(index_name(step.index));
  }
  INBOXSIM_ASSERT(false);
}

std::optional<Refusal> broker_refusal(const Scenario& scenario) {
  if (const std::optional<KeyRefusal> key = broker_key_refusal(scenario.config)) {
    return Refusal{"/config/" + key->key, key->expected};
  }
  if (scenario.config.broker_kind != BrokerKind::jetstream) return std::nullopt;
  for (size_t index = 0; index < scenario.steps.size(); ++index) {
    const Step& step = scenario.steps[index];
    if (step.kind == StepKind::publish && step.exchange.empty()) {
      return Refusal{"/steps/" + std::to_string(index) + "/publish/exchange",
                     "\"banking.events\" on broker.kind = jetstream: JetStream has no default "
                     "exchange; a publish goes to the subject its routing key names"};
    }
  }
  return std::nullopt;
}

std::optional<Refusal> clockless_refusal(const Scenario& scenario) {
  for (size_t index = 0; index < scenario.steps.size(); ++index) {
    const Step& step = scenario.steps[index];
    const std::string where = "/steps/" + std::to_string(index);
    if (step.kind == StepKind::advance || (step.kind == StepKind::run && !step.until_quiescent)) {
      return Refusal{where, "no timed step (" + describe_step(step) +
                                "): an explored order has no clock; use {\"run\": {\"until\": "
                                "\"quiescent\"}}"};
    }
    if (step.kind == StepKind::fault && !explorable_fault_kind(step.fault.kind)) {
      return Refusal{where + "/fault/kind", "no `" + std::string(fault_kind_name(step.fault.kind)) +
                                                "` fault: an explored order has no clock"};
    }
  }
  if (scenario.config.work_ms_max > 0) {
    return Refusal{"/config/consumer.work_ms",
                   "0..0: an explored order has no clock (every step of a handler is an event "
                   "of its own already)"};
  }
  return std::nullopt;
}

}  // namespace inboxsim
