// The deterministic event queue: virtual time in milliseconds, events ordered by
// (time, sequence number).
//
// Two events at the same millisecond run in the order they were scheduled, so a run depends
// only on its seed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernel/assert.h"

namespace inboxsim {

template <typename Payload>
class Scheduler {
 public:
  int64_t now_ms() const { return now_ms_; }

  // Schedules `payload` at `time_ms`.
  // REQUIRES: time_ms >= now_ms().
  void schedule_at(int64_t time_ms, Payload payload) {
    INBOXSIM_ASSERT(time_ms >= now_ms_);
    heap_.push_back(Entry{time_ms, next_sequence_++, payload});
    std::push_heap(heap_.begin(), heap_.end(), Later{});
  }

  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }

  // Returns the time of the earliest event.
  // REQUIRES: !empty().
  int64_t next_time_ms() const {
    INBOXSIM_ASSERT(!heap_.empty());
    return heap_.front().time_ms;
  }

  // Removes the earliest event and moves the clock to its time.
  // REQUIRES: !empty().
  Payload pop() {
    INBOXSIM_ASSERT(!heap_.empty());
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    Entry entry = heap_.back();
    heap_.pop_back();
    INBOXSIM_ASSERT(entry.time_ms >= now_ms_);
    now_ms_ = entry.time_ms;
    return entry.payload;
  }

  // The pending events in the order pop() would take them (exploration chooses among them).
  std::vector<Payload> pending() const {
    std::vector<Entry> sorted = heap_;
    std::sort(sorted.begin(), sorted.end(), Earlier{});
    std::vector<Payload> out;
    out.reserve(sorted.size());
    for (const Entry& entry : sorted) out.push_back(entry.payload);
    return out;
  }

  // Removes the `index`-th pending event in pop() order and returns it, without moving the
  // clock: in an exploration every pending event may happen next, whatever its time.
  // REQUIRES: index < size().
  Payload take(size_t index) {
    INBOXSIM_ASSERT(index < heap_.size());
    std::vector<Entry> sorted = heap_;
    std::sort(sorted.begin(), sorted.end(), Earlier{});
    const uint64_t sequence = sorted[index].sequence;
    const auto found = std::find_if(heap_.begin(), heap_.end(),
                                    [&](const Entry& entry) { return entry.sequence == sequence; });
    Payload payload = found->payload;
    heap_.erase(found);
    std::make_heap(heap_.begin(), heap_.end(), Later{});
    return payload;
  }

  // Removes the first pending event, in pop() order, for which `matches` holds; returns
  // whether there was one. The clock does not move.
  template <typename Predicate>
  bool erase_first(Predicate matches) {
    const std::vector<Payload> in_order = pending();
    for (size_t index = 0; index < in_order.size(); ++index) {
      if (!matches(in_order[index])) continue;
      take(index);
      return true;
    }
    return false;
  }

  // How many events are due first (at the earliest time): a clocked choice is among them, and
  // they come first in pending() order.
  size_t due_count() const {
    if (heap_.empty()) return 0;
    const int64_t first = heap_.front().time_ms;
    return static_cast<size_t>(std::count_if(heap_.begin(), heap_.end(),
                                             [&](const Entry& e) { return e.time_ms == first; }));
  }

  // take(index) of an event due first, moving the clock to its time.
  // REQUIRES: index < due_count().
  Payload take_due(size_t index) {
    INBOXSIM_ASSERT(index < due_count());
    const int64_t time_ms = heap_.front().time_ms;
    Payload payload = take(index);
    now_ms_ = std::max(now_ms_, time_ms);
    return payload;
  }

  // Moves the clock to `time_ms` whatever is pending (a jump in a run without a clock, where
  // every pending event may happen next anyway).
  // REQUIRES: time_ms >= now_ms().
  void jump_to(int64_t time_ms) {
    INBOXSIM_ASSERT(time_ms >= now_ms_);
    now_ms_ = time_ms;
  }

  // Moves the clock forward with no event (an `advance` after the due events ran).
  // REQUIRES: time_ms >= now_ms(), and no event is due before time_ms.
  void advance_to(int64_t time_ms) {
    INBOXSIM_ASSERT(time_ms >= now_ms_);
    INBOXSIM_ASSERT(heap_.empty() || heap_.front().time_ms >= time_ms);
    now_ms_ = time_ms;
  }

 private:
  struct Entry {
    int64_t time_ms;
    uint64_t sequence;
    Payload payload;
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      if (a.time_ms != b.time_ms) return a.time_ms > b.time_ms;
      return a.sequence > b.sequence;
    }
  };
  struct Earlier {
    bool operator()(const Entry& a, const Entry& b) const { return Later{}(b, a); }
  };

  int64_t now_ms_ = 0;
  uint64_t next_sequence_ = 0;
  std::vector<Entry> heap_;  // a binary heap under Later: front() is the earliest
};

}  // namespace inboxsim
