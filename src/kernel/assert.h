// Assertions that stay on in release builds.
//
// A broken assumption is a programmer error: it must crash loudly in every build, which is why
// inboxsim does not use <cassert> (NDEBUG removes it). Bad input is not a programmer error and
// is handled with a clear message instead (see scenario/parse.h).
#pragma once

#include <cstdio>
#include <cstdlib>

namespace inboxsim {

[[noreturn]] inline void assertion_failed(const char* expression, const char* file, int line) {
  std::fprintf(stderr, "inboxsim: internal error: assertion `%s` failed at %s:%d\n", expression,
               file, line);
  std::fflush(stderr);
  std::_Exit(3);  // exit code 3: internal error (DESIGN §5)
}

}  // namespace inboxsim

#define INBOXSIM_ASSERT(expression)                                  \
  do {                                                               \
    if (!(expression)) {                                             \
      ::inboxsim::assertion_failed(#expression, __FILE__, __LINE__); \
    }                                                                \
  } while (false)
