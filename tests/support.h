// What several test files need: a scenario of the library, and a temporary directory.
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <system_error>

#include "scenario/parse.h"

namespace inboxsim::testing {

// A file of scenarios/, parsed; the test fails with the parser's message if it does not parse.
inline Scenario library_scenario(const std::string& file) {
  ParseResult parsed = parse_scenario_file(std::string(INBOXSIM_SOURCE_DIR "/scenarios/") + file);
  if (parsed.error) FAIL(parsed.error->message());
  return std::move(*parsed.scenario);
}

// A directory of its own under the system's temporary directory, removed when it goes.
struct TemporaryDirectory {
  std::filesystem::path path;
  explicit TemporaryDirectory(const std::string& name)
      : path(std::filesystem::temp_directory_path() /
             (name + "-" + std::to_string(static_cast<long long>(::getpid())))) {
    std::filesystem::remove_all(path);
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
};

}  // namespace inboxsim::testing
