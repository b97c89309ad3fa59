// A message for the broker's tests: transfer t1 of 100 from alice to bob.
#pragma once

#include <string>

#include "domain/messages.h"
#include "services/host.h"

namespace inboxsim::testing {

// A message `id` of `type` (Transfer.Requested unless told), about transfer t1.
inline MessagePtr message(const std::string& id,
                          MessageType type = MessageType::transfer_requested) {
  return make_message(id, type, "t1", "alice", "bob", 100, "", 0);
}

}  // namespace inboxsim::testing
