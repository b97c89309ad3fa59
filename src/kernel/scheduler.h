// The deterministic event queue: virtual time in milliseconds, events ordered by
// (time, sequence number).
//
// Two events at the same millisecond run in the order they were scheduled, so a run depends
// only on its seed.
#pragma once

#include <cstdint>
#include <queue>
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
    queue_.push(Entry{time_ms, next_sequence_++, payload});
  }

  bool empty() const { return queue_.empty(); }
  size_t size() const { return queue_.size(); }

  // Returns the time of the earliest event.
  // REQUIRES: !empty().
  int64_t next_time_ms() const {
    INBOXSIM_ASSERT(!queue_.empty());
    return queue_.top().time_ms;
  }

  // Removes the earliest event and moves the clock to its time.
  // REQUIRES: !empty().
  Payload pop() {
    INBOXSIM_ASSERT(!queue_.empty());
    Entry entry = queue_.top();
    queue_.pop();
    INBOXSIM_ASSERT(entry.time_ms >= now_ms_);
    now_ms_ = entry.time_ms;
    return entry.payload;
  }

  // Moves the clock forward with no event (an `advance` after the due events ran).
  // REQUIRES: time_ms >= now_ms(), and no event is due before time_ms.
  void advance_to(int64_t time_ms) {
    INBOXSIM_ASSERT(time_ms >= now_ms_);
    INBOXSIM_ASSERT(queue_.empty() || queue_.top().time_ms >= time_ms);
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

  int64_t now_ms_ = 0;
  uint64_t next_sequence_ = 0;
  std::priority_queue<Entry, std::vector<Entry>, Later> queue_;
};

}  // namespace inboxsim
