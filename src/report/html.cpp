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

// Diagram geometry, in SVG user units, which are pixels: the report draws the SVG at its own
// size. Five lanes (the story without a second instance) fit beside the panel at 1280 px.
constexpr int kTimeColumnWidth = 70;
constexpr int kLaneGap = 146;
// A lane name longer than this is set a size smaller (12 px), so that it fits its box.
constexpr size_t kLaneNameCharsMax = 16;
constexpr int kHeaderHeight = 50;
constexpr int kRowHeight = 30;
constexpr int kBodyPadding = 8;
// Average advance of one label character, in SVG units, at the label font size (a little more
// than DejaVu Sans needs, so that bold labels fit too).
constexpr int kLabelCharWidth = 9;

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

struct Window {
  std::vector<size_t> drawn;  // trace indices, ascending
  size_t total = 0;           // events in the trace
  size_t notable = 0;         // notable events in the trace
  size_t notable_drawn = 0;   // of which drawn
  bool complete() const { return drawn.size() == total; }
};

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
      if (event.kind == EventKind::saga) {
        const size_t arrow = event.detail.rfind("->");
        sagas[event.transfer] =
            arrow == std::string::npos ? event.detail : event.detail.substr(arrow + 2);
      }
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
  for (size_t p = 0; p < window.drawn.size(); ++p) {
    const TraceEvent& event = result.events[window.drawn[p]];
    if (p > 0) events += ",";
    events += trace_event_json(event);
    texts.push_back(describe_event(event));
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

// ---- the swimlane diagram ---------------------------------------------------------------------

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

std::string lane_colour(std::string_view full_name) {
  // Every instance of a service wears the service's colour.
  const std::string_view name = participant_base(full_name);
  if (name == participant::client) return "#5c677d";
  if (name == participant::transfer_service) return "#6741d9";
  if (name == participant::relay) return "#9775fa";
  if (name == participant::notifications) return "#845ef7";
  if (name == participant::broker) return "#e8590c";
  if (name == participant::account_service) return "#1971c2";
  if (name == participant::operator_) return "#c92a2a";
  return "#495057";
}

std::string num(int value) { return std::to_string(value); }

// The tooltip: every field of the event, one per line, as the trace records it.
// `envelope` is the message's JSON body, or empty.
std::string event_tooltip(const TraceEvent& event, std::string_view envelope) {
  std::string text =
      std::string(event_kind_name(event.kind)) + " at " + std::to_string(event.time_ms) + " ms";
  auto field = [&text](std::string_view name, std::string_view value) {
    if (!value.empty()) text += "\n" + std::string(name) + ": " + std::string(value);
  };
  field("from", event.service);
  field("to", event.target);
  field("messageId", event.message_id);
  field("type", event.type);
  field("transferId", event.transfer);
  if (event.delivery_tag != 0) {
    text += "\ndelivery tag: " + std::to_string(event.delivery_tag) +
            "\nredelivered: " + (event.redelivered ? "true" : "false") + "\nx-delivery-count: " +
            // RabbitMQ adds the header only once a quorum queue has had the message back.
            (event.delivery_count > 0 ? std::to_string(event.delivery_count)
                                      : std::string("none (a first delivery, or a classic queue)"));
  }
  field("account", event.account);
  if (event.amount != 0) text += "\namount: " + std::to_string(event.amount);
  field("detail", event.detail);
  if (!envelope.empty()) {
    text += "\n\nenvelope (message body):\n" + nlohmann::ordered_json::parse(envelope).dump(2);
  }
  return escape_html(text);
}

struct ArrowStyle {
  std::string css_class;
  std::string label;
};

ArrowStyle arrow_style(const TraceEvent& event) {
  const std::string what =
      std::string(event.type) + (event.transfer.empty() ? "" : " " + event.transfer);
  const std::string tag = "tag " + std::to_string(event.delivery_tag);
  switch (event.kind) {
    case EventKind::request:
      return {"a-request", "request " + event.transfer + ": " + event.detail + " " +
                               std::to_string(event.amount)};
    case EventKind::publish:
      if (event.service == participant::operator_) {
        return {"a-operator", "publish COPY " + what + " (" + event.message_id + ")"};
      }
      // A `duplicate` fault's copy that the story says the broker or the network made.
      if (event.service == participant::broker) {
        return {"a-copy", "broker COPY " + what + " (" + event.message_id + ", same id)"};
      }
      if (event.service == participant::network) {
        return {"a-copy", "network COPY " + what + " (" + event.message_id + ", same id)"};
      }
      return {"a-publish", "publish " + what + " (" + event.message_id + ")"};
    case EventKind::deliver:
      if (event.redelivered) {
        // A classic queue counts nothing: its redeliveries carry no x-delivery-count.
        const std::string count =
            event.delivery_count > 0 ? " (x-delivery-count " + std::to_string(event.delivery_count) + ")" : "";
        return {"a-redeliver",
                "REDELIVERED" + count + " · " + what + " (" + event.message_id + ", " + tag + ")"};
      }
      return {"a-deliver", "deliver " + what + " (" + event.message_id + ", " + tag + ")"};
    case EventKind::ack: return {"a-ack", "ack " + tag};
    case EventKind::ack_lost: return {"a-lost", "ack " + tag + " LOST"};
    case EventKind::ack_void: return {"a-lost", "ack " + tag + " VOID (closed channel)"};
    case EventKind::publish_nacked: return {"a-lost", "publish NACKED " + what};
    case EventKind::redrive:
      return {"a-operator", "REDRIVE " + what + " (" + event.message_id + ")"};
    case EventKind::nack:
      return {"a-lost", "nack " + tag + (event.detail.empty() ? "" : ": " + event.detail)};
    case EventKind::confirm: return {"a-confirm", "confirm " + event.message_id};
    case EventKind::confirm_lost: return {"a-lost", "confirm " + event.message_id + " LOST"};
    default: return {"", ""};
  }
}

std::string svg_text(int x, int y, std::string_view anchor, std::string_view css_class,
                     std::string_view text) {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" + std::string(anchor) +
         "\" class=\"" + std::string(css_class) + "\">" + escape_html(text) + "</text>";
}

// Characters of a label, counted as UTF-8 code points.
int label_chars(const std::string& label) {
  int chars = 0;
  for (const char c : label) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++chars;
  }
  return chars;
}

std::string fit_label(const std::string& label, int room);

// An arrow's label is centred over the arrow unless that would push it past an edge of the
// diagram (a long REDELIVERED label towards the rightmost lane): then it is pinned to that edge,
// and cut only if it is wider than the whole diagram.
std::string arrow_label(const ArrowStyle& style, const Lanes& lanes, int from, int to, int y) {
  const int left = kTimeColumnWidth + 4;
  const int right = lanes.width() - 4;
  const std::string label = fit_label(style.label, right - left);
  const int half_width = label_chars(label) * kLabelCharWidth / 2;
  const int centre = (from + to) / 2;
  if (centre + half_width > right) {
    return svg_text(right, y, "end", "lbl " + style.css_class, label);
  }
  if (centre - half_width < left)
    return svg_text(left, y, "start", "lbl " + style.css_class, label);
  return svg_text(centre, y, "middle", "lbl " + style.css_class, label);
}

std::string render_arrow(const TraceEvent& event, const Lanes& lanes, int y,
                         std::string_view message_colour) {
  const ArrowStyle style = arrow_style(event);
  const int from = lanes.x(std::max(0, lanes.index(event.service)));
  const int to = lanes.x(std::max(0, lanes.index(event.target)));
  const int mid_y = y + kRowHeight / 2;
  const bool lost = style.css_class == "a-lost";
  // Every arrow of one message wears the message's colour, so that a copy or a redelivery
  // looks like the message it repeats.
  const std::string colour =
      message_colour.empty() ? "" : " msg\" style=\"--m:" + std::string(message_colour);
  if (from == to) {
    // A copy the broker makes of a message it holds: a loop out of its lane and back.
    const int loop_x = from + kLaneGap / 3;
    std::string out = "<path class=\"arrow " + style.css_class + colour + "\" fill=\"none\" d=\"M" +
                      num(from) + " " + num(mid_y - 2) + " H" + num(loop_x) + " V" +
                      num(mid_y + 8) + " H" + num(from + 4) + "\" marker-end=\"url(#head)\"/>";
    return out + arrow_label(style, lanes, from, loop_x + kLaneGap / 2, mid_y - 6);
  }
  std::string out = "<line class=\"arrow " + style.css_class + colour + "\" x1=\"" + num(from) +
                    "\" y1=\"" + num(mid_y + 6) + "\" x2=\"" + num(to) + "\" y2=\"" +
                    num(mid_y + 6) + "\" marker-end=\"url(#" + (lost ? "cross" : "head") + ")\"/>";
  out += arrow_label(style, lanes, from, to, mid_y + 1);
  return out;
}

// "REQUESTED->DEBITED" reads better on a screen as "REQUESTED → DEBITED".
std::string arrowed(std::string text) {
  if (const size_t at = text.find("->"); at != std::string::npos) text.replace(at, 2, " → ");
  return text;
}

struct MarkerStyle {
  std::string css_class;
  std::string symbol;
  std::string label;
};

MarkerStyle marker_style(const TraceEvent& event) {
  switch (event.kind) {
    case EventKind::effect:
      return {event.amount < 0 ? "m-debit" : "m-credit", event.amount < 0 ? "−" : "+",
              event.account + " " + (event.amount > 0 ? "+" : "") + std::to_string(event.amount) +
                  "  " + event.detail + " " + event.transfer};
    case EventKind::dedupe_hit:
      return {"m-dedupe", "✓", event.detail + " (" + event.message_id + ") — acked without effect"};
    case EventKind::crash:
      return {
          "m-crash", "✖",
          "CRASH at " + event.detail +
              (event.type.empty() ? ""
                                  : " handling " + std::string(event.type) + " " + event.transfer)};
    case EventKind::restart: return {"m-restart", "↻", "restart, committed data intact"};
    case EventKind::dedupe_record: return {"m-note", "✎", event.detail};
    case EventKind::dead_letter:
      return {"m-crash", "☠",
              "DEAD-LETTERED " + std::string(event.type) + " " + event.transfer + " (" +
                  event.message_id + "): " + event.detail};
    case EventKind::dropped:
      return {"m-crash", "✗",
              "DROPPED " + std::string(event.type) + " " + event.transfer + " (" +
                  event.message_id + "): " + event.detail};
    case EventKind::requeue:
      return {"m-warn", "↺", "requeue " + event.message_id + ": " + event.detail};
    case EventKind::saga: return {"m-saga", "◆", event.transfer + "  " + arrowed(event.detail)};
    case EventKind::illegal_transition: return {"m-crash", "!", "refused " + event.detail};
    case EventKind::consumer_fault: return {"m-crash", "⚠", "fault: " + event.detail};
    case EventKind::rejected:
      return {"m-warn", "✗", "rejected " + event.transfer + ": " + event.detail};
    case EventKind::notification:
      return {"m-saga", "✉", "notify " + event.transfer + ": " + event.detail};
    case EventKind::connection_closed: return {"m-warn", "⚡", "connection closed: " + event.detail};
    case EventKind::index_dropped: return {"m-crash", "✂", "index dropped: " + event.detail};
    case EventKind::index_restored: return {"m-note", "⟲", "index " + event.detail};
    case EventKind::recovered: return {"m-warn", "⟳", event.detail};
    case EventKind::cleanup:
      return {"m-note", "⌫", "cleanup deleted " + std::to_string(event.amount) + " row(s)"};
    default: return {"m-note", "•", describe_event(event)};
  }
}

// Returns `label`, cut at a UTF-8 character boundary with an ellipsis if it is wider than
// `room` SVG units.
std::string fit_label(const std::string& label, int room) {
  const auto max_chars = static_cast<size_t>(std::max(8, room / kLabelCharWidth));
  size_t chars = 0;
  for (size_t i = 0; i < label.size(); ++i) {
    if ((static_cast<unsigned char>(label[i]) & 0xC0) == 0x80) continue;  // continuation byte
    if (++chars == max_chars) return label.substr(0, i) + "\u2026";
  }
  return label;
}

std::string render_marker(const TraceEvent& event, const Lanes& lanes, int y) {
  const MarkerStyle style = marker_style(event);
  const int lane = std::max(0, lanes.index(event.service));
  const int x = lanes.x(lane);
  const int mid_y = y + kRowHeight / 2;
  // Labels go towards the wider side of the picture, so that long ones are not cut off.
  const bool leftwards = x * 100 > lanes.width() * 55;
  std::string out = "<circle class=\"dot " + style.css_class + "\" cx=\"" + num(x) + "\" cy=\"" +
                    num(mid_y) + "\" r=\"10\"/>";
  out += svg_text(x, mid_y + 5, "middle", "sym", style.symbol);
  // A label longer than the room on its side is cut; the row's tooltip keeps the whole text.
  const int room = leftwards ? x - 16 - kTimeColumnWidth : lanes.width() - x - 16;
  out += svg_text(leftwards ? x - 16 : x + 16, mid_y + 5, leftwards ? "end" : "start",
                  "lbl " + style.css_class, fit_label(style.label, room));
  return out;
}

// Steps, clock jumps and violations concern the whole system, so they span every lane.
std::string render_band(const TraceEvent& event, const Lanes& lanes, int y, int step_number) {
  std::string css_class = "b-step";
  std::string label = "Step " + std::to_string(step_number) + " · " + event.detail;
  if (event.kind == EventKind::advance) {
    css_class = "b-advance";
    label = "⇥ virtual clock runs on " + human_duration(event.amount) + ", until " +
            human_duration(event.time_ms + event.amount);
  } else if (event.kind == EventKind::violation) {
    css_class = "b-violation";
    label = "‼ VIOLATION  " + event.detail;
  }
  std::string out = "<rect class=\"band " + css_class + "\" x=\"2\" y=\"" + num(y + 2) +
                    "\" width=\"" + num(lanes.width() - 4) + "\" height=\"" + num(kRowHeight - 4) +
                    "\" rx=\"5\"/>";
  // Band labels are bold and larger than the others: a tenth less room in characters. The
  // row's tooltip and the panel keep the whole text.
  const int room = (lanes.width() - kTimeColumnWidth - 12) * 9 / 10;
  out += svg_text(kTimeColumnWidth + 6, y + kRowHeight / 2 + 5, "start", "bandlbl " + css_class,
                  fit_label(label, room));
  return out;
}

bool is_band(EventKind kind) {
  return kind == EventKind::step || kind == EventKind::advance || kind == EventKind::violation;
}

std::string render_row(const TraceEvent& event, std::string_view envelope, const Lanes& lanes,
                       size_t index, int y, int step_number, bool show_time,
                       std::string_view message_colour) {
  std::string out = "<g class=\"ev k-" + std::string(event_kind_name(event.kind)) + "\" data-i=\"" +
                    std::to_string(index) + "\"><title>" + event_tooltip(event, envelope) +
                    "</title>";
  out += "<rect class=\"hit\" x=\"0\" y=\"" + num(y) + "\" width=\"" + num(lanes.width()) +
         "\" height=\"" + num(kRowHeight) + "\"/>";
  if (show_time) {
    out += svg_text(kTimeColumnWidth - 10, y + kRowHeight / 2 + 5, "end", "time",
                    std::to_string(event.time_ms) + " ms");
  }
  if (is_band(event.kind)) {
    out += render_band(event, lanes, y, step_number);
  } else if (is_message_event(event.kind)) {
    out += render_arrow(event, lanes, y, message_colour);
  } else {
    out += render_marker(event, lanes, y);
  }
  return out + "</g>\n";
}

std::string svg_defs() {
  return "<defs>"
         "<marker id=\"head\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"14\" "
         "markerHeight=\"14\" markerUnits=\"userSpaceOnUse\" orient=\"auto-start-reverse\"><path "
         "d=\"M0,0 L10,5 L0,10 z\" "
         "fill=\"context-stroke\"/></marker>"
         "<marker id=\"cross\" viewBox=\"0 0 10 10\" refX=\"5\" refY=\"5\" markerWidth=\"18\" "
         "markerHeight=\"18\" markerUnits=\"userSpaceOnUse\"><path d=\"M1,1 L9,9 M9,1 L1,9\" "
         "stroke=\"#e03131\" "
         "stroke-width=\"2.2\"/></marker>"
         "</defs>";
}

// The lane headers are a separate SVG above the scrolling body, so that they stay in view.
std::string render_lane_header(const Lanes& lanes) {
  std::string out = "<svg id=\"lanes-head\" class=\"lanes-head\" width=\"" + num(lanes.width()) +
                    "\" height=\"" + num(kHeaderHeight) + "\" viewBox=\"0 0 " + num(lanes.width()) +
                    " " + num(kHeaderHeight) + "\" preserveAspectRatio=\"xMinYMin meet\">";
  out += svg_text(kTimeColumnWidth - 10, kHeaderHeight / 2 + 5, "end", "time", "time");
  for (int lane = 0; lane < lanes.count(); ++lane) {
    const std::string& name = lanes.names[static_cast<size_t>(lane)];
    const int box_width = kLaneGap - 10;
    out += "<rect class=\"lanebox\" x=\"" + num(lanes.x(lane) - box_width / 2) +
           "\" y=\"8\" width=\"" + num(box_width) + "\" height=\"" + num(kHeaderHeight - 16) +
           "\" rx=\"8\" fill=\"" + lane_colour(name) + "\"/>";
    out += svg_text(lanes.x(lane), kHeaderHeight / 2 + 5, "middle",
                    name.size() > kLaneNameCharsMax ? "lanename long" : "lanename", name);
  }
  return out + "</svg>";
}

// Message colours, in the order the messages first appear: colour-blind-safe neighbours apart,
// none of them the red that marks a loss or a violation.
constexpr std::array<const char*, 10> kMessageColours = {"#1971c2", "#2f9e44", "#e8590c", "#9c36b5",
                                                         "#0c8599", "#d6336c", "#66a80f", "#4263eb",
                                                         "#e67700", "#495057"};

// A time span on one lane: an instance down after a crash until its restart, a pause until it
// goes on, a handler waiting for a row lock that another holds until it gets it.
struct LaneSpan {
  int lane = 0;
  size_t from = 0;  // drawn position of the event that opens it
  size_t to = 0;    // drawn position of the event that closes it (the last row if none does)
  std::string css_class;
  std::string label;
};

std::vector<LaneSpan> lane_spans(const RunResult& result, const Lanes& lanes,
                                 const std::vector<size_t>& drawn) {
  std::vector<LaneSpan> spans;
  // Open spans by (lane, kind): the index into `spans`.
  std::map<std::pair<int, std::string>, size_t> open;
  const auto close = [&](int lane, const std::string& kind, size_t p) {
    const auto found = open.find({lane, kind});
    if (found == open.end()) return;
    spans[found->second].to = p;
    open.erase(found);
  };
  for (size_t p = 0; p < drawn.size(); ++p) {
    const TraceEvent& event = result.events[drawn[p]];
    const int lane = lanes.index(event.service);
    if (lane < 0) continue;
    const auto start = [&](const std::string& kind, std::string label) {
      if (open.count({lane, kind}) != 0) return;
      open[{lane, kind}] = spans.size();
      spans.push_back(LaneSpan{lane, p, drawn.size() - 1, "s-" + kind, std::move(label)});
    };
    switch (event.kind) {
      case EventKind::crash:
        close(lane, "pause", p);
        close(lane, "lock", p);
        start("down", "down");
        break;
      case EventKind::restart: close(lane, "down", p); break;
      case EventKind::paused: start("pause", "paused"); break;
      case EventKind::resumed: close(lane, "pause", p); break;
      case EventKind::lock_wait: start("lock", "waits for a row lock"); break;
      case EventKind::lock_granted: close(lane, "lock", p); break;
      default: break;
    }
  }
  return spans;
}

constexpr int kSpanWidth = 14;

int row_middle(size_t slot) {
  return kBodyPadding + static_cast<int>(slot) * kRowHeight + kRowHeight / 2;
}

// Drawn over the rows, without catching the pointer: the rows below stay clickable. The fill is
// given as attributes too, so that the playground (its own style sheet) draws them alike.
std::string render_span(const LaneSpan& span, const Lanes& lanes,
                        const std::vector<size_t>& slots) {
  const int x = lanes.x(span.lane) - kSpanWidth / 2;
  const int y = row_middle(slots[span.from]);
  const int height = std::max(kRowHeight / 2, row_middle(slots[span.to]) - y);
  const char* fill = span.css_class == "s-down"    ? "#868e96"
                     : span.css_class == "s-pause" ? "#f59f00"
                                                   : "#7048e8";
  std::string out = "<g class=\"span " + span.css_class + "\" data-a=\"" +
                    std::to_string(span.from) + "\" data-b=\"" + std::to_string(span.to) +
                    "\" pointer-events=\"none\">";
  out += "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(kSpanWidth) +
         "\" height=\"" + num(height) + "\" rx=\"4\" fill=\"" + fill +
         "\" fill-opacity=\"0.35\" stroke=\"" + fill + "\" stroke-width=\"1.5\"/>";
  // The label runs down the bar when there is room for it.
  const int label_room = label_chars(span.label) * 8 + 24;
  if (height >= label_room) {
    const int lx = x + kSpanWidth / 2 + 4;
    const int ly = y + 12;
    out += "<text class=\"spanlbl\" x=\"" + num(lx) + "\" y=\"" + num(ly) +
           "\" transform=\"rotate(90 " + num(lx) + " " + num(ly) + ")\">" +
           escape_html(span.label) + "</text>";
  }
  return out + "</g>";
}

// A band for the events a windowed page leaves out: how many, which span of the trace, and
// the kinds they were.
std::string render_gap(const RunResult& result, size_t first, size_t last, const Lanes& lanes,
                       int y) {
  std::map<std::string_view, size_t> kinds;
  for (size_t i = first; i <= last; ++i) ++kinds[event_kind_name(result.events[i].kind)];
  std::vector<std::pair<size_t, std::string_view>> by_count;
  for (const auto& [kind, count] : kinds) by_count.emplace_back(count, kind);
  std::stable_sort(by_count.begin(), by_count.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string what;
  for (size_t k = 0; k < by_count.size() && k < 4; ++k) {
    what += (k == 0 ? "" : ", ") + std::to_string(by_count[k].first) + " " +
            std::string(by_count[k].second);
  }
  const std::string label = "⋯ " + std::to_string(last - first + 1) + " events not drawn (#" +
                            std::to_string(first + 1) + "–#" + std::to_string(last + 1) + ", " +
                            std::to_string(result.events[first].time_ms) + "–" +
                            std::to_string(result.events[last].time_ms) + " ms): " + what;
  const int room = (lanes.width() - kTimeColumnWidth - 12) * 9 / 10;
  return "<g class=\"gap\"><rect class=\"band b-gap\" x=\"2\" y=\"" + num(y + 2) + "\" width=\"" +
         num(lanes.width() - 4) + "\" height=\"" + num(kRowHeight - 4) +
         "\" rx=\"5\" fill=\"#e9ecef\"/>" +
         svg_text(kTimeColumnWidth + 6, y + kRowHeight / 2 + 5, "start", "bandlbl b-gap",
                  fit_label(label, room)) +
         "</g>\n";
}

std::string render_swimlanes(const RunResult& result, const Lanes& lanes, const Window& window) {
  const std::vector<size_t>& drawn = window.drawn;
  // Each drawn event's row slot: one more for every gap before it.
  std::vector<size_t> slots(drawn.size());
  size_t gaps = 0;
  for (size_t p = 0; p < drawn.size(); ++p) {
    const size_t previous_end = p == 0 ? 0 : drawn[p - 1] + 1;
    if (drawn[p] > previous_end) ++gaps;
    slots[p] = p + gaps;
  }
  const bool tail_gap = !drawn.empty() && drawn.back() + 1 < result.events.size();
  const size_t slot_count = drawn.size() + gaps + (tail_gap ? 1 : 0);
  const int height = kBodyPadding * 2 + static_cast<int>(slot_count) * kRowHeight;
  // Drawn at its own size (one unit a pixel): text keeps its size whatever the lane count, and
  // a wide diagram scrolls sideways.
  std::string out = "<svg id=\"swimlanes\" class=\"swimlanes\" width=\"" + num(lanes.width()) +
                    "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(lanes.width()) + " " +
                    num(height) + "\" role=\"img\" aria-label=\"" +
                    "sequence diagram of the run\" data-row-height=\"" + num(kRowHeight) + "\">" +
                    svg_defs();
  for (int lane = 0; lane < lanes.count(); ++lane) {
    out += "<line class=\"lane\" x1=\"" + num(lanes.x(lane)) + "\" y1=\"0\" x2=\"" +
           num(lanes.x(lane)) + "\" y2=\"" + num(height) + "\" stroke=\"" +
           lane_colour(lanes.names[static_cast<size_t>(lane)]) + "\"/>";
  }
  std::map<std::string, std::string_view> colours;
  int step_number = 0;
  size_t next_index = 0;  // for counting steps inside gaps
  int64_t last_time_ms = -1;
  for (size_t p = 0; p < drawn.size(); ++p) {
    const size_t i = drawn[p];
    for (; next_index < i; ++next_index) {
      if (result.events[next_index].kind == EventKind::step) ++step_number;
    }
    if (p > 0 ? i > drawn[p - 1] + 1 : i > 0) {
      out += render_gap(result, p == 0 ? 0 : drawn[p - 1] + 1, i - 1, lanes,
                        kBodyPadding + static_cast<int>(slots[p] - 1) * kRowHeight);
      last_time_ms = -1;
    }
    const TraceEvent& event = result.events[i];
    if (event.kind == EventKind::step) ++step_number;
    next_index = i + 1;
    const int y = kBodyPadding + static_cast<int>(slots[p]) * kRowHeight;
    std::string_view envelope;
    std::string_view colour;
    if (is_message_event(event.kind) && !event.message_id.empty()) {
      const auto found = result.envelopes.find(event.message_id);
      if (found != result.envelopes.end()) envelope = found->second;
      const auto known = colours.find(event.message_id);
      colour = known != colours.end()
                   ? known->second
                   : colours
                         .emplace(event.message_id,
                                  kMessageColours[colours.size() % kMessageColours.size()])
                         .first->second;
    }
    out += render_row(event, envelope, lanes, p, y, step_number, event.time_ms != last_time_ms,
                      colour);
    last_time_ms = event.time_ms;
  }
  if (tail_gap) {
    out += render_gap(result, drawn.back() + 1, result.events.size() - 1, lanes,
                      kBodyPadding + static_cast<int>(slot_count - 1) * kRowHeight);
  }
  for (const LaneSpan& span : lane_spans(result, lanes, drawn))
    out += render_span(span, lanes, slots);
  return out + "</svg>";
}

// ---- tables -----------------------------------------------------------------------------------

std::string cell(std::string_view text, std::string_view css_class = "") {
  if (css_class.empty()) return "<td>" + escape_html(text) + "</td>";
  return "<td class=\"" + std::string(css_class) + "\">" + escape_html(text) + "</td>";
}

std::string signed_text(int64_t amount) { return (amount > 0 ? "+" : "") + std::to_string(amount); }

std::string balances_table(const RunResult& result) {
  std::string out =
      "<section class=\"card\"><h2>Balances</h2><table><thead><tr><th>account</th>"
      "<th class=\"n\">opening</th><th class=\"n\">final</th><th class=\"n\">change"
      "</th></tr></thead><tbody>";
  for (const auto& [account, final_balance] : result.balances) {
    const auto opening = result.opening_balances.find(account);
    const int64_t start = opening == result.opening_balances.end() ? 0 : opening->second;
    const int64_t change = final_balance - start;
    out += "<tr>" + cell(account) + cell(std::to_string(start), "n") +
           cell(std::to_string(final_balance), "n") +
           cell(change == 0 ? "" : signed_text(change), change < 0 ? "n neg" : "n pos") + "</tr>";
  }
  return out + "</tbody></table></section>";
}

// A long story lists its first kTransfersListedMax transfers (open ones first) and counts the
// rest by state: the page stays the same size whatever the story's length.
constexpr size_t kTransfersListedMax = 100;

std::string transfers_table(const RunResult& result) {
  std::string out =
      "<section class=\"card\"><h2>Transfers</h2><table><thead><tr><th>transfer</th>"
      "<th class=\"n\">amount</th><th>saga state</th></tr></thead><tbody>";
  std::vector<std::pair<std::string, SagaState>> listed;
  std::map<std::string, size_t> unlisted;
  for (const bool open : {true, false}) {
    for (const auto& [id, state] : result.transfers) {
      if (is_terminal(state) == open) continue;
      if (listed.size() < kTransfersListedMax) {
        listed.emplace_back(id, state);
      } else {
        ++unlisted[std::string(saga_state_name(state))];
      }
    }
  }
  std::stable_sort(listed.begin(), listed.end(), [&](const auto& a, const auto& b) {
    return result.transfers.size() <= kTransfersListedMax && a.first < b.first;
  });
  for (const auto& [id, state] : listed) {
    const auto amount = result.transfer_amounts.find(id);
    const std::string name(saga_state_name(state));
    out +=
        "<tr>" + cell(id) +
        cell(amount == result.transfer_amounts.end() ? "" : std::to_string(amount->second), "n") +
        cell(name, is_terminal(state) ? "state" : "state open") + "</tr>";
  }
  if (!unlisted.empty()) {
    std::string counts;
    for (const auto& [state, count] : unlisted) {
      counts += (counts.empty() ? "" : ", ") + std::to_string(count) + " " + state;
    }
    out += "<tr><td colspan=\"3\" class=\"more-rows\">and " +
           std::to_string(result.transfers.size() - listed.size()) +
           " more: " + escape_html(counts) + "</td></tr>";
  }
  return out + "</tbody></table></section>";
}

std::string invariants_table(const RunResult& result) {
  std::string out = "<section class=\"card\"><h2>Invariants</h2><table><tbody>";
  for (size_t i = 0; i < kInvariantCount; ++i) {
    if (!result.invariant_applies[i]) continue;
    const auto invariant = static_cast<Invariant>(i);
    const auto broken = std::find_if(result.violations.begin(), result.violations.end(),
                                     [&](const Violation& v) { return v.invariant == invariant; });
    const bool held = broken == result.violations.end();
    out += "<tr>" + cell(invariant_name(invariant), "mono") +
           cell(held ? "held" : "VIOLATED", held ? "ok" : "bad") +
           cell(held ? "" : broken->detail + " (at " + std::to_string(broken->time_ms) + " ms)") +
           "</tr>";
  }
  return out + "</tbody></table></section>";
}

std::string expectations_table(const RunResult& result) {
  std::string out = "<section class=\"card\"><h2>Expectations</h2><table><tbody>";
  if (result.expectations.empty()) out += "<tr><td>none stated</td></tr>";
  for (const ExpectationResult& expectation : result.expectations) {
    out += "<tr>" + cell(expectation.what, "mono") +
           cell(expectation.ok ? "ok" : "FAILED", expectation.ok ? "ok" : "bad") +
           cell(expectation.detail) + "</tr>";
  }
  return out + "</tbody></table></section>";
}

// The dead-letter and error queues: how many messages went in, and which still wait there.
std::string parked_section(const RunResult& result) {
  if (result.dead_letter_queues.empty()) return {};
  std::string html = "<div class=\"parked\"><b>Error and dead-letter queues</b><ul>";
  for (const auto& [queue, count] : result.dead_letter_queues) {
    html += "<li>" + escape_html(queue) + ": " + std::to_string(count) + " moved in</li>";
  }
  for (const std::string& waiting : result.parked) {
    html += "<li>still waiting: " + escape_html(waiting) + "</li>";
  }
  return html + "</ul></div>";
}

std::string counters_line(const RunResult& result) {
  const Stats& s = result.stats;
  auto item = [](std::string_view name, int64_t value) {
    return "<span><b>" + std::to_string(value) + "</b> " + std::string(name) + "</span>";
  };
  return "<section class=\"card wide counters\">" + item("published", s.published) +
         item("deliveries", s.deliveries) + item("redelivered", s.redeliveries) +
         item("acks", s.acks) + item("dedupe hits", s.dedupe_hits) + item("effects", s.effects) +
         item("crashes", s.crashes) + item("transactions", s.transactions) +
         item("dead-lettered", s.dead_lettered) + item("to error queues", s.error_queued) +
         (s.dropped > 0 ? item("dropped", s.dropped) : std::string()) +
         item("virtual ms", result.virtual_ms) + parked_section(result) + "</section>";
}

// ---- page -------------------------------------------------------------------------------------

// The page's only style sheet and script. They are inline so that the file works offline,
// from a USB stick on a classroom projector.
constexpr const char* kStyle = R"CSS(
:root{--ink:#1f2430;--muted:#5c677d;--line:#dee2e6;--bg:#f4f6f9}
*{box-sizing:border-box}
body{margin:0;font:17px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--ink);background:var(--bg)}
header{padding:16px 28px 10px;background:#fff;border-bottom:1px solid var(--line)}
.titlebar{display:flex;align-items:center;gap:16px}
h1{font-size:28px;margin:0;line-height:1.2}
.verdict{font-weight:800;padding:2px 14px;border-radius:6px;color:#fff;font-size:18px;letter-spacing:.05em}
.verdict.pass{background:#2b8a3e}.verdict.fail{background:#c92a2a}
.bank{font-weight:700;padding:2px 10px;border-radius:6px;border:2px solid;font-size:16px;margin-left:8px}
.bank.ok{color:#2b8a3e;border-color:#2b8a3e}.bank.broke{color:#c92a2a;border-color:#c92a2a}
.meta{color:var(--muted);margin:2px 0 6px;font-size:14px;font-family:"DejaVu Sans Mono",monospace}
.description{margin:6px 0;max-width:1150px}
details.description summary{cursor:pointer;list-style:none}
details.description summary::-webkit-details-marker{display:none}
.description .more::before{content:"more ▾";color:#1971c2;font-weight:700;font-size:15px;white-space:nowrap}
details.description[open] .more::before{content:"less ▴"}
details.description[open] .ellipsis{display:none}
details.description .rest{display:inline}
.parts p{margin:4px 0;max-width:1150px}.parts b{margin-right:6px}
.parts .watch{padding:4px 12px;background:#e7f5ff;border-left:5px solid #1971c2;border-radius:0 6px 6px 0}
.parts .watch a{color:#1864ab;font-weight:600}.parts .watch .at{font-weight:400;color:var(--muted)}
.lesson{margin:8px 0 4px;padding:8px 14px;background:#fff9db;border-left:5px solid #f59f00;max-width:1150px;border-radius:0 6px 6px 0}
.lesson b{color:#a05a00;margin-right:6px}
.controls{position:sticky;top:0;z-index:6;flex-wrap:wrap;display:flex;align-items:center;gap:8px;padding:8px 28px;background:#1f2430;color:#fff}
.controls button{font:inherit;font-size:16px;min-width:44px;padding:4px 10px;border:0;border-radius:6px;background:#3b4252;color:#fff;cursor:pointer}
.controls button:hover{background:#4c566a}
.controls .play{min-width:96px;background:#1971c2}
#scrub{width:200px;accent-color:#ffd43b}
.controls .jump{background:#c92a2a}.controls .jump[hidden]{display:none}
.counter{font-family:"DejaVu Sans Mono",monospace;font-size:14px;min-width:150px;color:#ced4da}
.now{flex:1;min-width:0;font-family:"DejaVu Sans Mono",monospace;font-size:15px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;color:#ffe066}
.stage{display:grid;grid-template-columns:minmax(0,1fr) 460px;gap:16px;padding:14px 28px}
@media (max-width:1400px){.stage{grid-template-columns:minmax(0,1fr) 400px;gap:12px;padding:12px 18px}}
body.wide-panel .stage{grid-template-columns:minmax(0,1fr) min(800px,58vw)}
.wide-toggle{float:right;font:600 13px system-ui,sans-serif;letter-spacing:0;text-transform:none;padding:2px 8px;border:1px solid var(--line);border-radius:6px;background:#f1f3f5;color:var(--ink);cursor:pointer}
body.wide-panel .wide-toggle{background:#ffd43b}
.diagram{background:#fff;border:1px solid var(--line);border-radius:10px;align-self:start;overflow:auto;max-height:calc(100vh - var(--bar,52px) - 22px);min-width:0}
.lanes-head{display:block;box-sizing:content-box;border-bottom:1px solid var(--line);position:sticky;top:0;z-index:4;background:#fff}
.swimlanes{display:block}
.window{margin:0;padding:8px 12px;background:#fff4e6;border-bottom:1px solid #ffd8a8;font-size:15px;position:sticky;left:0;max-width:min(100%,900px)}
.window code{font-size:14px}
line.arrow.msg,path.arrow.msg{stroke:var(--m);stroke-width:3}
.spanlbl{font-size:12px;font-weight:700;fill:#343a40}
.stepping .span.future{opacity:.12}
.band.b-gap{fill:#e9ecef;stroke:#ced4da;stroke-dasharray:4 3}.bandlbl.b-gap{fill:#495057;font-weight:600}
svg text{font-family:system-ui,"DejaVu Sans",sans-serif;font-size:14px;fill:var(--ink)}
.lanename{fill:#fff;font-weight:700;font-size:13px}.lanename.long{font-size:12px}
.lane{stroke-width:1.5;stroke-dasharray:5 5;opacity:.5}
.time{fill:#868e96;font-size:12px;font-family:"DejaVu Sans Mono",monospace}
.hit{fill:transparent}
.ev{cursor:pointer}
.ev:hover .hit{fill:#f1f3f5}
.ev.cur .hit{fill:#ffec99}
.stepping .ev.future{opacity:.15}
.lbl{paint-order:stroke;stroke:#fff;stroke-width:4px;stroke-linejoin:round}
.ev:hover .lbl{stroke:#f1f3f5}.ev.cur .lbl{stroke:#ffec99}
.arrow{stroke-width:2;stroke:#495057}
line.a-request{stroke:#5c677d}.lbl.a-request{fill:#343a40}
line.a-publish{stroke:#7048e8}.lbl.a-publish{fill:#5f3dc4}
line.a-deliver{stroke:#1971c2}.lbl.a-deliver{fill:#1864ab}
line.a-redeliver{stroke:#e8590c;stroke-width:3}.lbl.a-redeliver{fill:#d9480f;font-weight:700}
line.a-operator{stroke:#c92a2a;stroke-width:2.5}.lbl.a-operator{fill:#c92a2a;font-weight:700}
line.a-copy,path.a-copy{stroke:#c92a2a;stroke-width:2.5;stroke-dasharray:8 3}.lbl.a-copy{fill:#c92a2a;font-weight:700}
line.a-ack{stroke:#2f9e44;stroke-dasharray:6 4}.lbl.a-ack{fill:#2b8a3e}
line.a-confirm{stroke:#868e96;stroke-dasharray:6 4}.lbl.a-confirm{fill:#5c677d}
line.a-lost{stroke:#e03131;stroke-dasharray:3 4}.lbl.a-lost{fill:#e03131;font-weight:700}
.dot{stroke:#fff;stroke-width:2}
.sym{fill:#fff;font-weight:700;font-size:13px}
.m-debit{fill:#e03131}.lbl.m-debit{fill:#c92a2a;font-weight:700;font-size:15px}
.m-credit{fill:#2f9e44}.lbl.m-credit{fill:#2b8a3e;font-weight:700;font-size:15px}
.m-dedupe{fill:#0c8599}.lbl.m-dedupe{fill:#0b7285;font-weight:700}
.m-crash{fill:#c92a2a}.lbl.m-crash{fill:#c92a2a;font-weight:800}
.m-restart{fill:#2f9e44}.lbl.m-restart{fill:#2b8a3e;font-weight:700}
.m-warn{fill:#f08c00}.lbl.m-warn{fill:#d9480f}
.m-saga{fill:#7048e8}.lbl.m-saga{fill:#5f3dc4}
.m-note{fill:#868e96}.lbl.m-note{fill:#495057}
.band{stroke-width:1}
.bandlbl{font-weight:700;font-size:15px}
.band.b-step{fill:#e7f0fb;stroke:#a5c8f0}.bandlbl.b-step{fill:#1c3d6e}
.band.b-advance{fill:#f8f9fa;stroke:#adb5bd;stroke-dasharray:5 4}.bandlbl.b-advance{fill:#495057}
.band.b-violation{fill:#c92a2a;stroke:#a51111}.bandlbl.b-violation{fill:#fff}
.ev.cur .band{stroke:#f59f00;stroke-width:3}
.panel{position:sticky;top:calc(var(--bar,52px) + 8px);max-height:calc(100vh - var(--bar,52px) - 16px);overflow-y:auto;align-self:start;background:#fff;border:1px solid var(--line);border-radius:10px;padding:8px 16px 10px}
.panel h2{font-size:14px;margin:10px 0 4px;text-transform:uppercase;letter-spacing:.06em;color:var(--muted)}
.panel h2 small{text-transform:none;letter-spacing:0;font-weight:400;font-size:13px}
.panel table{width:100%;border-collapse:collapse;font-size:17px}
.panel td{padding:3px 6px;border-bottom:1px solid #f1f3f5}
.panel td.n{text-align:right;font-family:"DejaVu Sans Mono",monospace}
.panel tr.changed td{background:#ffec99;font-weight:700}
.panel .fields td{font-size:13px;font-family:"DejaVu Sans Mono",monospace;overflow-wrap:anywhere}
.panel .fields td:first-child{color:var(--muted);white-space:nowrap;width:1%}
.hint{font-size:12px;color:var(--muted);margin:10px 0 0}
.envelope{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1.25fr);gap:8px;font:12px/1.35 "DejaVu Sans Mono",monospace;background:#f8f9fa;border:1px solid var(--line);border-radius:6px;padding:6px 8px;margin:6px 0 0}
.envelope[hidden]{display:none}
.envelope .props{border-right:1px solid var(--line);padding-right:8px}
.envelope .props b,.envelope .body b{display:block;font:700 12px system-ui,sans-serif;color:var(--muted);text-transform:uppercase;letter-spacing:.04em;margin-bottom:2px}
.envelope .props div{overflow-wrap:anywhere}
.envelope .props .k{color:var(--muted)}
.envelope .props .v{font-weight:700}
.envelope .props .v.yes{color:#d9480f}
.envelope .body{margin:0;white-space:pre-wrap;overflow-wrap:anywhere;font:inherit}
.badges{display:flex;flex-wrap:wrap;gap:4px}
.badge{font:12px/1.2 "DejaVu Sans Mono",monospace;padding:3px 7px;border-radius:10px;background:#d3f9d8;color:#2b8a3e;border:1px solid #8ce99a}
.badge.broken{background:#c92a2a;color:#fff;border-color:#a51111;font-weight:700}
.badge.here{outline:3px solid #f59f00}
.source{font-size:13px;font-weight:700;margin:10px 0 2px;color:#fff;padding:2px 8px;border-radius:5px}
.dbt{margin:4px 0 8px;overflow-x:auto}
.dbt.scrolls{box-shadow:inset -14px 0 10px -8px rgba(31,36,48,.35)}
.dbt .cue{font:700 12px system-ui,sans-serif;color:#d9480f;margin-left:6px}
.dbt .cap{font:12px "DejaVu Sans Mono",monospace;color:var(--muted)}
.dbt .cap b{color:var(--ink)}
.panel .dbt table{font:12px/1.3 "DejaVu Sans Mono",monospace;width:auto;min-width:100%}
.panel .dbt th{text-align:left;font-weight:600;color:var(--muted);padding:2px 5px;border-bottom:1px solid var(--line);white-space:nowrap}
.panel .dbt td{padding:2px 5px;white-space:nowrap;border-bottom:1px solid #f1f3f5}
.panel .dbt td.null{color:#adb5bd}
.panel .dbt tr.ins td{background:#d3f9d8}
.panel .dbt tr.upd td{background:#fff3bf}.panel .dbt tr.upd td.diff{background:#ffd43b;font-weight:700}
.panel .dbt tr.del td{background:#ffe3e3;text-decoration:line-through;color:#c92a2a}
.untouched{font-size:12px;color:var(--muted);margin:2px 0 6px}
.results{display:grid;grid-template-columns:1fr 1fr;gap:16px;padding:0 28px 16px}
@media (max-width:900px){.results,.stage{grid-template-columns:1fr}}
.card{background:#fff;border:1px solid var(--line);border-radius:10px;padding:10px 16px;min-width:0;overflow-x:auto}
.card h2{font-size:19px;margin:4px 0 8px}
.card table{width:100%;border-collapse:collapse}
.card th{text-align:left;font-size:13px;color:var(--muted);font-weight:600;border-bottom:2px solid var(--line);padding:4px 6px}
.card td{padding:5px 6px;border-bottom:1px solid #f1f3f5;vertical-align:top;overflow-wrap:break-word}
.n{text-align:right;font-variant-numeric:tabular-nums}
.neg{color:#c92a2a}.pos{color:#2b8a3e}
.ok{color:#2b8a3e;font-weight:700}.bad{color:#c92a2a;font-weight:800}
.state{font-weight:700}.state.open{color:#e8590c}
.mono{font-family:"DejaVu Sans Mono",monospace;font-size:14px}
.mono,.ok,.bad,.state{white-space:nowrap}
.wide{grid-column:1/-1}
.counters{display:flex;flex-wrap:wrap;gap:6px 24px;font-size:15px;color:var(--muted)}
.counters b{color:var(--ink);font-size:18px}
.money{margin:0 28px 16px;padding:12px 18px;background:#fff;border:1px solid var(--line);border-left:6px solid #2b8a3e;border-radius:10px;font-size:18px}
.money.money-broke{border-left-color:#c92a2a;background:#fff5f5;color:#a51111;font-weight:600}
.key,.legend,.glossary{margin:0 28px 16px;padding:10px 18px;background:#fff;border:1px solid var(--line);border-radius:10px}
.key h2,.legend h2,.glossary h2{font-size:19px;margin:4px 0 8px}
.glossary summary{cursor:pointer;font-size:17px;font-weight:700;color:#1c3d6e}
.glossary dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:4px 18px;margin:8px 0 0;font-size:15px}
.glossary dt{font:700 14px "DejaVu Sans Mono",monospace;color:#1c3d6e;padding-top:2px}
.glossary dd{margin:0;color:var(--ink)}
.glossary .see{color:#52606d;font-size:13px}
.keys{display:flex;flex-wrap:wrap;gap:8px 28px;font-size:15px}
.keys span{display:inline-flex;align-items:center;gap:8px}
.chips i{display:inline-block;width:14px;height:14px;border-radius:50%;margin-right:2px}
.legend dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:4px 18px;margin:0;font-size:15px}
.legend dt{font:700 14px "DejaVu Sans Mono",monospace;color:#1c3d6e;padding-top:2px}
.legend dd{margin:0;color:var(--ink)}
.more-rows{color:var(--muted);font-style:italic}
footer{padding:0 28px 24px;color:var(--muted);font-size:13px;font-family:"DejaVu Sans Mono",monospace}
@media print{.controls,.panel{display:none}.stage{grid-template-columns:1fr}.lanes-head{position:static}.diagram{max-height:none;overflow:visible}}
)CSS";

constexpr const char* kScript = R"JS(
(function () {
  'use strict';
  // Errors are collected for the self-test (report.html#selftest), which fails on any.
  var errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message)); });
  var data = JSON.parse(document.getElementById('run-data').textContent);
  var events = data.events, count = events.length, cur = -1, timer = null;
  var byId = function (id) { return document.getElementById(id); };
  var svg = byId('swimlanes'), scrub = byId('scrub'), laneHead = byId('lanes-head');
  var controls = byId('controls'), panel = byId('panel'), diagram = byId('diagram');
  var rows = Array.prototype.slice.call(svg.querySelectorAll('g.ev'));
  var spans = Array.prototype.slice.call(svg.querySelectorAll('g.span'));
  scrub.max = String(count - 1);
  // A windowed page (a long run) draws some of the trace's events: `number` gives each drawn
  // event's place in the trace, `segments` the state before each run of consecutive ones.
  var numbers = data.number || null, total = data.total || count, segments = data.segments || null;
  function numberOf(i) { return numbers ? numbers[i] : i; }
  function positionOf(n) {
    if (!numbers) return n;
    for (var i = 0; i < count; i++) if (numbers[i] >= n) return i;
    return count - 1;
  }
  function segmentOf(i) {
    if (!segments) return null;
    var found = segments[0];
    segments.forEach(function (s) { if (s.at <= i) found = s; });
    return found;
  }

  function esc(text) {
    return String(text).replace(/[&<>"]/g, function (c) {
      return {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'}[c];
    });
  }

  // Where each invariant first broke, from the trace's violation events ("name: detail").
  var brokenAt = {}, firstViolation = -1;
  events.forEach(function (e, i) {
    if (e.kind !== 'violation') return;
    var name = (e.detail || '').split(':')[0];
    if (!(name in brokenAt)) brokenAt[name] = i;
    if (firstViolation < 0) firstViolation = i;
  });

  // ---- the tables, replayed from the recorded changes ------------------------------------------
  var spec = data.rows.tables || [], opening = data.rows.opening || [],
      changes = data.rows.changes || {};
  var tables = [], tablesAt = -1, touched = {}, counts = [], tablesSegment = null;
  function apply(change, undo) {
    var rowsOf = tables[change[0]], key = change[2], op = change[1];
    if (undo) {
      if (op === '+') { delete rowsOf[key]; counts[change[0]]--; } else {
        if (op === '-') counts[change[0]]++;
        rowsOf[key] = change[4];
      }
    } else {
      if (op === '-') { delete rowsOf[key]; counts[change[0]]--; } else {
        if (op === '+') counts[change[0]]++;
        rowsOf[key] = change[3];
      }
    }
  }
  // The tables before the first event of segment `seg` (the whole run on a full page).
  function resetTables(seg) {
    tables = spec.map(function () { return {}; });
    counts = spec.map(function () { return 0; });
    (seg ? seg.opening : opening).forEach(function (c) { apply(c, false); touched[c[0]] = true; });
    if (seg) counts = seg.counts.slice();
    tablesSegment = seg;
    tablesAt = seg ? seg.at - 1 : -1;
  }
  Object.keys(changes).forEach(function (i) {
    changes[i].forEach(function (c) { touched[c[0]] = true; });
  });
  (segments || []).forEach(function (seg) {
    seg.opening.forEach(function (c) { touched[c[0]] = true; });
    seg.counts.forEach(function (n, t) { if (n > 0) touched[t] = true; });
  });
  resetTables(segmentOf(0));
  // Moves the replayed tables to "after event `upto`": forwards by applying, backwards by undoing.
  function tablesTo(upto) {
    var seg = segmentOf(Math.max(upto, 0));
    if (seg !== tablesSegment) resetTables(seg);
    while (tablesAt < upto) {
      tablesAt++;
      (changes[tablesAt] || []).forEach(function (c) { apply(c, false); });
    }
    while (tablesAt > upto) {
      (changes[tablesAt] || []).slice().reverse().forEach(function (c) { apply(c, true); });
      tablesAt--;
    }
  }
  var sourceColour = {'account-service': '#1971c2', 'transfer-service': '#6741d9',
                      'broker': '#e8590c'};
  function cellHtml(value, diff) {
    var cls = (value === null ? 'null' : '') + (diff ? ' diff' : '');
    return '<td' + (cls.trim() ? ' class="' + cls.trim() + '"' : '') + '>' +
           (value === null ? 'NULL' : esc(value)) + '</td>';
  }
  function tableHtml(index, now) {
    var columns = spec[index][2], present = tables[index], marks = {};
    now.forEach(function (c) { if (c[0] === index) marks[c[2]] = c; });
    var keys = Object.keys(present).concat(Object.keys(marks).filter(function (k) {
      return !(k in present);
    })).map(Number).sort(function (a, b) { return a - b; });
    var shown = keys.map(function (k) {
      var mark = marks[k];
      return {key: k, mark: mark, values: k in present ? present[k] : mark[4]};
    });
    // Columns that are NULL in every row shown are left out: the panel is narrow.
    var used = columns.map(function (_, c) {
      return shown.some(function (r) { return r.values[c] !== null && r.values[c] !== ''; });
    });
    var n = counts[index], inView = Object.keys(present).length;
    var head = '<div class="cap"><b>' + esc(spec[index][1]) + '</b> · ' + n + ' row' +
               (n === 1 ? '' : 's') + (segments && inView < n ? ' (' + inView + ' shown: those these events touch)' : '') +
               '</div>';
    if (!shown.length) return '<div class="dbt">' + head + '</div>';
    var html = '<div class="dbt">' + head + '<table><tr>' + columns.map(function (name, c) {
      return used[c] ? '<th>' + esc(name) + '</th>' : '';
    }).join('') + '</tr>';
    shown.forEach(function (r) {
      var cls = !r.mark ? '' : r.mark[1] === '+' ? 'ins' : r.mark[1] === '~' ? 'upd' : 'del';
      html += '<tr data-key="' + r.key + '"' + (cls ? ' class="' + cls + '"' : '') + '>' +
              r.values.map(function (v, c) {
                if (!used[c]) return '';
                var diff = cls === 'upd' && r.mark[4] && r.mark[4][c] !== v;
                return cellHtml(v, diff);
              }).join('') + '</tr>';
    });
    return html + '</table></div>';
  }
  function renderTables(upto) {
    if (!spec.length) { byId('live-tables').innerHTML = '<p class="hint">not recorded</p>'; return; }
    tablesTo(upto);
    var now = upto >= 0 ? (changes[upto] || []) : [], html = '', source = null, idle = [];
    spec.forEach(function (t, index) {
      if (t[0] !== source) {
        if (idle.length) html += '<div class="untouched">empty all run: ' + esc(idle.join(', ')) + '</div>';
        idle = [];
        source = t[0];
        html += '<div class="source" style="background:' + (sourceColour[source] || '#495057') +
                '">' + esc(source) + '</div>';
      }
      if (!touched[index]) { idle.push(t[1]); return; }
      html += tableHtml(index, now);
    });
    if (idle.length) html += '<div class="untouched">empty all run: ' + esc(idle.join(', ')) + '</div>';
    byId('live-tables').innerHTML = html;
    markScrollingTables();
  }
  // A table wider than the panel scrolls sideways: a shadow on its right edge and a word say so.
  function markScrollingTables() {
    Array.prototype.forEach.call(byId('live-tables').querySelectorAll('.dbt'), function (box) {
      var scrolls = box.scrollWidth > box.clientWidth + 1;
      box.classList.toggle('scrolls', scrolls);
      var cap = box.querySelector('.cap');
      if (scrolls && cap && !cap.querySelector('.cue')) {
        cap.insertAdjacentHTML('beforeend', '<span class="cue">⇆ scroll sideways for more columns</span>');
      }
    });
  }

  // ---- balances, sagas, invariants ------------------------------------------------------------
  // Balances and saga states after event `upto`, replayed from the opening balances.
  function stateAt(upto) {
    var seg = segmentOf(Math.max(upto, 0));
    var state = {balances: Object.assign({}, seg ? seg.balances : data.opening),
                 sagas: seg ? Object.assign({}, seg.sagas) : {}, account: null, transfer: null};
    if (!seg) data.transfers.forEach(function (id) { state.sagas[id] = '—'; });
    for (var i = seg ? seg.at : 0; i <= upto; i++) {
      var e = events[i];
      if (e.kind === 'effect') {
        state.balances[e.account] = (state.balances[e.account] || 0) + (e.amount || 0);
        if (i === upto) state.account = e.account;
      } else if (e.kind === 'request') {
        state.sagas[e.transfer] = 'REQUESTED';
      } else if (e.kind === 'saga') {
        var parts = (e.detail || '').split('->');
        state.sagas[e.transfer] = parts[parts.length - 1];
        if (i === upto) state.transfer = e.transfer;
      }
    }
    return state;
  }

  function tableRows(map, highlight) {
    return Object.keys(map).map(function (key) {
      return '<tr' + (key === highlight ? ' class="changed"' : '') + '><td>' + esc(key) +
             '</td><td class="n">' + esc(map[key]) + '</td></tr>';
    }).join('');
  }

  function renderInvariants(upto) {
    byId('live-invariants').innerHTML = data.invariants.map(function (name) {
      var at = name in brokenAt ? brokenAt[name] : -1, broken = at >= 0 && at <= upto;
      // The ring marks the event where it broke: never an invariant that holds.
      return '<span class="badge' + (broken ? ' broken' : '') + (broken && at === upto ? ' here' : '') +
             '" title="' + esc(broken ? 'broken at event ' + (at + 1) : 'holds so far') + '">' +
             (broken ? '✖ ' : '✓ ') + esc(name) + '</span>';
    }).join('');
  }

  function showEvent(e) {
    var envelope = byId('live-envelope');
    if (!e) { byId('live-event').innerHTML = ''; envelope.hidden = true; return; }
    byId('live-event').innerHTML = Object.keys(e).map(function (key) {
      return '<tr><td>' + esc(key) + '</td><td>' + esc(e[key]) + '</td></tr>';
    }).join('');
    // The envelope in full (projectors and touch screens have no hover for the tooltip), beside
    // the AMQP properties the broker carries with it, as RabbitMQ's management UI shows them.
    var body = e.message_id && data.envelopes[e.message_id];
    envelope.hidden = !body;
    byId('live-body').innerHTML = body ? '<b>body (envelope)</b>' + esc(JSON.stringify(body, null, 2)) : '';
    byId('live-props').innerHTML = body ? propertiesHtml(e) : '';
  }
  function propertiesHtml(e) {
    function prop(key, value, cls) {
      return '<div><span class="k">' + esc(key) + ':</span> <span class="v' + (cls ? ' ' + cls : '') +
             '">' + esc(value) + '</span></div>';
    }
    var html = '<b>AMQP properties</b>' + prop('message-id', e.message_id);
    if (e.type) html += prop('type', e.type);
    if (e.type && data.routing[e.type]) html += prop('routing-key', data.routing[e.type]);
    html += prop('content-type', 'application/json');
    if (e.kind === 'deliver' || e.tag) {
      var holder = e.kind === 'deliver' ? e.to : e.service;
      html += prop('delivery-tag', e.tag ? e.tag + (holder ? ' (' + holder + "'s channel)" : '') : '—');
      html += prop('redelivered', e.redelivered ? 'true' : 'false', e.redelivered ? 'yes' : '');
      // RabbitMQ adds the header only once a quorum queue has had the message back.
      html += '<b>headers</b>' + prop('x-delivery-count', e.delivery_count ? e.delivery_count : '(absent)',
                                         e.delivery_count ? 'yes' : '');
    }
    return html;
  }

  // ---- keeping the selection in view -----------------------------------------------------------
  // The rows are visible between the sticky lane header and the bottom of the window.
  // The diagram scrolls in its own box (both ways: a wide one sideways), under its sticky
  // lane header; the box itself is kept inside the window.
  function visibleBand() {
    var box = diagram.getBoundingClientRect();
    var bottom = Math.min(window.innerHeight, box.top + diagram.clientHeight);
    return {top: Math.max(laneHead.getBoundingClientRect().bottom, controls.getBoundingClientRect().bottom),
            bottom: bottom};
  }
  function reveal(row) {
    var box = diagram.getBoundingClientRect();
    if (box.top + diagram.clientHeight > window.innerHeight) {
      window.scrollBy(0, box.top + diagram.clientHeight - window.innerHeight + 4);
    }
    var r = row.getBoundingClientRect(), band = visibleBand();
    if (r.top < band.top + 4 || r.bottom > band.bottom - 4) {
      diagram.scrollTop += r.top - band.top - (band.bottom - band.top - r.height) / 2;
    }
    // Sideways: the event's arrow or marker with its label, if part of it is out of the box;
    // when the two do not fit, the arrow or marker wins.
    var mark = row.querySelector('line.arrow, circle.dot');
    if (mark) {
      var m = mark.getBoundingClientRect(), left = box.left + 8, right = box.left + diagram.clientWidth - 8;
      var label = row.querySelector('text.lbl'), l = label ? label.getBoundingClientRect() : m;
      var from = Math.min(m.left, l.left), to = Math.max(m.right, l.right);
      if (to - from > right - left) { from = m.left; to = m.right; }
      if (from < left) diagram.scrollLeft += from - left;
      else if (to > right) diagram.scrollLeft += Math.min(to - right, from - left);
    }
  }
  // The bars on the lanes as far as the selected event: a crash's "down" bar grows row by row.
  function renderSpans() {
    var rowHeight = Number(svg.getAttribute('data-row-height'));
    spans.forEach(function (span) {
      var a = Number(span.getAttribute('data-a')), b = Number(span.getAttribute('data-b'));
      var rect = span.querySelector('rect');
      if (!rect.hasAttribute('data-h')) rect.setAttribute('data-h', rect.getAttribute('height'));
      span.classList.toggle('future', cur >= 0 && a > cur);
      var full = Number(rect.getAttribute('data-h'));
      var height = full;
      if (cur >= a && cur < b) {
        var y0 = Number(rect.getAttribute('y'));
        var hit = rows[cur].querySelector('.hit');
        height = Math.max(rowHeight / 2, Number(hit.getAttribute('y')) + rowHeight / 2 - y0);
      }
      rect.setAttribute('height', String(Math.min(full, height)));
    });
  }
  // Brings the first highlighted table row into the panel's own scroll box.
  function revealChangedRow() {
    var changed = panel.querySelector('.dbt tr.ins, .dbt tr.upd, .dbt tr.del');
    if (!changed) return;
    var r = changed.getBoundingClientRect(), p = panel.getBoundingClientRect();
    if (r.top < p.top || r.bottom > p.bottom) panel.scrollTop += r.top - p.top - p.height / 3;
  }

  function render(scroll) {
    svg.classList.toggle('stepping', cur >= 0);
    rows.forEach(function (row, i) {
      row.classList.toggle('cur', i === cur);
      row.classList.toggle('future', cur >= 0 && i > cur);
    });
    var state = stateAt(cur);
    byId('live-balances').innerHTML = tableRows(state.balances, state.account);
    byId('live-sagas').innerHTML = tableRows(state.sagas, state.transfer);
    var when = cur < 0 ? '(opening)' : '(at ' + events[cur].t + ' ms)';
    byId('bal-when').textContent = when;
    byId('inv-when').textContent = when;
    byId('counter').textContent =
        cur < 0 ? total + ' events' : 'event ' + (numberOf(cur) + 1) + ' / ' + total;
    byId('now').textContent = cur < 0 ? 'press → or ▶ play to step through the run'
                                      : events[cur].t + ' ms  ' + data.text[cur];
    scrub.value = String(cur);
    showEvent(events[cur]);
    renderInvariants(cur);
    renderTables(cur);
    renderSpans();
    if (scroll && cur >= 0) { reveal(rows[cur]); revealChangedRow(); }
  }

  function go(index) {
    cur = Math.max(-1, Math.min(count - 1, index));
    render(true);
  }

  function stepBoundary(direction) {
    for (var i = cur + direction; i >= 0 && i < count; i += direction) {
      if (events[i].kind === 'step') return i;
    }
    return direction > 0 ? count - 1 : -1;
  }

  function stop() {
    if (timer !== null) clearInterval(timer);
    timer = null;
    byId('b-play').textContent = '▶ play';
  }

  function play() {
    if (timer !== null) { stop(); return; }
    if (cur >= count - 1) cur = -1;
    byId('b-play').textContent = '❚❚ pause';
    timer = setInterval(function () {
      if (cur >= count - 1) { stop(); return; }
      go(cur + 1);
    }, 900);
  }

  function button(id, action) {
    byId(id).addEventListener('click', function () { action(); this.blur(); });
  }
  button('b-first', function () { stop(); go(-1); });
  button('b-prev', function () { stop(); go(cur - 1); });
  button('b-next', function () { stop(); go(cur + 1); });
  button('b-last', function () { stop(); go(count - 1); });
  button('b-play', play);
  byId('b-violation').hidden = firstViolation < 0;
  button('b-violation', function () { stop(); go(firstViolation); });
  scrub.addEventListener('input', function () { stop(); go(Number(scrub.value)); });
  rows.forEach(function (row, i) {
    row.addEventListener('click', function () { stop(); go(i); });
  });
  document.addEventListener('keydown', function (event) {
    if (event.target === scrub || event.altKey || event.ctrlKey || event.metaKey) return;
    var keys = {
      ArrowRight: function () { go(event.shiftKey ? stepBoundary(1) : cur + 1); },
      ArrowLeft: function () { go(event.shiftKey ? stepBoundary(-1) : cur - 1); },
      Home: function () { go(-1); },
      End: function () { go(count - 1); },
      v: function () { if (firstViolation >= 0) go(firstViolation); },
      w: function () { toggleWide(); }
    };
    if (event.key === ' ') { event.preventDefault(); play(); return; }
    if (!keys[event.key]) return;
    event.preventDefault();
    stop();
    keys[event.key]();
  });

  function toggleWide() {
    document.body.classList.toggle('wide-panel');
    byId('b-wide').textContent = document.body.classList.contains('wide-panel') ? '⇔ narrower' : '⇔ wider';
    markScrollingTables();
  }
  button('b-wide', toggleWide);

  // The sticky lane header sits under the controls bar, whatever height it wraps to.
  function measureBar() {
    document.documentElement.style.setProperty('--bar', controls.offsetHeight + 'px');
  }
  window.addEventListener('resize', measureBar);
  measureBar();

  // A link can open the page at one moment of the run: report.html#event-12, also when the
  // address changes after the page has loaded.
  function openFromAddress() {
    var wanted = /^#event-(\d+)$/.exec(window.location.hash);
    if (wanted) { stop(); go(positionOf(Number(wanted[1]) - 1)); return true; }
    return false;
  }
  window.addEventListener('hashchange', openFromAddress);
  if (!openFromAddress()) {
    // A failing run opens where it first went wrong.
    if (!data.passed && firstViolation >= 0) { go(firstViolation); } else { render(false); }
  }
  if (window.location.hash === '#selftest') selfTest();

  // ---- the self-test (report.html#selftest, read back with chromium --dump-dom) ---------------
  // Steps through every event with the arrow key, as a user would, and checks what a user
  // relies on: the selected row is in view, the panel shows the event's changed rows, the
  // balances end as the run reported, stepping back replays the tables exactly, the violation
  // control lands on the first violation, and a new #event-N address is followed.
  function selfTest() {
    var failures = [], forward = [], opened = cur;
    function check(ok, what) { if (!ok && failures.length < 20) failures.push(what); }
    function key(name) {
      document.dispatchEvent(new KeyboardEvent('keydown', {key: name, bubbles: true}));
    }
    function inView(i) {
      var r = rows[i].getBoundingClientRect(), band = visibleBand();
      return r.top >= band.top - 1 && r.bottom <= band.bottom + 1;
    }
    // Every label lies inside the diagram: none is clipped at an edge.
    var width = svg.viewBox.baseVal.width;
    Array.prototype.forEach.call(svg.querySelectorAll('text'), function (text) {
      var box = text.getBBox();
      check(box.x >= -1 && box.x + box.width <= width + 1,
            'label "' + text.textContent + '" runs past the diagram (' + Math.round(box.x) +
            '..' + Math.round(box.x + box.width) + ' of ' + width + ')');
    });
    key('Home');
    for (var i = 0; i < count; i++) {
      key('ArrowRight');
      check(cur === i, 'ArrowRight reached event ' + (cur + 1) + ', not ' + (i + 1));
      check(inView(i), 'event ' + (i + 1) + ' is out of view after ArrowRight');
      var changedRows = {};
      (changes[i] || []).forEach(function (c) { changedRows[c[0] + '/' + c[2]] = true; });
      var expected = Object.keys(changedRows).length;
      var marked = byId('live-tables').querySelectorAll('tr.ins, tr.upd, tr.del').length;
      check(marked === expected,
            'event ' + (i + 1) + ' changed ' + expected + ' rows, ' + marked + ' highlighted');
      forward.push(byId('live-tables').innerHTML);
    }
    var final = stateAt(count - 1).balances;
    Object.keys(data.final).forEach(function (account) {
      check(final[account] === data.final[account],
            'balance of ' + account + ' at the end: ' + final[account] + ', the run says ' +
            data.final[account]);
    });
    for (var j = count - 1; j >= 0; j--) {
      check(cur === j, 'ArrowLeft reached event ' + (cur + 1) + ', not ' + (j + 1));
      check(byId('live-tables').innerHTML === forward[j],
            'the tables at event ' + (j + 1) + ' differ stepping back');
      check(inView(j), 'event ' + (j + 1) + ' is out of view after ArrowLeft');
      key('ArrowLeft');
    }
    if (firstViolation >= 0) {
      byId('b-violation').click();
      check(cur === firstViolation, 'first violation control went to event ' + (cur + 1));
      check(inView(firstViolation), 'the first violation is out of view');
      check(byId('live-invariants').querySelector('.badge.broken.here') !== null,
            'no invariant badge turned red at the first violation');
      Array.prototype.forEach.call(byId('live-invariants').children, function (badge) {
        check(badge.scrollWidth <= badge.clientWidth + 1, 'badge "' + badge.textContent + '" is cut');
      });
    }
    var middle = Math.max(0, Math.floor(count / 2) - 1), target = numberOf(middle) + 1;
    window.addEventListener('hashchange', function () {
      check(cur === middle, '#event-' + target + ' opened event ' + (numberOf(cur) + 1));
      check(inView(middle), '#event-' + target + ' is out of view');
      failures = failures.concat(errors);
      var out = document.createElement('pre');
      out.id = 'selftest';
      out.textContent = (failures.length ? 'FAIL\n' + failures.join('\n') : 'PASS ' + count +
                         ' events') + '\nopened at event ' + (opened < 0 ? 0 : numberOf(opened) + 1) +
                         ' of ' + total;
      document.body.setAttribute('data-selftest', failures.length ? 'fail' : 'pass');
      document.body.appendChild(out);
    }, {once: true});
    window.location.hash = '#event-' + target;
  }
})();
)JS";

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
         "\" title=\"what became of the bank, whatever the story expected\">" +
         escape_html(bank) + "</span></div>";
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
  return render_lane_header(lanes) + render_swimlanes(result, lanes, full_window(result));
}

std::string render_html(const RunResult& result) {
  const Lanes lanes{diagram_participants(result)};
  const Window window = choose_window(result.events);
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<title>" +
      escape_html(result.title.empty() ? result.name : result.title) +
      " · inboxsim</title><style>" + kStyle + "</style></head><body>\n";
  out += page_header(result) + controls();
  out += "<main class=\"stage\" id=\"stage\"><div class=\"diagram\" id=\"diagram\">" +
         window_notice(window) + render_lane_header(lanes) +
         render_swimlanes(result, lanes, window) + "</div>" + side_panel() + "</main>\n";
  out += "<section class=\"results\">" + balances_table(result) + transfers_table(result) +
         invariants_table(result) + expectations_table(result) + counters_line(result) +
         "</section>\n";
  // What happened to the money, then the words the page uses.
  const bool correct = bank_verdict(result) == "bank correct";
  out += std::string("<p class=\"money ") + (correct ? "money-ok" : "money-broke") + "\">" +
         escape_html(money_sentence(result)) + "</p>\n" + diagram_key() + legend_html() +
         glossary_html();
  out += "<footer>" + escape_html(verdict_line(result)) + " · drawn by inboxsim</footer>\n";
  out += "<script type=\"application/json\" id=\"run-data\">" + run_data_json(result, window) +
         "</script>\n<script>" + kScript + "</script>\n</body></html>\n";
  return out;
}

}  // namespace inboxsim
