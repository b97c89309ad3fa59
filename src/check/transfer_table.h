// The checker's per-transfer facts, kept compact: a long run has a million transfers, and a
// std::map node per transfer (three pointers, a std::string and the facts) took 96 bytes.
// Here a transfer costs its facts, its id's characters and about 16 bytes of index: the ids
// are appended to one string, the facts to one vector, and an open-addressing table of
// indices finds them. Iteration is in id order (the order a std::map<std::string> had), sorted
// when asked for, so no hash order ever reaches a report.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/assert.h"
#include "kernel/fingerprint.h"

namespace inboxsim {

template <typename Facts>
class TransferTable {
 public:
  // The facts of `id`, added (value-initialised) if it has none yet.
  Facts& operator[](std::string_view id) {
    if (2 * (facts_.size() + 1) > slots_.size()) grow();
    size_t slot = hash(id) & (slots_.size() - 1);
    while (slots_[slot] != 0) {
      const uint32_t index = slots_[slot] - 1;
      if (id_at(index) == id) return facts_[index];
      slot = (slot + 1) & (slots_.size() - 1);
    }
    INBOXSIM_ASSERT(facts_.size() < UINT32_MAX - 1);
    INBOXSIM_ASSERT(ids_.size() + id.size() < UINT32_MAX);
    ids_.append(id);
    ends_.push_back(static_cast<uint32_t>(ids_.size()));
    facts_.emplace_back();
    slots_[slot] = static_cast<uint32_t>(facts_.size());
    return facts_.back();
  }

  size_t size() const { return facts_.size(); }

  // Calls visit(id, facts) for every transfer, in id order.
  template <typename Visit>
  void for_each(Visit&& visit) {
    for (const uint32_t index : sorted()) visit(id_at(index), facts_[index]);
  }
  template <typename Visit>
  void for_each(Visit&& visit) const {
    for (const uint32_t index : sorted()) visit(id_at(index), facts_[index]);
  }

 private:
  std::string_view id_at(uint32_t index) const {
    const uint32_t begin = index == 0 ? 0 : ends_[index - 1];
    return std::string_view(ids_).substr(begin, ends_[index] - begin);
  }

  // Any spread will do; the order of the slots never reaches an output.
  static uint64_t hash(std::string_view id) { return fnv1a(id); }

  void grow() {
    std::vector<uint32_t> slots(std::max<size_t>(16, 2 * slots_.size()), 0);
    for (uint32_t index = 0; index < facts_.size(); ++index) {
      size_t slot = hash(id_at(index)) & (slots.size() - 1);
      while (slots[slot] != 0) slot = (slot + 1) & (slots.size() - 1);
      slots[slot] = index + 1;
    }
    slots_ = std::move(slots);
  }

  std::vector<uint32_t> sorted() const {
    std::vector<uint32_t> order(facts_.size());
    for (uint32_t index = 0; index < order.size(); ++index) order[index] = index;
    std::sort(order.begin(), order.end(),
              [this](uint32_t a, uint32_t b) { return id_at(a) < id_at(b); });
    return order;
  }

  std::string ids_;             // every id, one after another
  std::vector<uint32_t> ends_;  // where each id ends in ids_
  std::vector<Facts> facts_;    // by index, in the order added
  std::vector<uint32_t> slots_;  // index + 1, or 0 when empty; a power of two, at most half full
};

}  // namespace inboxsim
