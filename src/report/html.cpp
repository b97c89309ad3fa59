#include "report/html.h"

#include <algorithm>
#include <array>
#include <map>
#include <nlohmann/json.hpp>

#include "domain/messages.h"
#include "domain/participants.h"
#include "kernel/assert.h"
#include "report/description.h"
#include "report/glossary.h"
#include "report/html_parts.h"
#include "report/legend.h"
#include "report/mermaid.h"
#include "report/narrate.h"

namespace inboxsim {

std::string escape_html(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

namespace {

using html::kMessageColours;
using html::Lanes;
using html::Window;

// JSON embedded in a <script> element must never contain `</` (it would close the element) or
// `<!--` (it would change how the rest is parsed). In JSON text a `<` can only occur inside a
// string, where \u003c means the same character, so replacing every `<` is always safe.
std::string script_safe_json(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (const char c : json) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// ---- the embedded run data --------------------------------------------------------------------

nlohmann::json cells_json(const std::vector<Cell>& cells) {
  nlohmann::json out = nlohmann::json::array();
  for (const Cell& cell : cells) out.push_back(cell ? nlohmann::json(*cell) : nlohmann::json());
  return out;
}

// One change as [table, "+"|"~"|"-", key, after or null, before or null].
nlohmann::json change_json(const RowChange& change) {
  const char* op = change.op == RowOp::insert ? "+" : change.op == RowOp::update ? "~" : "-";
  return nlohmann::json::array(
      {change.table, op, change.key,
       change.after.empty() ? nlohmann::json() : cells_json(change.after),
       change.before.empty() ? nlohmann::json() : cells_json(change.before)});
}

// The tables behind the run: their columns, the opening rows, and the changes of each event
// that has any (by event index), so that the page replays them instead of storing copies.
// On a windowed page (`drawn` not every event) the opening rows are left out: each segment
// carries its own.
nlohmann::json rows_json(const RowHistory& rows, const std::vector<size_t>& drawn, bool complete) {
  nlohmann::json out = nlohmann::json::object();
  if (!rows.recorded) return out;
  nlohmann::json tables = nlohmann::json::array();
  for (const TableColumns& table : rows.tables) {
    tables.push_back(nlohmann::json::array({table.source, table.table, table.columns}));
  }
  nlohmann::json opening = nlohmann::json::array();
  if (complete) {
    for (const RowChange& change : rows.opening) opening.push_back(change_json(change));
  }
  // Keyed by the event's place among the drawn events (its trace index on a full page).
  nlohmann::json changes = nlohmann::json::object();
  for (size_t p = 0; p < drawn.size(); ++p) {
    const size_t i = drawn[p];
    if (i >= rows.by_event.size() || rows.by_event[i].empty()) continue;
    nlohmann::json list = nlohmann::json::array();
    for (const RowChange& change : rows.by_event[i]) list.push_back(change_json(change));
    changes[std::to_string(p)] = std::move(list);
  }
  out["tables"] = std::move(tables);
  out["opening"] = std::move(opening);
  out["changes"] = std::move(changes);
  return out;
}

// The invariants that apply to the run, in contract order; the page finds where each broke
// from the trace's violation events.
nlohmann::json invariants_json(const RunResult& result) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < kInvariantCount; ++i) {
    if (result.invariant_applies[i]) out.push_back(invariant_name(static_cast<Invariant>(i)));
  }
  return out;
}

// ---- which events the page draws ------------------------------------------------------------
// A story of thousands of transfers has a hundred thousand events: drawn in full, its page
// weighed 130 MB and no browser opened it. Past kDrawnEventsMax the page draws a window: the
// first and last events, and the events around every notable one (a crash, a redelivery, a
// dedupe hit, a violation ...), violations first; the rest are folded into grey bands that say
// what they held, and the page says so above the diagram.
constexpr size_t kDrawnEventsMax = 3000;
constexpr size_t kWindowHeadEvents = 600;
constexpr size_t kWindowTailEvents = 400;
constexpr size_t kContextBeforeEvents = 12;
constexpr size_t kContextAfterEvents = 24;

// Routine events: what every transfer does when nothing goes wrong.
bool is_routine(const TraceEvent& event) {
  switch (event.kind) {
    case EventKind::step:
    case EventKind::request:
    case EventKind::ack:
    case EventKind::confirm:
    case EventKind::effect:
    case EventKind::saga:
    case EventKind::dedupe_record:
    case EventKind::notification:
    case EventKind::cleanup: return true;
    case EventKind::publish: return event.service != participant::operator_;
    case EventKind::deliver: return !event.redelivered;
    default: return false;
  }
}

// Marks [from, to) as drawn while the budget lasts; returns false when it ran out first.
bool keep_range(std::vector<bool>& keep, size_t& kept, size_t from, size_t to) {
  size_t wanted = 0;
  for (size_t i = from; i < to; ++i) wanted += keep[i] ? size_t{0} : size_t{1};
  if (kept + wanted > kDrawnEventsMax) return false;
  for (size_t i = from; i < to; ++i) keep[i] = true;
  kept += wanted;
  return true;
}

Window choose_window(const std::vector<TraceEvent>& events) {
  Window window;
  window.total = events.size();
  for (const TraceEvent& event : events)
    window.notable += is_routine(event) ? size_t{0} : size_t{1};
  if (events.size() <= kDrawnEventsMax) {
    for (size_t i = 0; i < events.size(); ++i) window.drawn.push_back(i);
    window.notable_drawn = window.notable;
    return window;
  }
  std::vector<bool> keep(events.size(), false);
  size_t kept = 0;
  keep_range(keep, kept, 0, kWindowHeadEvents);
  keep_range(keep, kept, events.size() - kWindowTailEvents, events.size());
  // Violations first, then every other notable event, each with its context, in trace order.
  for (const bool violations : {true, false}) {
    for (size_t i = 0; i < events.size(); ++i) {
      if (is_routine(events[i]) || (events[i].kind == EventKind::violation) != violations) continue;
      const size_t from = i >= kContextBeforeEvents ? i - kContextBeforeEvents : 0;
      keep_range(keep, kept, from, std::min(events.size(), i + kContextAfterEvents + 1));
    }
  }
  for (size_t i = 0; i < events.size(); ++i) {
    if (!keep[i]) continue;
    window.drawn.push_back(i);
    window.notable_drawn += is_routine(events[i]) ? size_t{0} : size_t{1};
  }
  return window;
}

// A run of consecutive drawn events: where it starts among the drawn ones.
std::vector<size_t> segment_starts(const Window& window) {
  std::vector<size_t> starts;
  for (size_t p = 0; p < window.drawn.size(); ++p) {
    if (p == 0 || window.drawn[p] != window.drawn[p - 1] + 1) starts.push_back(p);
  }
  return starts;
}

// What a windowed page needs to replay each segment on its own: the balances and the states of
// the transfers it touches as they were before its first event, each table's row count then,
// and (as opening inserts) the rows its events change as they were before.
nlohmann::json segments_json(const RunResult& result, const Window& window) {
  nlohmann::json out = nlohmann::json::array();
  if (window.complete()) return out;
  std::map<std::string, int64_t> balances = result.opening_balances;
  std::map<std::string, std::string> sagas;
  std::vector<int64_t> counts(result.rows.tables.size(), 0);
  for (const RowChange& change : result.rows.opening) ++counts[change.table];
  const auto count_changes = [&](size_t index) {
    if (index >= result.rows.by_event.size()) return;
    for (const RowChange& change : result.rows.by_event[index]) {
      if (change.op == RowOp::insert) ++counts[change.table];
      if (change.op == RowOp::remove) --counts[change.table];
    }
  };
  size_t next = 0;  // the next trace index not yet replayed
  const std::vector<size_t> starts = segment_starts(window);
  for (size_t s = 0; s < starts.size(); ++s) {
    const size_t first = window.drawn[starts[s]];
    for (; next < first; ++next) {
      const TraceEvent& event = result.events[next];
      if (event.kind == EventKind::effect) balances[event.account] += event.amount;
      if (event.kind == EventKind::request) sagas[event.transfer] = "REQUESTED";
      if (event.kind == EventKind::saga) sagas[event.transfer] = event.saga_to;
      count_changes(next);
    }
    const size_t end = s + 1 < starts.size() ? starts[s + 1] : window.drawn.size();
    nlohmann::json touched_sagas = nlohmann::json::object();
    std::map<std::pair<size_t, int64_t>, bool> seen_rows;
    nlohmann::json opening = nlohmann::json::array();
    // The first segment starts from the opening rows (the story's accounts), as a full page does.
    if (first == 0) {
      for (const RowChange& change : result.rows.opening) {
        seen_rows.emplace(std::make_pair(change.table, change.key), true);
        opening.push_back(change_json(change));
      }
    }
    for (size_t p = starts[s]; p < end; ++p) {
      const size_t index = window.drawn[p];
      const TraceEvent& event = result.events[index];
      if (!event.transfer.empty() && !touched_sagas.contains(event.transfer)) {
        const auto found = sagas.find(event.transfer);
        touched_sagas[event.transfer] = found == sagas.end() ? "—" : found->second;
      }
      if (index >= result.rows.by_event.size()) continue;
      for (const RowChange& change : result.rows.by_event[index]) {
        if (!seen_rows.emplace(std::make_pair(change.table, change.key), true).second) continue;
        if (change.op == RowOp::insert) continue;  // not there before the segment
        RowChange before = change;
        before.op = RowOp::insert;
        before.after = change.before;
        before.before.clear();
        opening.push_back(change_json(before));
      }
    }
    out.push_back({{"at", starts[s]},
                   {"balances", balances},
                   {"sagas", touched_sagas},
                   {"counts", counts},
                   {"opening", std::move(opening)}});
  }
  return out;
}

// The events are embedded in their canonical trace form (the same bytes as --trace), so the
// page shows exactly what the JSONL file holds. A windowed page carries the drawn events only,
// their trace numbers, and each segment's starting state.
std::string run_data_json(const RunResult& result, const Window& window) {
  std::string events = "[";
  nlohmann::json texts = nlohmann::json::array();
  nlohmann::json numbers = nlohmann::json::array();
  std::map<std::string, std::string> routing;
  const bool jetstream = ran_on_jetstream(result);
  for (size_t p = 0; p < window.drawn.size(); ++p) {
    const TraceEvent& event = result.events[window.drawn[p]];
    if (p > 0) events += ",";
    events += trace_event_json(event);
    texts.push_back(describe_event(event, jetstream));
    numbers.push_back(window.drawn[p]);
    if (!event.type.empty() && !event.message_id.empty()) {
      if (const auto type = parse_message_type(event.type)) {
        routing[std::string(event.type)] = std::string(routing_key(*type));
      }
    }
  }
  events += "]";
  nlohmann::json opening(result.opening_balances);
  nlohmann::json final_balances(result.balances);
  nlohmann::json transfers = nlohmann::json::array();
  if (window.complete()) {
    for (const auto& [id, state] : result.transfers) transfers.push_back(id);
  }
  nlohmann::json envelopes = nlohmann::json::object();
  for (const size_t index : window.drawn) {
    const std::string& id = result.events[index].message_id;
    if (id.empty() || envelopes.contains(id)) continue;
    const auto found = result.envelopes.find(id);
    if (found != result.envelopes.end()) envelopes[id] = nlohmann::json::parse(found->second);
  }
  nlohmann::json rows = rows_json(result.rows, window.drawn, window.complete());
  std::string out =
      "{\"events\":" + events + ",\"text\":" + texts.dump() + ",\"opening\":" + opening.dump() +
      ",\"final\":" + final_balances.dump() + ",\"transfers\":" + transfers.dump() +
      ",\"passed\":" + (result.passed ? "true" : "false") +
      ",\"invariants\":" + invariants_json(result).dump() + ",\"envelopes\":" + envelopes.dump() +
      ",\"routing\":" + nlohmann::json(routing).dump() + ",\"rows\":" + rows.dump();
  // The page names a delivery's metadata as the run's broker does (RabbitMQ's when absent).
  if (jetstream) out += ",\"broker\":\"jetstream\"";
  if (!window.complete()) {
    out += ",\"total\":" + std::to_string(window.total) + ",\"number\":" + numbers.dump() +
           ",\"segments\":" + segments_json(result, window).dump();
  }
  return script_safe_json(out + "}");
}

Window full_window(const RunResult& result) {
  Window all;
  all.total = result.events.size();
  for (size_t i = 0; i < result.events.size(); ++i) all.drawn.push_back(i);
  return all;
}

// ---- page -------------------------------------------------------------------------------------

// The description's first sentence, the rest behind "more": on a projector's 720 lines the
// diagram must show in the first view. A first sentence longer than kLeadCharsMax is cut at a
// word, with an ellipsis that goes when the rest opens.
constexpr size_t kLeadCharsMin = 40;
constexpr size_t kLeadCharsMax = 190;

std::string folded_description(const std::string& description) {
  if (description.empty()) return {};
  size_t cut = std::string::npos;
  for (size_t i = kLeadCharsMin; i + 1 < description.size() && i < kLeadCharsMax; ++i) {
    const char c = description[i];
    if (c != '.' && c != '?' && c != '!') continue;
    size_t after = i + 1;
    if (description[after] == '\'' || description[after] == '"') ++after;
    if (after < description.size() && description[after] == ' ') {
      cut = after;
      break;
    }
  }
  bool mid_sentence = false;
  if (cut == std::string::npos) {
    if (description.size() <= kLeadCharsMax) {
      return "<p class=\"description\">" + escape_html(description) + "</p>";
    }
    cut = description.rfind(' ', kLeadCharsMax);
    if (cut == std::string::npos || cut < kLeadCharsMin) cut = kLeadCharsMax;
    // Not inside a UTF-8 sequence.
    while (cut > 0 && (static_cast<unsigned char>(description[cut]) & 0xC0) == 0x80) --cut;
    mid_sentence = true;
  }
  if (cut >= description.size() - 1) {
    return "<p class=\"description\">" + escape_html(description) + "</p>";
  }
  return "<details class=\"description\" id=\"description\"><summary><span class=\"lead\">" +
         escape_html(description.substr(0, cut)) + "</span>" +
         (mid_sentence ? "<span class=\"ellipsis\">…</span>" : "") +
         " <span class=\"more\"></span></summary><span class=\"rest\">" +
         escape_html(description.substr(cut)) + "</span></details>";
}

std::string page_header(const RunResult& result) {
  const std::string verdict = result.passed ? "PASS" : "FAIL";
  std::string out = "<header><div class=\"titlebar\"><h1>" +
                    escape_html(result.title.empty() ? result.name : result.title) +
                    "</h1><span class=\"verdict " + (result.passed ? "pass" : "fail") + "\">" +
                    verdict + "</span>";
  // Whether the expectations were met, and beside it what became of the bank.
  const std::string bank = bank_verdict(result);
  out += std::string("<span class=\"bank ") + (bank == "bank correct" ? "ok" : "broke") +
         "\" title=\"what became of the bank, whatever the story expected\">" + escape_html(bank) +
         "</span></div>";
  out += "<p class=\"meta\">" + escape_html(result.name) + " · seed " +
         std::to_string(result.seed) +
         (result.trace_hash.empty() ? "" : " · trace " + escape_html(result.trace_hash)) + "</p>";
  out += folded_description(result.description);
  out += description_parts_html(result.description_parts, result.events);
  if (!result.lesson.empty()) {
    out += "<p class=\"lesson\"><b>Lesson</b> " + escape_html(result.lesson) + "</p>";
  }
  return out + "</header>";
}

std::string controls() {
  return "<nav class=\"controls\" id=\"controls\">"
         "<button id=\"b-first\" title=\"start (Home)\">⇤</button>"
         "<button id=\"b-prev\" title=\"previous event (←)\">◀</button>"
         "<button id=\"b-play\" class=\"play\" title=\"play / pause (space)\">▶ play</button>"
         "<button id=\"b-next\" title=\"next event (→)\">▶</button>"
         "<button id=\"b-last\" title=\"end (End)\">⇥</button>"
         "<input id=\"scrub\" type=\"range\" min=\"-1\" value=\"-1\" aria-label=\"position\">"
         "<span id=\"counter\" class=\"counter\"></span>"
         "<button id=\"b-violation\" class=\"jump\" title=\"jump to the first violation (v)\" "
         "hidden>‼ first violation</button>"
         "<div id=\"now\" class=\"now\"></div></nav>";
}

// Said above the diagram when it draws a window of the run's events.
std::string window_notice(const Window& window) {
  if (window.complete()) return {};
  return "<p class=\"window\" id=\"window-notice\"><b>A window of the run.</b> Of its " +
         std::to_string(window.total) + " events the diagram draws " +
         std::to_string(window.drawn.size()) + ": the first " + std::to_string(kWindowHeadEvents) +
         ", the last " + std::to_string(kWindowTailEvents) + " and those around " +
         std::to_string(window.notable_drawn) + " of " + std::to_string(window.notable) +
         " notable ones (crash, redelivery, copy, dedupe, fault; violations first); grey bands "
         "fold the rest. <code>--trace</code> writes them all.</p>";
}

// How to read the diagram: what the colours and the bars on the lanes mean.
std::string diagram_key() {
  const auto swatch = [](const char* fill, const char* what) {
    return std::string(
               "<span><svg width=\"14\" height=\"28\" aria-hidden=\"true\"><rect x=\"1\" "
               "y=\"1\" width=\"12\" height=\"26\" rx=\"4\" fill=\"") +
           fill + "\" fill-opacity=\"0.35\" stroke=\"" + fill + "\" stroke-width=\"1.5\"/></svg>" +
           what + "</span>";
  };
  std::string colours;
  for (size_t i = 0; i < 5; ++i) {
    colours += std::string("<i style=\"background:") + kMessageColours[i] + "\"></i>";
  }
  return "<section class=\"key\"><h2>Reading the diagram</h2><div class=\"keys\">"
         "<span><b class=\"chips\">" +
         colours +
         "</b>one colour per message id: a copy or a "
         "redelivery wears the colour of the message it repeats</span>" +
         swatch("#868e96", "an instance down, from its crash until its restart") +
         swatch("#f59f00", "an instance paused (a GC pause, a stalled disk)") +
         swatch("#7048e8", "a handler waiting for a row lock another handler holds") +
         "</div></section>\n";
}

// The panel beside the diagram, in the order a learner reads it: did anything break, what
// happened, what the tables hold now, then the balances and sagas in large type.
std::string side_panel() {
  return "<aside class=\"panel\" id=\"panel\">"
         "<h2>Invariants <small id=\"inv-when\"></small></h2><div id=\"live-invariants\" "
         "class=\"badges\"></div>"
         "<h2>Event</h2><table id=\"live-event\" class=\"fields\"></table>"
         "<div id=\"live-envelope\" class=\"envelope\" hidden><div class=\"props\" "
         "id=\"live-props\"></div><pre class=\"body\" id=\"live-body\"></pre></div>"
         "<h2>Tables <small>after this event</small><button id=\"b-wide\" class=\"wide-toggle\" "
         "title=\"give the panel more room (w)\">⇔ wider</button></h2>"
         "<div id=\"live-tables\"></div>"
         "<h2>Balances <small id=\"bal-when\"></small></h2><table id=\"live-balances\"></table>"
         "<h2>Transfers</h2><table id=\"live-sagas\"></table>"
         "<p class=\"hint\">← → step · shift+← → jump a step · space play · v first violation · "
         "click a row</p></aside>";
}

}  // namespace

// The playground replays every event of its (short) runs: no window.
std::string report_data_json(const RunResult& result) {
  return run_data_json(result, full_window(result));
}

std::string report_swimlanes(const RunResult& result) {
  const Lanes lanes{diagram_participants(result)};
  return html::render_lane_header(lanes) +
         html::render_swimlanes(result, lanes, full_window(result));
}

std::string render_html(const RunResult& result) {
  const Lanes lanes{diagram_participants(result)};
  const Window window = choose_window(result.events);
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>" +
      escape_html(result.title.empty() ? result.name : result.title) +
      " · inboxsim</title><style>\n" + html::kReportStyle + "</style></head><body>\n";
  out += page_header(result) + controls();
  out += "<main class=\"stage\" id=\"stage\"><div class=\"diagram\" id=\"diagram\">" +
         window_notice(window) + html::render_lane_header(lanes) +
         html::render_swimlanes(result, lanes, window) + "</div>" + side_panel() + "</main>\n";
  out += "<section class=\"results\">" + html::render_result_tables(result) + "</section>\n";
  // What happened to the money, then the words the page uses.
  const bool correct = bank_verdict(result) == "bank correct";
  out += std::string("<p class=\"money ") + (correct ? "money-ok" : "money-broke") + "\">" +
         escape_html(money_sentence(result)) + "</p>\n" + diagram_key() + legend_html() +
         glossary_html();
  out += "<footer>" + escape_html(verdict_line(result)) + " · drawn by inboxsim</footer>\n";
  out += "<script type=\"application/json\" id=\"run-data\">" + run_data_json(result, window) +
         "</script>\n<script>\n" + html::kReportScript + "</script>\n</body></html>\n";
  return out;
}

}  // namespace inboxsim
