// A message as it travels through the broker: the envelope of docs/contract.md §1 (messageId, type,
// transferId, occurredAt, payload) plus the AMQP message-id property, which relays set to the
// envelope's messageId. Messages are immutable once published and shared between the queues
// they were routed to.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "domain/messages.h"

namespace inboxsim {

struct Message {
  std::string message_id;  // envelope messageId == AMQP message-id property
  MessageType type = MessageType::transfer_requested;
  std::string transfer;
  std::string from;
  std::string to;
  int64_t amount = 0;
  std::string reason;  // for the *Rejected types
  int64_t occurred_at_ms = 0;
};

using MessagePtr = std::shared_ptr<const Message>;

// Returns the envelope as a JSON text, as a publisher would put it in the body.
std::string envelope_json(const Message& message);

// Feeds every field of a message to a fingerprint (the explorer's state identity).
template <typename Hasher>
void fingerprint_message(Hasher& hasher, const Message& message) {
  hasher.add(message.message_id).add(static_cast<uint64_t>(message.type)).add(message.transfer);
  hasher.add(message.from).add(message.to).add_signed(message.amount).add(message.reason);
  hasher.add_signed(message.occurred_at_ms);
}

}  // namespace inboxsim
