// The HTML report's swimlane diagram: an SVG with a lane per participant and a row per event
// (arrows for messages, markers for what happens inside one participant), and spans on the
// lanes for a process that is down, paused or waiting for a row lock.
#include <map>
#include <nlohmann/json.hpp>

#include "domain/messages.h"
#include "domain/participants.h"
#include "kernel/assert.h"
#include "report/html.h"
#include "report/html_parts.h"
#include "report/mermaid.h"
#include "report/narrate.h"

namespace inboxsim::html {
namespace {

// A lane name longer than this is set a size smaller (12 px), so that it fits its box.
constexpr size_t kLaneNameCharsMax = 16;
constexpr int kHeaderHeight = 50;
constexpr int kRowHeight = 30;
constexpr int kBodyPadding = 8;
// Average advance of one label character, in SVG units, at the label font size (a little more
// than DejaVu Sans needs, so that bold labels fit too).
constexpr int kLabelCharWidth = 9;

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
std::string event_tooltip(const TraceEvent& event, std::string_view envelope, bool jetstream) {
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
  if (event.delivery_tag != 0 && jetstream) {
    // JetStream's delivery metadata: the consumer's sequence of this delivery, and how many
    // times the message has been delivered, this time included.
    text += "\nconsumer sequence: " + std::to_string(event.delivery_tag) +
            "\nredelivered: " + (event.redelivered ? "true" : "false") +
            "\nNumDelivered: " + std::to_string(event.delivery_count + 1);
  } else if (event.delivery_tag != 0) {
    text += "\ndelivery tag: " + std::to_string(event.delivery_tag) +
            "\nredelivered: " + (event.redelivered ? "true" : "false") + "\nx-delivery-count: " +
            // RabbitMQ adds the header only once a quorum queue has had the message back.
            (event.delivery_count > 0 ? std::to_string(event.delivery_count)
                                      : std::string("none (a first delivery, or a classic queue)"));
  }
  field("account", event.account);
  // The tooltip lists the trace line's fields, under the line's keys.
  if (const int64_t amount = line_amount(event); amount != 0) {
    text += "\namount: " + std::to_string(amount);
  }
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

ArrowStyle arrow_style(const TraceEvent& event, bool jetstream) {
  const std::string what =
      std::string(event.type) + (event.transfer.empty() ? "" : " " + event.transfer);
  const std::string tag = delivery_id_text(event.delivery_tag, jetstream);
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
        const std::string counted = delivery_count_text(event, jetstream);
        const std::string count = counted.empty() ? "" : " (" + counted + ")";
        return {"a-redeliver",
                "REDELIVERED" + count + " · " + what + " (" + event.message_id + ", " + tag + ")"};
      }
      return {"a-deliver", "deliver " + what + " (" + event.message_id + ", " + tag + ")"};
    case EventKind::ack: return {"a-ack", "ack " + tag};
    case EventKind::ack_lost: return {"a-lost", "ack " + tag + " LOST"};
    case EventKind::in_progress: return {"a-ack", "in progress " + tag + " (+WPI)"};
    case EventKind::term: return {"a-lost", "term " + tag + " (+TERM): " + event.detail};
    case EventKind::ack_void: return {"a-lost", "ack " + tag + " VOID (closed channel)"};
    case EventKind::publish_nacked: return {"a-lost", "publish NACKED " + what};
    case EventKind::redrive:
      return {"a-operator", "REDRIVE " + what + " (" + event.message_id + ")"};
    case EventKind::nack:
      return {"a-lost", (jetstream ? "nak " : "nack ") + tag +
                            (event.detail.empty() ? "" : ": " + event.detail)};
    // A publisher confirm is JetStream's publish ack.
    case EventKind::confirm:
      return {"a-confirm", (jetstream ? "publish ack " : "confirm ") + event.message_id};
    case EventKind::confirm_lost:
      return {"a-lost", (jetstream ? "publish ack " : "confirm ") + event.message_id + " LOST"};
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
                         std::string_view message_colour, bool jetstream) {
  const ArrowStyle style = arrow_style(event, jetstream);
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


struct MarkerStyle {
  std::string css_class;
  std::string symbol;
  std::string label;
};

MarkerStyle marker_style(const TraceEvent& event, bool jetstream) {
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
      return {"m-warn", "↺",
              (jetstream ? "redeliver " : "requeue ") + event.message_id + ": " + event.detail};
    case EventKind::saga: return {"m-saga", "◆", event.transfer + "  " + saga_change(event)};
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
      return {"m-note", "⌫", "cleanup deleted " + std::to_string(event.rows_deleted) + " row(s)"};
    default: return {"m-note", "•", describe_event(event, jetstream)};
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

std::string render_marker(const TraceEvent& event, const Lanes& lanes, int y, bool jetstream) {
  const MarkerStyle style = marker_style(event, jetstream);
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
    label = "⇥ virtual clock runs on " + human_duration(event.duration_ms) + ", until " +
            human_duration(event.time_ms + event.duration_ms);
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
                       std::string_view message_colour, bool jetstream) {
  std::string out = "<g class=\"ev k-" + std::string(event_kind_name(event.kind)) + "\" data-i=\"" +
                    std::to_string(index) + "\"><title>" +
                    event_tooltip(event, envelope, jetstream) + "</title>";
  out += "<rect class=\"hit\" x=\"0\" y=\"" + num(y) + "\" width=\"" + num(lanes.width()) +
         "\" height=\"" + num(kRowHeight) + "\"/>";
  if (show_time) {
    out += svg_text(kTimeColumnWidth - 10, y + kRowHeight / 2 + 5, "end", "time",
                    std::to_string(event.time_ms) + " ms");
  }
  if (is_band(event.kind)) {
    out += render_band(event, lanes, y, step_number);
  } else if (is_message_event(event.kind)) {
    out += render_arrow(event, lanes, y, message_colour, jetstream);
  } else {
    out += render_marker(event, lanes, y, jetstream);
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

}  // namespace

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

namespace {

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

}  // namespace

std::string render_swimlanes(const RunResult& result, const Lanes& lanes, const Window& window) {
  const bool jetstream = ran_on_jetstream(result);
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
                      colour, jetstream);
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

}  // namespace inboxsim::html
