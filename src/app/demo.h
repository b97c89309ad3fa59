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

// Runs one scenario, narrating it to `out` as it happens when asked to; returns the result.
RunResult narrated_run(const Scenario& scenario, const NarratedRunOptions& options,
                       std::ostream& out);

struct DemoOptions {
  std::string scenario_dir;  // the teaching library
  // Run only the scenarios whose name starts with one of these (e.g. "04", "09-crash"), in the
  // order given; all of them, in the guide's lesson order, when empty.
  std::vector<std::string> only;
  std::string out_dir = "demo-out";
  NarratedRunOptions run;
};

// One block of a lesson: a title and the scenario numbers it shows, in the order to show them.
struct LessonBlock {
  std::string_view title;
  std::vector<std::string_view> numbers;  // "08" names the file 08-….json
};

// Returns the blocks of the teacher's guide, in class order.
const std::vector<LessonBlock>& lesson_blocks();

// Runs every scenario of the library in the guide's lesson order (files no block names last),
// after a legend of the terms the narration uses and with a break between blocks, narrated, writes DIR/NAME.html for
// each and DIR/index.html linking them, and says where they are. Returns the exit code: 0 when
// every scenario met its expectations, 1 otherwise, 2 when the library cannot be read.
int run_demo(const DemoOptions& options, std::ostream& out, std::ostream& err);

// Returns the self-contained index page of a demo.
std::string render_demo_index(const std::vector<RunResult>& results);

}  // namespace inboxsim
