#include "world/row_locks.h"

#include <algorithm>

#include "kernel/assert.h"

namespace inboxsim {

bool RowLocks::acquire(const std::string& key, uint64_t handler) {
  const auto [found, created] = locks_.try_emplace(key);
  Lock& lock = found->second;
  if (created) {
    lock.owner = handler;
    return true;
  }
  INBOXSIM_ASSERT(lock.owner != handler);
  INBOXSIM_ASSERT(std::find(lock.waiters.begin(), lock.waiters.end(), handler) ==
                  lock.waiters.end());
  lock.waiters.push_back(handler);
  return false;
}

std::optional<uint64_t> RowLocks::release(const std::string& key, uint64_t handler) {
  const auto found = locks_.find(key);
  INBOXSIM_ASSERT(found != locks_.end());
  Lock& lock = found->second;
  INBOXSIM_ASSERT(lock.owner == handler);
  if (lock.waiters.empty()) {
    locks_.erase(found);
    return std::nullopt;
  }
  lock.owner = lock.waiters.front();
  lock.waiters.pop_front();
  return lock.owner;
}

void RowLocks::withdraw(uint64_t handler) {
  for (auto& [key, lock] : locks_) {
    lock.waiters.erase(std::remove(lock.waiters.begin(), lock.waiters.end(), handler),
                       lock.waiters.end());
  }
}

std::vector<RowLocks::Grant> RowLocks::release_all(uint64_t handler) {
  std::vector<Grant> grants;
  for (auto it = locks_.begin(); it != locks_.end();) {
    Lock& lock = it->second;
    lock.waiters.erase(std::remove(lock.waiters.begin(), lock.waiters.end(), handler),
                       lock.waiters.end());
    if (lock.owner != handler) {
      ++it;
      continue;
    }
    if (lock.waiters.empty()) {
      it = locks_.erase(it);
      continue;
    }
    lock.owner = lock.waiters.front();
    lock.waiters.pop_front();
    grants.push_back(Grant{it->first, lock.owner});
    ++it;
  }
  return grants;
}

std::vector<std::string> RowLocks::keys_of(uint64_t handler) const {
  std::vector<std::string> keys;
  for (const auto& [key, lock] : locks_) {
    if (lock.owner == handler ||
        std::find(lock.waiters.begin(), lock.waiters.end(), handler) != lock.waiters.end()) {
      keys.push_back(key);
    }
  }
  return keys;
}

std::optional<uint64_t> RowLocks::owner(const std::string& key) const {
  const auto found = locks_.find(key);
  if (found == locks_.end()) return std::nullopt;
  return found->second.owner;
}

}  // namespace inboxsim
