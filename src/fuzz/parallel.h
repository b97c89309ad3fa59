// The worker threads of fuzz campaigns and explorations. What runs on them must not depend on
// which thread runs it or when: each index writes only its own result slot, and the caller
// merges the slots in index order, so the output is the same with any --jobs.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace inboxsim {

inline constexpr int64_t kJobsMax = 256;

// Runs `work(i)` for i in [0, count) on up to `jobs` threads (at most kJobsMax, at most count). `stop(i)` is
// asked before claiming i; claims are in increasing order, so once stop(i) holds for some i it
// may be assumed to hold for every later one. With a `tick`, the calling thread calls it about
// every 20 ms while the workers run (a progress line); without one it only waits, and with one
// worker it runs the work itself. An exception thrown by `work` stops the claims and is
// rethrown here once every thread has ended (the first one caught, if several threw).
template <typename Work, typename Stop>
void parallel_for(size_t count, int64_t jobs, Work work, Stop stop,
                  const std::function<void()>& tick = {}) {
  const auto threads_count = static_cast<size_t>(
      std::clamp<int64_t>(std::min(jobs, static_cast<int64_t>(count)), 1, kJobsMax));
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::exception_ptr error;
  auto worker = [&] {
    try {
      for (size_t index = next.fetch_add(1); index < count && !failed && !stop(index);
           index = next.fetch_add(1)) {
        work(index);
      }
    } catch (...) {
      const std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      failed = true;
    }
  };
  if (threads_count == 1 && !tick) {
    worker();
    if (error) std::rethrow_exception(error);
    return;
  }
  std::atomic<size_t> running{threads_count};
  std::vector<std::thread> threads;
  threads.reserve(threads_count);
  for (size_t t = 0; t < threads_count; ++t) {
    threads.emplace_back([&] {
      worker();
      running.fetch_sub(1);
    });
  }
  if (tick) {
    while (running.load() > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      tick();
    }
  }
  for (std::thread& thread : threads) thread.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace inboxsim
