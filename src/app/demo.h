// Running scenarios in front of people: one scenario narrated live (what `run` does), and the
// whole teaching library in order with an HTML report per scenario and an index page (`demo`).
#pragma once

#include <algorithm>
#include <array>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/course.h"
#include "domain/result.h"
#include "domain/scenario.h"
#include "kernel/trace.h"
#include "report/narrate.h"

namespace inboxsim {

// The events a narrated run stops at until Enter (`run --step-on event` or `--step-on
// crash,dedupe_hit,violation`).
struct EventStops {
  bool every_event = false;
  std::array<bool, kEventKindCount> kinds{};
  bool any() const {
    return every_event || std::find(kinds.begin(), kinds.end(), true) != kinds.end();
  }
  bool at(EventKind kind) const { return every_event || kinds[static_cast<size_t>(kind)]; }
};

// Parses `--step-on`'s value: "event" (every event) or event kind names, comma-separated.
// Returns the error to print when a name is not one.
std::optional<std::string> parse_event_stops(std::string_view text, EventStops& stops);

struct NarratedRunOptions {
  bool narrate = true;            // print the timeline as it happens and the summary
  NarratorOptions narrator;       // colour, quiet
  bool pause_after_step = false;  // wait for Enter after each step (live demos)
  // Wait for Enter after each event of these kinds (`--step-on`; all when `every_event`).
  EventStops pause_on;
  std::optional<uint64_t> seed;   // overrides the scenario's seed
  std::string db_dir;             // keep the databases as files here
  bool record_rows = false;       // keep the tables event by event for an HTML report
  // Keep the events in the result (--trace, --html, --mermaid draw them); off, a run's memory
  // does not grow with its events (one looping to its event bound kept gigabytes).
  bool keep_trace = true;
  bool show_rows = false;         // print the changed rows under each event (--show-rows)
  // Called after each step with the steps played and the story's steps (a progress line).
  std::function<void(size_t steps_done, size_t steps_total)> on_step;
};

// Whether `event` is one `checkpoint` counts towards its occurrence: its kind, and the message
// type and transfer its match names.
bool checkpoint_selects(const Checkpoint& checkpoint, const TraceEvent& event);

// Runs one scenario, narrating it to `out` as it happens when asked to; returns the result.
// A checkpoint's question is printed after its event (and waited on when stepping).
RunResult narrated_run(const Scenario& scenario, const NarratedRunOptions& options,
                       std::ostream& out);

struct DemoOptions {
  std::string scenario_dir;  // the teaching library
  // Run only the scenarios whose name starts with one of these (e.g. "04", "09-crash"), in the
  // order given; all of them, in the guide's lesson order, when empty.
  std::vector<std::string> only;
  // Run this plan of app/course.h (`demo --plan 50min`) instead; not with `only`.
  std::string plan;
  std::string out_dir = "demo-out";
  NarratedRunOptions run;
};

// Runs the library's scenarios, narrated, in the guide's lesson order (files no block names
// last), or those of `only` in the order given, or a plan's: after a legend of the terms the
// narration uses, with a break naming each block and its minutes, and each lesson's explore
// runs (app/course.h) live after its scenario. Writes DIR/NAME.html for each scenario and
// DIR/index.html linking them, the explore runs' counterexamples under DIR/counterexamples, and
// says where they are. Returns the exit code: 0 when every scenario met its expectations and
// every explore run gave the verdict its lesson expects, 1 otherwise, 2 when the library cannot
// be read or the plan names a scenario it does not have.
int run_demo(const DemoOptions& options, std::ostream& out, std::ostream& err);

// Returns `inboxsim list` of `scenarios` (parsed from one folder): a "# Lesson block N of M:
// TITLE (K min)" line before each block of the guide, then one "NAME  K min  TITLE" line per
// scenario, in the guide's order; files no block names last, under "More stories".
std::string library_list_text(const std::vector<Scenario>& scenarios);

// One row of a demo's index page: a scenario's result, the block it was shown in, its minutes
// in class, and its explore runs' verdicts ("explore --faults 0: proven, 1580 states").
struct DemoIndexRow {
  const RunResult* result = nullptr;
  std::string block;
  int64_t minutes = 0;
  std::vector<std::string> explores;
};

// Returns the self-contained index page of a demo: the rows under a heading per block, with
// the block's minutes and each scenario's, and each description's "watch for" as a link to its
// event in the scenario's report (when the run kept its trace).
std::string render_demo_index(const std::vector<DemoIndexRow>& rows);

}  // namespace inboxsim
