// Names of enums, from tables indexed by the enum's value, so a name and its parse can never
// disagree. Used for every contract name (message types, crash points, invariants, ...).
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include "kernel/assert.h"

namespace inboxsim {

// Returns the name of `value` in `names`.
// REQUIRES: value indexes `names`.
template <typename Enum, size_t N>
std::string_view name_of(const std::array<std::string_view, N>& names, Enum value) {
  const auto index = static_cast<size_t>(value);
  INBOXSIM_ASSERT(index < N);
  return names[index];
}

// Returns the enum value whose name is `name`, if any.
template <typename Enum, size_t N>
std::optional<Enum> parse_name(const std::array<std::string_view, N>& names,
                               std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

}  // namespace inboxsim
