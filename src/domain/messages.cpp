#include "domain/messages.h"

#include <algorithm>

#include "kernel/assert.h"

namespace inboxsim {

namespace {
struct TypeNames {
  std::string_view name;
  std::string_view routing_key;
};
constexpr std::array<TypeNames, kMessageTypeCount> kNames = {{
    {"Transfer.Requested", "transfers.transfer.requested"},
    {"Transfer.CreditRequested", "transfers.credit.requested"},
    {"Transfer.RefundRequested", "transfers.refund.requested"},
    {"Account.Debited", "accounts.account.debited"},
    {"Account.DebitRejected", "accounts.debit.rejected"},
    {"Account.Credited", "accounts.account.credited"},
    {"Account.CreditRejected", "accounts.credit.rejected"},
    {"Account.Refunded", "accounts.account.refunded"},
}};
// The count names the last type, and every type has a name and a routing key (std::array would
// pad a short list with empty ones).
static_assert(static_cast<size_t>(MessageType::account_refunded) + 1 == kMessageTypeCount);
static_assert(std::none_of(kNames.begin(), kNames.end(), [](const TypeNames& names) {
  return names.name.empty() || names.routing_key.empty();
}));
}  // namespace

std::string_view message_type_name(MessageType type) {
  const auto index = static_cast<size_t>(type);
  INBOXSIM_ASSERT(index < kMessageTypeCount);
  return kNames[index].name;
}

std::string_view routing_key(MessageType type) {
  const auto index = static_cast<size_t>(type);
  INBOXSIM_ASSERT(index < kMessageTypeCount);
  return kNames[index].routing_key;
}

std::optional<MessageType> parse_message_type(std::string_view name) {
  for (size_t i = 0; i < kMessageTypeCount; ++i) {
    if (kNames[i].name == name) return static_cast<MessageType>(i);
  }
  return std::nullopt;
}

}  // namespace inboxsim
