// The transfer saga against every event in every state (docs/contract.md §1), written out here
// as the contract states it, independently of the graph in domain/saga.h, and run through
// transfer-service's real handler and SQL.
#include <catch2/catch.hpp>

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "domain/saga.h"
#include "services/transfer_service.h"
#include "support/fake_host.h"

using namespace inboxsim;
using inboxsim::testing::FakeHost;
using inboxsim::testing::make_service;
using inboxsim::testing::run;

namespace {

// The events the saga consumes.
constexpr std::array<MessageType, 5> kSagaEvents = {
    MessageType::account_debited, MessageType::debit_rejected, MessageType::account_credited,
    MessageType::credit_rejected, MessageType::account_refunded};

// The events that take a new saga to each state.
const std::map<SagaState, std::vector<MessageType>> kPathTo = {
    {SagaState::requested, {}},
    {SagaState::debited, {MessageType::account_debited}},
    {SagaState::completed, {MessageType::account_debited, MessageType::account_credited}},
    {SagaState::rejected, {MessageType::debit_rejected}},
    {SagaState::compensating, {MessageType::account_debited, MessageType::credit_rejected}},
    {SagaState::failed,
     {MessageType::account_debited, MessageType::credit_rejected, MessageType::account_refunded}},
};

struct Expected {
  SagaState to;
  std::optional<MessageType> sends;
};

// The contract's table: in this state, this event leads there and sends that; every pair not
// listed is refused (logged and acked, the state unchanged).
std::optional<Expected> contract(SagaState from, MessageType on) {
  using S = SagaState;
  using M = MessageType;
  if (from == S::requested && on == M::account_debited) return Expected{S::debited, M::credit_requested};
  if (from == S::requested && on == M::debit_rejected) return Expected{S::rejected, std::nullopt};
  if (from == S::debited && on == M::account_credited) return Expected{S::completed, std::nullopt};
  if (from == S::debited && on == M::credit_rejected) return Expected{S::compensating, M::refund_requested};
  if (from == S::compensating && on == M::account_refunded) return Expected{S::failed, std::nullopt};
  return std::nullopt;
}

// The same event, had it arrived in its proper state: what it does without the state machine.
Expected proper(MessageType on) {
  for (const SagaState from : {SagaState::requested, SagaState::debited, SagaState::compensating}) {
    if (auto found = contract(from, on)) return *found;
  }
  FAIL("the saga does not consume " << message_type_name(on));
  return {};
}

struct Saga {
  FakeHost host;
  Config config;  // the service keeps a reference to its config, so the saga owns it
  TransferService service;
  int next = 2;

  explicit Saga(Config given)
      : config(std::move(given)), service(make_service<TransferService>(host, config)) {
    service.request(TransferSpec{"t1", "alice", "bob", 2500});
  }
  // Delivers an event of `type` with an id never seen before.
  void deliver(MessageType type) {
    const MessagePtr event = make_message("e-" + std::to_string(next++), type, "t1", "alice",
                                          "bob", 2500, "", 0);
    REQUIRE(run(service.handle(TransferConsumer::saga, event)) == Outcome::ack);
  }
  SagaState state() { return service.sagas().at("t1"); }
  // The relay publishes what the outbox holds, and every publish is confirmed.
  size_t flush() {
    const size_t confirmed = host.relay_seqs.size();
    service.relay_poll();
    for (size_t i = confirmed; i < host.relay_seqs.size(); ++i) service.relay_confirmed(host.relay_seqs[i]);
    return host.published.size();
  }
  std::vector<MessageType> sent_since(size_t published) {
    flush();
    std::vector<MessageType> types;
    for (size_t i = published; i < host.published.size(); ++i) types.push_back(host.published[i]->type);
    return types;
  }
  bool refused() const {
    return std::any_of(host.events.begin(), host.events.end(), [](const TraceEvent& e) {
      return e.kind == EventKind::illegal_transition;
    });
  }
};

std::string pair_name(SagaState from, MessageType on) {
  return std::string(saga_state_name(from)) + " + " + std::string(message_type_name(on));
}

}  // namespace

TEST_CASE("saga: every state against every event, as the contract's table says",
          "[saga][services]") {
  for (const auto& [from, path] : kPathTo) {
    for (const MessageType on : kSagaEvents) {
      DYNAMIC_SECTION(pair_name(from, on)) {
        Saga saga{Config{}};
        for (const MessageType step : path) saga.deliver(step);
        REQUIRE(saga.state() == from);
        REQUIRE_FALSE(saga.refused());
        const size_t published = saga.flush();
        saga.deliver(on);
        const std::optional<Expected> expected = contract(from, on);
        const std::vector<MessageType> sent = saga.sent_since(published);
        if (expected) {
          REQUIRE(saga.state() == expected->to);
          REQUIRE_FALSE(saga.refused());
          REQUIRE(sent == (expected->sends ? std::vector<MessageType>{*expected->sends}
                                           : std::vector<MessageType>{}));
        } else {
          REQUIRE(saga.state() == from);
          REQUIRE(saga.refused());
          REQUIRE(sent.empty());
        }
      }
    }
  }
}

TEST_CASE("saga: without the state machine, every event is applied in every state",
          "[saga][services]") {
  Config config;
  config.transfer_state_machine = false;
  for (const auto& [from, path] : kPathTo) {
    for (const MessageType on : kSagaEvents) {
      DYNAMIC_SECTION(pair_name(from, on)) {
        Saga saga{config};
        for (const MessageType step : path) saga.deliver(step);
        REQUIRE(saga.state() == from);
        const size_t published = saga.flush();
        saga.deliver(on);
        const Expected applied = proper(on);
        REQUIRE(saga.state() == applied.to);
        REQUIRE_FALSE(saga.refused());
        REQUIRE(saga.sent_since(published) ==
                (applied.sends ? std::vector<MessageType>{*applied.sends} : std::vector<MessageType>{}));
      }
    }
  }
}

TEST_CASE("saga: the graph and the checker's legal transitions are the contract's table",
          "[saga][checker]") {
  REQUIRE(is_legal_transition(std::nullopt, SagaState::requested));
  for (size_t to = 0; to < kSagaStateCount; ++to) {
    const auto target = static_cast<SagaState>(to);
    if (target != SagaState::requested) REQUIRE_FALSE(is_legal_transition(std::nullopt, target));
    for (size_t from = 0; from < kSagaStateCount; ++from) {
      const auto source = static_cast<SagaState>(from);
      bool in_table = false;
      for (const MessageType on : kSagaEvents) {
        if (auto found = contract(source, on)) in_table = in_table || found->to == target;
        const SagaEdge* edge = find_saga_edge(source, on);
        REQUIRE((edge != nullptr) == contract(source, on).has_value());
      }
      INFO(saga_state_name(source) << " -> " << saga_state_name(target));
      REQUIRE(is_legal_transition(source, target) == in_table);
    }
  }
  for (const MessageType type : kAllMessageTypes) {
    const bool consumed =
        std::find(kSagaEvents.begin(), kSagaEvents.end(), type) != kSagaEvents.end();
    REQUIRE((saga_edge_for_event(type) != nullptr) == consumed);
  }
}
