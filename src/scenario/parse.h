// Reading scenario files (docs/contract.md §6, contract v1) into a validated Scenario.
//
// A bad scenario file is an operating error, not a programmer error: these functions never
// throw and never abort, whatever the bytes. They return either a Scenario that the runner may
// trust (see scenario.h) or one InputError naming the file, the place in it as a JSON pointer
// (RFC 6901) and what was expected there. The first error in document order is reported, with
// the keys of an object taken in sorted order.
#pragma once

#include <optional>
#include <string>

#include "domain/scenario.h"

namespace inboxsim {

struct InputError {
  std::string file;     // as the user named it
  std::string pointer;  // e.g. "/steps/3/fault/at"; empty for whole-file problems
  // What follows the pointer in the message: "expected one of ... (got "after_lunch")" for a bad
  // value, or the problem itself for the whole file ("not valid JSON: ...", "empty file").
  std::string expected;

  // Returns one line: `FILE: POINTER: EXPECTED`, or `FILE: EXPECTED` without a pointer.
  std::string message() const;
};

// Exactly one of the two is set.
struct ParseResult {
  std::optional<Scenario> scenario;
  std::optional<InputError> error;
};

// Reads and validates the file at `path`. A missing file, a directory, an unreadable or
// oversized file are InputErrors like any other. Scenario::file is set to `path`, and the name
// defaults to the file's stem.
ParseResult parse_scenario_file(const std::string& path);

// Validates `text` as the contents of a scenario file; `file_label` stands for the file in
// messages, in Scenario::file, and (its stem) as the default name.
ParseResult parse_scenario_text(const std::string& text, const std::string& file_label);

// Returns the offset where brackets first nest deeper than 64 levels (any JSON text a scenario
// or the playground reads is refused past it, before nlohmann's recursive parser sees it), or
// npos. Brackets inside strings do not count; the text need not be valid JSON.
size_t too_deep_offset(std::string_view text);

// Returns `key` escaped as one JSON pointer reference token ("~" -> "~0", "/" -> "~1").
std::string json_pointer_token(std::string_view key);

}  // namespace inboxsim
