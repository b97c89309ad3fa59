// What a server relies on to survive its own bugs: a failed assertion can be made to throw, and
// the worker threads hand what they threw back to the caller.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "fuzz/parallel.h"
#include "kernel/assert.h"

using namespace inboxsim;

TEST_CASE("a failed assertion throws InternalError once a server asks for it", "[assert]") {
  assertions_throw();
  const int broken = 2;
  try {
    INBOXSIM_ASSERT(broken + 2 == 5);
    FAIL("the assertion did not fire");
  } catch (const InternalError& error) {
    // It names what failed and where, as the exit-3 message does.
    REQUIRE(std::string(error.what()).find("assertion `broken + 2 == 5` failed at") !=
            std::string::npos);
    REQUIRE(std::string(error.what()).find("test_assert.cpp:") != std::string::npos);
  }
  INBOXSIM_ASSERT(broken == 2);  // a holding one does nothing
  assertions_throw(false);
}

TEST_CASE("parallel_for rethrows what a worker threw, and stops claiming work", "[assert]") {
  for (const int64_t jobs : {1, 2, 4}) {
    DYNAMIC_SECTION("jobs " << jobs) {
      std::atomic<size_t> done{0};
      REQUIRE_THROWS_AS(parallel_for(
                            10'000, jobs,
                            [&](size_t index) {
                              if (index == 3) throw std::runtime_error("index 3");
                              // Slow enough that all of them would take seconds.
                              std::this_thread::sleep_for(std::chrono::milliseconds(1));
                              ++done;
                            },
                            [](size_t) { return false; }),
                        std::runtime_error);
      // The others stop soon after: far fewer than all of them ran.
      REQUIRE(done < 10'000);
    }
  }
}
