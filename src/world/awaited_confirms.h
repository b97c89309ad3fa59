// Publishing's memory: the relay publishes each instance awaits a publisher confirm for, by
// (instance, outbox seq), and the largest outbox seq any relay has published (the explorer's
// persistent sets assume no relay met a full batch). World publishes, settles and forgets;
// this part only holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <map>
#include <utility>

#include "domain/message.h"

namespace inboxsim {

class AwaitedConfirms {
 public:
  using Key = std::pair<size_t, int64_t>;  // (instance, outbox seq)

  // The relay of `instance` published outbox row `seq` and awaits its confirm.
  void await(size_t instance, int64_t seq, MessagePtr message) {
    awaiting_[{instance, seq}] = std::move(message);
  }
  // The message a confirm of row `seq` of `instance` settles; null when none awaits it.
  const MessagePtr* find(size_t instance, int64_t seq) const {
    const auto found = awaiting_.find({instance, seq});
    return found == awaiting_.end() ? nullptr : &found->second;
  }
  // The confirm of row `seq` reached the relay of `instance`.
  void settle(size_t instance, int64_t seq) { awaiting_.erase({instance, seq}); }
  // The publishing channel of `instance` closed (or its process died): nothing it awaited will
  // be confirmed.
  void forget(size_t instance) {
    std::erase_if(awaiting_,
                  [instance](const auto& entry) { return entry.first.first == instance; });
  }
  const std::map<Key, MessagePtr>& awaiting() const { return awaiting_; }

  void relayed(int64_t seq) { largest_relayed_seq_ = std::max(largest_relayed_seq_, seq); }
  int64_t largest_relayed_seq() const { return largest_relayed_seq_; }

 private:
  std::map<Key, MessagePtr> awaiting_;
  int64_t largest_relayed_seq_ = 0;
};

}  // namespace inboxsim
