// The HTML report's parts, shared by the files that draw it (src/report/html.cpp: the page and
// the run data; html_tables.cpp: the tables; html_swimlanes.cpp: the diagram; html_assets.cpp:
// the page's style sheet and script, embedded from report_page.css and report_page.js). Not an
// interface: only those files include it.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "domain/result.h"

namespace inboxsim::html {

// The page's only style sheet and script, inline so that the file works offline, from a USB
// stick on a classroom projector.
extern const char* const kReportStyle;
extern const char* const kReportScript;

// Diagram geometry, in SVG user units, which are pixels: the report draws the SVG at its own
// size. Five lanes (the story without a second instance) fit beside the panel at 1280 px.
inline constexpr int kTimeColumnWidth = 70;
inline constexpr int kLaneGap = 146;

// Message colours, in the order the messages first appear: colour-blind-safe neighbours apart,
// none of them the red that marks a loss or a violation (the diagram's key shows the first five).
inline constexpr std::array<const char*, 10> kMessageColours = {
    "#1971c2", "#2f9e44", "#e8590c", "#9c36b5", "#0c8599",
    "#d6336c", "#66a80f", "#4263eb", "#e67700", "#495057"};

// The events the page draws: all of them, or a window of a long story (html.cpp says which).
struct Window {
  std::vector<size_t> drawn;  // trace indices, ascending
  size_t total = 0;           // events in the trace
  size_t notable = 0;         // notable events in the trace
  size_t notable_drawn = 0;   // of which drawn
  bool complete() const { return drawn.size() == total; }
};

// The diagram's lanes, one per participant, left to right.
struct Lanes {
  std::vector<std::string> names;

  int count() const { return static_cast<int>(names.size()); }
  int width() const { return kTimeColumnWidth + count() * kLaneGap; }
  int index(std::string_view name) const {
    const auto found = std::find(names.begin(), names.end(), name);
    return found == names.end() ? -1 : static_cast<int>(found - names.begin());
  }
  int x(int lane) const { return kTimeColumnWidth + kLaneGap / 2 + lane * kLaneGap; }
};

// The lanes' names, drawn above the diagram (they stay in view while it scrolls).
std::string render_lane_header(const Lanes& lanes);
// The diagram: a row per drawn event, a grey band for each stretch the window leaves out.
std::string render_swimlanes(const RunResult& result, const Lanes& lanes, const Window& window);

// The tables under the diagram: balances, transfers, invariants, expectations, counters
// (html_tables.cpp).
std::string render_result_tables(const RunResult& result);

}  // namespace inboxsim::html
