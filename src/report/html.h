// A run as one self-contained HTML page for a classroom: a swimlane sequence diagram that can be
// stepped through event by event, live balances and saga states, and the run's verdicts.
//
// The page works from a file:// URL with no network: styles and the script are inline, the
// diagram is server-drawn SVG (so it shows even with scripts off), and the events are embedded
// as JSON in a non-executed <script type="application/json"> block, with every `<` escaped so
// that no event text can close it.
#pragma once

#include <string>
#include <string_view>

#include "domain/result.h"

namespace inboxsim {

// Returns the complete HTML document. Uses result.events (the run must have kept its trace),
// the title, description, lesson, balances, transfers, invariant verdicts and expectations.
std::string render_html(const RunResult& result);

// The pieces of the report that the playground (src/play) shows for one moment of a run: the
// embedded run data (events, their texts, balances, envelopes, the recorded rows), safe inside a
// <script> element, and the swimlane diagram (its lane header SVG, then the diagram SVG).
std::string report_data_json(const RunResult& result);
std::string report_swimlanes(const RunResult& result);

// Returns text safe inside HTML element content and attribute values.
std::string escape_html(std::string_view text);

}  // namespace inboxsim
