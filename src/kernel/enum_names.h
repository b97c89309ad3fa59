// Names of enums, from tables indexed by the enum's value, so a name and its parse can never
// disagree. Used for every contract name (message types, crash points, invariants, ...).
#pragma once

#include <array>
#include <optional>
#include <string_view>

#include "kernel/assert.h"

namespace inboxsim {

// Whether a name table names every value of its enum, `last` being the enum's last value: the
// table is one longer than `last` and no entry is empty (an initializer shorter than the table
// leaves the rest empty). Every name table is held to it by a static_assert beside it, so an
// enum value added without its name does not compile.
template <typename Enum, size_t N>
constexpr bool names_every(const std::array<std::string_view, N>& names, Enum last) {
  if (static_cast<size_t>(last) + 1 != N) return false;
  for (const std::string_view name : names) {
    if (name.empty()) return false;
  }
  return true;
}

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
