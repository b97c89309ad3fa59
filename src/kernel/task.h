// A handler that runs in steps: a C++20 coroutine the scheduler resumes.
//
// A real consumer is a sequence of steps at its transaction boundaries, with time passing
// between them (docs/contract.md §8.1). A Task is such a sequence written as one function: it runs until
// it `co_await`s a Suspend that asks to stop, and whoever owns it resumes it later, always from
// a scheduled event, so the interleaving of many Tasks depends on the seed alone. A Task is
// created suspended, runs only inside resume(), never resumes itself, and is destroyed by its
// owner; destroying it mid-way unwinds its locals, which is how a crashed process loses what it
// held (locks, open statements) and nothing it committed.
//
// Why a coroutine and not a hand-written state machine: the handlers then read like the code
// they model (MassTransit's passes, Marten's pre-check and commit), one step after another.
#pragma once

#include <coroutine>
#include <exception>
#include <optional>
#include <utility>

#include "kernel/assert.h"

namespace inboxsim {

// What a step boundary decided: `suspend` is true when the task must stop here and wait for
// its owner to resume it (work time, a pause, a lock held by someone else).
struct Suspend {
  bool suspend = false;
  bool await_ready() const noexcept { return !suspend; }
  void await_suspend(std::coroutine_handle<> /*handle*/) const noexcept {}
  void await_resume() const noexcept {}
};

template <typename T>
class Task {
 public:
  struct promise_type {
    std::optional<T> value;
    std::exception_ptr error;

    Task get_return_object() { return Task(Handle::from_promise(*this)); }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_value(T result) { value = std::move(result); }
    void unhandled_exception() { error = std::current_exception(); }
  };
  using Handle = std::coroutine_handle<promise_type>;

  Task() = default;
  explicit Task(Handle handle) : handle_(handle) {}
  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { reset(); }

  // Runs the task until its next suspension or its end. Returns true when it ended.
  // REQUIRES: the task exists and has not ended.
  bool resume() {
    INBOXSIM_ASSERT(handle_);
    INBOXSIM_ASSERT(!handle_.done());
    handle_.resume();
    return handle_.done();
  }

  bool done() const { return handle_ && handle_.done(); }
  // Whether there is a coroutine at all (a default-constructed Task has none).
  bool valid() const { return static_cast<bool>(handle_); }

  // Returns what the task returned, or rethrows what it threw.
  // REQUIRES: done().
  T result() {
    INBOXSIM_ASSERT(done());
    promise_type& promise = handle_.promise();
    if (promise.error) std::rethrow_exception(promise.error);
    INBOXSIM_ASSERT(promise.value.has_value());
    return std::move(*promise.value);
  }

 private:
  void reset() {
    if (handle_) handle_.destroy();
    handle_ = {};
  }

  Handle handle_;
};

}  // namespace inboxsim
