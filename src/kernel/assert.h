// Assertions that stay on in release builds.
//
// A broken assumption is a programmer error: it must crash loudly in every build, which is why
// inboxsim does not use <cassert> (NDEBUG removes it). Bad input is not a programmer error and
// is handled with a clear message instead (see scenario/parse.h).
//
// A server (`inboxsim play`) must not let one request end the process that serves everyone: it
// calls assertions_throw(), and a failed assertion then throws InternalError, which unwinds the
// request's own simulation (nothing is shared between requests) and is answered as an internal
// error. Everywhere else a failed assertion ends the process with exit code 3.
#pragma once

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace inboxsim {

struct InternalError : std::logic_error {
  using std::logic_error::logic_error;
};

inline std::atomic<bool> g_assertions_throw{false};

// From now on, in every thread, a failed assertion throws InternalError (or, with false, ends
// the process again).
inline void assertions_throw(bool on = true) { g_assertions_throw = on; }

[[noreturn]] inline void assertion_failed(const char* expression, const char* file, int line) {
  if (g_assertions_throw) {
    throw InternalError(std::string("assertion `") + expression + "` failed at " + file + ":" +
                        std::to_string(line));
  }
  std::fprintf(stderr, "inboxsim: internal error: assertion `%s` failed at %s:%d\n", expression,
               file, line);
  std::fflush(stderr);
  std::_Exit(3);  // exit code 3: internal error (docs/contract.md §5)
}

}  // namespace inboxsim

#define INBOXSIM_ASSERT(expression)                                  \
  do {                                                               \
    if (!(expression)) {                                             \
      ::inboxsim::assertion_failed(#expression, __FILE__, __LINE__); \
    }                                                                \
  } while (false)
