// What tests that read printed text share: whether a text holds a part, and a story's narration.
#pragma once

#include <sstream>
#include <string>
#include <string_view>
#include <utility>

#include "app/demo.h"
#include "domain/scenario.h"
#include "report/narrate.h"
#include "scenario/runner.h"

namespace inboxsim::testing {

// Whether `text` contains `part`.
inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// Runs `scenario` narrated, as `inboxsim run` does, and returns what it printed; the run goes
// to `*result` when one is given.
inline std::string narrated(const Scenario& scenario, RunResult* result = nullptr) {
  std::ostringstream out;
  RunResult run = narrated_run(scenario, NarratedRunOptions{}, out);
  if (result != nullptr) *result = std::move(run);
  return out.str();
}

// The narrator's lines for the events of `run`, a run of `scenario`, as they stand (a test may
// have changed them): no opening and no verdict.
inline std::string narrated_events(const Scenario& scenario, const RunResult& run) {
  std::ostringstream out;
  Narrator narrator(out, NarratorOptions{});
  narrator.set_config(scenario.config);
  for (const TraceEvent& event : run.events) narrator.on_event(event);
  narrator.flush();
  return out.str();
}

}  // namespace inboxsim::testing
