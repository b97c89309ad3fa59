// The simulation's only source of randomness: xoshiro256** seeded through splitmix64.
//
// Every draw a simulation makes goes through one Rng owned by its World, so the same seed gives
// the same run on every machine and standard library. The bounded draw is our own (Lemire's
// multiply-and-reject), because std::uniform_int_distribution differs between libraries.
#pragma once

#include <cstdint>

#include "kernel/assert.h"

namespace inboxsim {

// __extension__ keeps -Wpedantic quiet: GCC and Clang both have 128-bit integers.
__extension__ typedef unsigned __int128 Uint128;

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t x = seed;
    for (uint64_t& word : state_) word = splitmix64(x);
  }

  // Returns the next 64 uniformly distributed bits.
  uint64_t next() {
    const uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }

  // Returns a uniform integer in [0, bound).
  // REQUIRES: bound > 0.
  uint64_t below(uint64_t bound) {
    INBOXSIM_ASSERT(bound > 0);
    // Lemire's method: the high word of a 128-bit product, rejecting the biased low range.
    Uint128 product = static_cast<Uint128>(next()) * bound;
    auto low = static_cast<uint64_t>(product);
    if (low < bound) {
      const uint64_t threshold = (0 - bound) % bound;
      while (low < threshold) {
        product = static_cast<Uint128>(next()) * bound;
        low = static_cast<uint64_t>(product);
      }
    }
    return static_cast<uint64_t>(product >> 64);
  }

  // Returns a uniform integer in [low, high].
  // REQUIRES: low <= high.
  int64_t between(int64_t low, int64_t high) {
    INBOXSIM_ASSERT(low <= high);
    const auto span = static_cast<uint64_t>(high - low) + 1;
    return low + static_cast<int64_t>(below(span));
  }

  // Returns true with probability numerator / denominator.
  bool chance(uint64_t numerator, uint64_t denominator) {
    INBOXSIM_ASSERT(denominator > 0);
    return below(denominator) < numerator;
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  uint64_t state_[4] = {};
};

}  // namespace inboxsim
