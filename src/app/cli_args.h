// Parsers for the CLI's structured flag values, shared by the verbs that take them.
#pragma once

#include <cstdint>
#include <string>

namespace inboxsim {

// Parses "A..B" (or a single seed "A"). Returns false on bad text.
bool parse_seed_range(const std::string& text, uint64_t& first, uint64_t& last);

// Parses "K/N" with 1 <= K <= N. Returns false on bad text.
bool parse_shard(const std::string& text, int64_t& index, int64_t& count);

}  // namespace inboxsim
