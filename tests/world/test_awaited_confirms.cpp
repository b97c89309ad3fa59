// Publishing's memory of the confirms each relay awaits (world/awaited_confirms.h).
#include <catch2/catch.hpp>
#include <memory>

#include "world/awaited_confirms.h"

using namespace inboxsim;

namespace {

MessagePtr message_with_id(const std::string& id) {
  auto message = std::make_shared<Message>();
  message->message_id = id;
  return message;
}

}  // namespace

TEST_CASE("awaited confirms: a confirm settles its row, a closed channel forgets only its relay's",
          "[publishing]") {
  AwaitedConfirms confirms;
  confirms.await(0, 1, message_with_id("m-1"));
  confirms.await(0, 2, message_with_id("m-2"));
  confirms.await(1, 1, message_with_id("m-3"));
  REQUIRE(confirms.find(0, 2) != nullptr);
  CHECK((*confirms.find(0, 2))->message_id == "m-2");
  CHECK(confirms.find(1, 2) == nullptr);  // rows are counted per relay
  confirms.settle(0, 2);
  CHECK(confirms.find(0, 2) == nullptr);
  CHECK(confirms.find(0, 1) != nullptr);
  confirms.forget(0);
  CHECK(confirms.find(0, 1) == nullptr);
  REQUIRE(confirms.find(1, 1) != nullptr);
  CHECK((*confirms.find(1, 1))->message_id == "m-3");
  CHECK(confirms.awaiting().size() == 1);
}

TEST_CASE("awaited confirms: the largest outbox row relayed only grows", "[publishing]") {
  AwaitedConfirms confirms;
  CHECK(confirms.largest_relayed_seq() == 0);
  confirms.relayed(5);
  confirms.relayed(3);
  CHECK(confirms.largest_relayed_seq() == 5);
}
