// Parsers for the CLI's structured flag values, shared by the verbs that take them.
#pragma once

#include <cstdint>
#include <string>

namespace inboxsim {

// The largest seed: a scenario file's seed is a JSON number, exact up to 2^53, and a fuzz
// counterexample carries its seed.
inline constexpr uint64_t kSeedMax = uint64_t{1} << 53;
// The most seeds one campaign (or one matrix row) may run.
inline constexpr uint64_t kSeedsPerCampaignMax = 10'000'000;

// Parses one seed: decimal digits, at most kSeedMax. Returns false on bad text.
bool parse_seed(const std::string& text, uint64_t& seed);

// Parses "A..B" (or a single seed "A") with A <= B <= kSeedMax and at most
// kSeedsPerCampaignMax seeds. Returns false on bad text.
bool parse_seed_range(const std::string& text, uint64_t& first, uint64_t& last);

// Parses "K/N" with 1 <= K <= N. Returns false on bad text.
bool parse_shard(const std::string& text, int64_t& index, int64_t& count);

}  // namespace inboxsim
