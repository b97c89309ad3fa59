// The message types of the bank (docs/contract.md §1, contract): names, routing keys, and who consumes
// them. Types are an enum inside the simulation; their names appear only at the edges (traces,
// scenario files, JSON output).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace inboxsim {

enum class MessageType : uint8_t {
  transfer_requested,
  credit_requested,
  refund_requested,
  account_debited,
  debit_rejected,
  account_credited,
  credit_rejected,
  account_refunded,
};

inline constexpr size_t kMessageTypeCount = 8;

inline constexpr std::array<MessageType, kMessageTypeCount> kAllMessageTypes = {
    MessageType::transfer_requested, MessageType::credit_requested, MessageType::refund_requested,
    MessageType::account_debited,    MessageType::debit_rejected,   MessageType::account_credited,
    MessageType::credit_rejected,    MessageType::account_refunded};

// Returns the contract name, e.g. "Transfer.Requested".
std::string_view message_type_name(MessageType type);

// Returns the routing key, e.g. "transfers.transfer.requested".
std::string_view routing_key(MessageType type);

// Returns the type with this contract name, if any.
std::optional<MessageType> parse_message_type(std::string_view name);

// True for the types transfer-service publishes (consumed by account-service).
inline bool is_transfer_command(MessageType type) {
  return type == MessageType::transfer_requested || type == MessageType::credit_requested ||
         type == MessageType::refund_requested;
}

}  // namespace inboxsim
