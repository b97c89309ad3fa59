// The scenario parser's parts, shared by the files that make it up: parse_reader.cpp (typed
// values read from JSON, each failure naming its JSON pointer), parse_steps.cpp (the steps),
// parse_expect.cpp (the expectations) and parse.cpp (the rest of the file, and bytes to JSON).
// Not an interface: only those files include it; the parser's interface is scenario/parse.h.
//
// Validation throws a Failure at the first problem and the two public functions of parse.h
// catch it: unwinding is the shortest way out of a deep check, and it never crosses the API.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "domain/scenario.h"

namespace inboxsim::scenario_parse {

using json = nlohmann::json;

// The file size bounds everything else: steps, accounts and the work a parse can do.
inline constexpr size_t kFileBytesMax = 16 * 1024 * 1024;
// A valid scenario nests five levels deep; the limit only stops stack-exhaustion attacks.
inline constexpr size_t kNestingDepthMax = 64;
inline constexpr size_t kNameBytesMax = 256;
// Long enough to jump past any retention window, short enough that a million steps of it
// still fit in an int64 clock.
inline constexpr int64_t kDurationMsMax = 1'000'000'000'000;
inline constexpr int64_t kRestartAfterMsMax = 1'000'000'000;
// Enough for a poison message: a handler failing more often than any delivery limit allows.
inline constexpr int64_t kNackTimesMax = 1'000'000;
inline constexpr int64_t kOccurrenceMax = 1'000'000;
// Offending values and name lists are shortened in messages so that a message stays one line.
inline constexpr size_t kGotBytesMax = 60;
inline constexpr size_t kListedNamesMax = 12;

// Where the first problem is and what was expected there.
struct Failure {
  std::string pointer;
  std::string expected;
};

[[noreturn]] void fail(std::string pointer, std::string expected);

// A JSON value and where it is. `value` is null when the key is absent.
struct Node {
  const json* value = nullptr;
  std::string pointer;
};

std::string child_pointer(const std::string& pointer, std::string_view key);
std::string child_pointer(const std::string& pointer, size_t index);
// Returns the member `key` of an object node, with a null value when absent.
Node field(const Node& object, std::string_view key);
// Cuts `text` to at most `bytes_max` bytes without splitting a UTF-8 sequence.
std::string shorten(std::string text, size_t bytes_max);
std::string quote_json(std::string_view text);
// Describes a value for the "(got ...)" part of a message.
std::string describe(const json* value);
[[noreturn]] void expect_failed(const Node& node, std::string_view expected);

// Names, comma-separated, the first kListedNamesMax of them.
template <typename Names>
std::string join(const Names& names) {
  std::string text;
  size_t count = 0;
  for (const auto& name : names) {
    if (count == kListedNamesMax) return text + ", ...";
    if (count > 0) text += ", ";
    text += name;
    ++count;
  }
  return text;
}

const json& as_object(const Node& node, std::string_view expected);
const std::string& as_string(const Node& node, std::string_view expected);
// A name shows up as a lane, a file name and in every line that mentions it: 1 to
// kNameBytesMax bytes, no control characters.
std::string as_name(const Node& node, std::string_view expected);
bool as_bool(const Node& node);
std::string integer_range(int64_t low, int64_t high);
// Accepts only JSON integers (2.0 and 1e3 are floats) within [low, high].
int64_t as_integer(const Node& node, int64_t low, int64_t high);

// Returns the enum value whose name `parse` accepts, or fails listing `names`.
template <typename Parse>
auto as_choice(const Node& node, Parse parse, const std::string& names) {
  const std::string expected = "one of " + names;
  const std::string& text = as_string(node, expected);
  const auto parsed = parse(text);
  if (!parsed) expect_failed(node, expected);
  return *parsed;
}

// Fails at the first key of `object` that is not in `allowed`; `why` ends the message.
void check_keys(const Node& object, std::span<const std::string_view> allowed,
                std::string_view why);

// What the whole file declares, so that a step or an expectation can name it in any order.
struct Context {
  Config config;  // the file's own, for the instance counts a fault may name
  std::map<std::string, AccountSpec> accounts;
  std::set<std::string> declared_transfers;
  std::map<std::string, std::string> transfer_pointers;  // id -> where it was declared
};

std::string account_expected(const Context& context);
std::string transfer_expected(const Context& context);

// Lists the names of the first `count` values of an enum, for "expected one of ..." texts.
template <typename Enum>
std::string enum_names(size_t count, std::string_view (*name)(Enum)) {
  std::vector<std::string_view> names;
  for (size_t i = 0; i < count; ++i) names.push_back(name(static_cast<Enum>(i)));
  return join(names);
}

// ---- The sections (parse_steps.cpp, parse_expect.cpp) -----------------------------------------

std::string as_declared_transfer(const Node& node, const Context& context);
Step parse_step(const Node& node, Context& context);
// Collects every transfer id the steps declare, before the other steps, so that a fault may
// match a transfer declared later in the file. Each transfer step is validated here, so that a
// malformed one is reported where it is, not at a fault that names it.
std::set<std::string> declared_transfer_ids(const Node& steps, const Context& context);
std::vector<Step> parse_steps(const Node& node, Context& context);
Expect parse_expect(const Node& node, const Context& context);

}  // namespace inboxsim::scenario_parse
