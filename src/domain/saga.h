// The transfer saga (docs/contract.md §1): its states and its graph, the one place that says
// which event moves a transfer from which state to which and what it then sends.
// transfer-service runs the graph, the checker judges each transition against it, and the
// narrator reads it to say what a change sends.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "domain/messages.h"

namespace inboxsim {

enum class SagaState : uint8_t { requested, debited, completed, rejected, compensating, failed };
inline constexpr size_t kSagaStateCount = 6;
std::string_view saga_state_name(SagaState state);
std::optional<SagaState> parse_saga_state(std::string_view name);
constexpr bool is_terminal(SagaState state) {
  return state == SagaState::completed || state == SagaState::rejected ||
         state == SagaState::failed;
}

// One edge of the saga: in `from`, the event `on` leads to `to`, and the saga then sends `emit`
// (in the same transaction, through its outbox).
struct SagaEdge {
  SagaState from;
  MessageType on;
  SagaState to;
  std::optional<MessageType> emit;
};

inline constexpr std::array<SagaEdge, 5> kSagaEdges = {{
    {SagaState::requested, MessageType::account_debited, SagaState::debited,
     MessageType::credit_requested},
    {SagaState::requested, MessageType::debit_rejected, SagaState::rejected, std::nullopt},
    {SagaState::debited, MessageType::account_credited, SagaState::completed, std::nullopt},
    {SagaState::debited, MessageType::credit_rejected, SagaState::compensating,
     MessageType::refund_requested},
    {SagaState::compensating, MessageType::account_refunded, SagaState::failed, std::nullopt},
}};

// The edge `on` takes from `from`, or null: the state machine refuses the event.
constexpr const SagaEdge* find_saga_edge(SagaState from, MessageType on) {
  for (const SagaEdge& edge : kSagaEdges) {
    if (edge.from == from && edge.on == on) return &edge;
  }
  return nullptr;
}

// The edge an event takes from its proper source state, or null for a type the saga does not
// consume (without the state machine, the event is applied whatever the state).
constexpr const SagaEdge* saga_edge_for_event(MessageType on) {
  for (const SagaEdge& edge : kSagaEdges) {
    if (edge.on == on) return &edge;
  }
  return nullptr;
}

// Whether the graph has the transition: a saga starts REQUESTED (no `from`), then follows edges.
constexpr bool is_legal_transition(std::optional<SagaState> from, SagaState to) {
  if (!from) return to == SagaState::requested;
  for (const SagaEdge& edge : kSagaEdges) {
    if (edge.from == *from && edge.to == to) return true;
  }
  return false;
}

// What the saga sends when it enters `to`, if anything.
constexpr std::optional<MessageType> saga_sends_entering(SagaState to) {
  for (const SagaEdge& edge : kSagaEdges) {
    if (edge.to == to) return edge.emit;
  }
  return std::nullopt;
}

}  // namespace inboxsim
