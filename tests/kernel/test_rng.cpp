// The PRNG is what makes a seed replayable: its numbers must not depend on the platform.
#include <catch2/catch.hpp>

#include "kernel/rng.h"
#include "kernel/scheduler.h"

using inboxsim::Rng;

TEST_CASE("the same seed gives the same numbers, a different seed different ones", "[rng]") {
  Rng a(42);
  Rng b(42);
  Rng c(43);
  bool any_difference = false;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t x = a.next();
    REQUIRE(x == b.next());
    any_difference |= x != c.next();
  }
  REQUIRE(any_difference);
}

TEST_CASE("the first draws of seed 1 are pinned, so a library change cannot move them", "[rng]") {
  // xoshiro256** seeded through splitmix64, as its reference implementation does (the values
  // were checked against an independent implementation). If this fails, every recorded seed
  // replays differently: replay across versions and machines would break.
  Rng rng(1);
  REQUIRE(rng.next() == 12966619160104079557ULL);
  REQUIRE(rng.next() == 9600361134598540522ULL);
  REQUIRE(Rng(1).between(1, 4) == 3);
  REQUIRE(Rng(42).below(1000) == 83);
}

TEST_CASE("bounded draws stay in range and reach every value", "[rng]") {
  Rng rng(7);
  int seen[6] = {};
  for (int i = 0; i < 6000; ++i) {
    const int64_t value = rng.between(-2, 3);
    REQUIRE(value >= -2);
    REQUIRE(value <= 3);
    ++seen[value + 2];
  }
  for (int count : seen) {
    REQUIRE(count > 800);
    REQUIRE(count < 1200);
  }
}

TEST_CASE("the scheduler runs events in (time, sequence) order", "[scheduler]") {
  inboxsim::Scheduler<int> scheduler;
  scheduler.schedule_at(10, 1);
  scheduler.schedule_at(5, 2);
  scheduler.schedule_at(10, 3);
  scheduler.schedule_at(5, 4);
  REQUIRE(scheduler.size() == 4);
  REQUIRE(scheduler.pop() == 2);
  REQUIRE(scheduler.pop() == 4);
  REQUIRE(scheduler.now_ms() == 5);
  REQUIRE(scheduler.pop() == 1);
  REQUIRE(scheduler.pop() == 3);
  REQUIRE(scheduler.now_ms() == 10);
  REQUIRE(scheduler.empty());
}
