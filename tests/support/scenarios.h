// What several test files need: scenarios (of the library, or written in the test), and a
// temporary directory.
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>
#include <system_error>

#include "scenario/parse.h"
#include "scenario/runner.h"
#include "scenario/write.h"

namespace inboxsim::testing {

// A file of scenarios/, parsed; the test fails with the parser's message if it does not parse.
inline Scenario library_scenario(const std::string& file) {
  ParseResult parsed = parse_scenario_file(std::string(INBOXSIM_SOURCE_DIR "/scenarios/") + file);
  if (parsed.error) FAIL(parsed.error->message());
  return std::move(*parsed.scenario);
}

// The file names of scenarios/, sorted.
inline std::vector<std::string> library_files() {
  std::vector<std::string> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(INBOXSIM_SOURCE_DIR "/scenarios"))) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A scenario written in the test; the test fails with the parser's message if it does not parse.
inline Scenario parse_ok(const std::string& text, const std::string& label = "test.json") {
  ParseResult parsed = parse_scenario_text(text, label);
  if (parsed.error) FAIL(parsed.error->message());
  return std::move(*parsed.scenario);
}

// The text of a story with alice (10000) and bob (0): `config` is its config object, `steps`
// what its steps array holds.
inline std::string text_of(const std::string& config, const std::string& steps) {
  return R"({"accounts": {"alice": 10000, "bob": 0}, "config": )" + config + R"(, "steps": [)" +
         steps + "]}";
}

// The parser's message for `text`, or "(parsed)" when it parses.
inline std::string parse_error(const std::string& text) {
  const ParseResult parsed = parse_scenario_text(text, "test.json");
  return parsed.error ? parsed.error->message() : std::string("(parsed)");
}

// A scenario written in the test, run with its trace kept.
inline RunResult run_traced(const std::string& text) {
  RunOptions options;
  options.keep_trace = true;
  return run_scenario(parse_ok(text), options);
}

// A scenario as a user meets a file the tool wrote (a counterexample, a goal's witness):
// written, parsed back, run. It must parse, with its schedule.
inline RunResult replay_written(const Scenario& scenario) {
  const std::string text = scenario_to_json(scenario).dump(2);
  ParseResult parsed = parse_scenario_text(text, "written.json");
  REQUIRE(parsed.scenario.has_value());
  REQUIRE(parsed.scenario->schedule.has_value());
  RunOptions options;
  options.keep_trace = false;
  return run_scenario(*parsed.scenario, options);
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

// The events of `result` of `kind` whose detail contains `part`.
inline int64_t events_with(const RunResult& result, EventKind kind, const std::string& part) {
  return std::count_if(result.events.begin(), result.events.end(), [&](const TraceEvent& event) {
    return event.kind == kind && event.detail.find(part) != std::string::npos;
  });
}

// The dedupe records of message `id` that are `record` (the trace's typed field).
inline int64_t records_of(const RunResult& result, DedupeRecord record, const std::string& id) {
  return std::count_if(result.events.begin(), result.events.end(), [&](const TraceEvent& event) {
    return event.kind == EventKind::dedupe_record && event.record == record &&
           event.message_id == id;
  });
}

// The dedupe hits on message `id` that `step` caught (the trace's typed field).
inline int64_t hits_of(const RunResult& result, DedupeStep step, const std::string& id) {
  return std::count_if(result.events.begin(), result.events.end(), [&](const TraceEvent& event) {
    return event.kind == EventKind::dedupe_hit && event.dedupe_step == step &&
           event.message_id == id;
  });
}

// The DEBIT entries of `transfer` in the ledger `result` ends with.
inline int64_t debits_of(const RunResult& result, const std::string& transfer) {
  return std::count_if(result.ledger.begin(), result.ledger.end(), [&](const LedgerEntry& entry) {
    return entry.transfer == transfer && entry.type == EntryType::debit;
  });
}

}  // namespace inboxsim::testing
