// The row locks of one service's database, held by handlers across steps (docs/contract.md §8.1).
//
// Postgres locks rows, not the whole database: MassTransit's passes each lock their InboxState
// row with SELECT ... FOR UPDATE, and pass 3 holds that lock while it awaits the broker's
// confirms. SQLite would lock the whole database for as long as a write transaction stays open,
// so the simulation never keeps one open across steps and models the row lock here instead: one
// owner per key, waiters served first come, first served, in virtual time.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace inboxsim {

class RowLocks {
 public:
  // Takes `key` for `handler`. Returns true when it is now the owner, false when it waits.
  // REQUIRES: the handler neither owns nor waits for `key`.
  bool acquire(const std::string& key, uint64_t handler);

  // Releases `key`, which `handler` owns. Returns the waiter that now owns it, if any.
  // REQUIRES: the handler owns `key`.
  std::optional<uint64_t> release(const std::string& key, uint64_t handler);

  // Withdraws `handler` from every queue it waits in, and keeps what it owns.
  void withdraw(uint64_t handler);

  struct Grant {
    std::string key;
    uint64_t handler = 0;
  };
  // Releases every lock `handler` owns and withdraws it from every queue (its transaction rolled
  // back, or its process died). Returns the locks that passed to a waiter, in key order.
  std::vector<Grant> release_all(uint64_t handler);

  // The keys `handler` owns or waits for, in key order.
  std::vector<std::string> keys_of(uint64_t handler) const;

  // Returns the owner of `key`, if it is held.
  std::optional<uint64_t> owner(const std::string& key) const;

  bool empty() const { return locks_.empty(); }

  // Every held lock: its key, then its owner and its waiters in queue order.
  std::vector<std::pair<std::string, std::vector<uint64_t>>> snapshot() const {
    std::vector<std::pair<std::string, std::vector<uint64_t>>> out;
    for (const auto& [key, lock] : locks_) {
      std::vector<uint64_t> holders{lock.owner};
      holders.insert(holders.end(), lock.waiters.begin(), lock.waiters.end());
      out.emplace_back(key, std::move(holders));
    }
    return out;
  }

 private:
  struct Lock {
    uint64_t owner = 0;
    std::deque<uint64_t> waiters;
  };
  std::map<std::string, Lock> locks_;
};

}  // namespace inboxsim
