#include "domain/message.h"

#include <nlohmann/json.hpp>

namespace inboxsim {

std::string envelope_json(const Message& message) {
  nlohmann::ordered_json envelope;
  envelope["messageId"] = message.message_id;
  envelope["type"] = message_type_name(message.type);
  envelope["transferId"] = message.transfer;
  envelope["occurredAt"] = message.occurred_at_ms;
  nlohmann::ordered_json payload;
  payload["from"] = message.from;
  payload["to"] = message.to;
  payload["amount"] = message.amount;
  if (!message.reason.empty()) payload["reason"] = message.reason;
  envelope["payload"] = std::move(payload);
  return envelope.dump();
}

}  // namespace inboxsim
