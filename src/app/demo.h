// Running scenarios in front of people: one scenario narrated live (what `run` does), and the
// whole teaching library in order with an HTML report per scenario and an index page (`demo`).
#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "domain/result.h"
#include "domain/scenario.h"
#include "report/narrate.h"

namespace inboxsim {

struct NarratedRunOptions {
  bool narrate = true;            // print the timeline as it happens and the summary
  NarratorOptions narrator;       // colour, quiet
  bool pause_after_step = false;  // wait for Enter after each step (live demos)
  std::optional<uint64_t> seed;   // overrides the scenario's seed
  std::string db_dir;             // keep the databases as files here
  // Called after each step with the steps played and the story's steps (a progress line).
  std::function<void(size_t steps_done, size_t steps_total)> on_step;
};

// Runs one scenario, narrating it to `out` as it happens when asked to; returns the result.
RunResult narrated_run(const Scenario& scenario, const NarratedRunOptions& options,
                       std::ostream& out);

struct DemoOptions {
  std::string scenario_dir;  // the teaching library
  // Run only the scenarios whose name starts with one of these (e.g. "04", "09-crash"); all
  // when empty.
  std::vector<std::string> only;
  std::string out_dir = "demo-out";
  NarratedRunOptions run;
};

// Runs every scenario of the library in file-name order, narrated, writes DIR/NAME.html for
// each and DIR/index.html linking them, and says where they are. Returns the exit code: 0 when
// every scenario met its expectations, 1 otherwise, 2 when the library cannot be read.
int run_demo(const DemoOptions& options, std::ostream& out, std::ostream& err);

// Returns the self-contained index page of a demo.
std::string render_demo_index(const std::vector<RunResult>& results);

}  // namespace inboxsim
