#include "report/description.h"

#include <utility>

#include "report/html.h"

namespace inboxsim {

bool event_selected(EventKind kind, const Match& match, const TraceEvent& event) {
  if (event.kind != kind) return false;
  if (match.type && event.type != message_type_name(*match.type)) return false;
  return match.transfer.empty() || event.transfer == match.transfer;
}

bool SelectorCounter::on_event(const TraceEvent& event) {
  if (!event_selected(selector_.kind, selector_.match, event)) return false;
  return ++seen_ == selector_.match.occurrence;
}

std::optional<size_t> selected_event(const EventSelector& selector,
                                     const std::vector<TraceEvent>& events) {
  SelectorCounter counter(selector);
  for (size_t i = 0; i < events.size(); ++i) {
    if (counter.on_event(events[i])) return i;
  }
  return std::nullopt;
}

std::string description_paragraph(const std::string& description, const DescriptionParts& parts) {
  if (!description.empty() || parts.empty()) return description;
  return "Setup: " + parts.setup + " Watch for: " + parts.watch_for + " Why: " + parts.why;
}

std::string description_parts_html(const DescriptionParts& parts,
                                   const std::vector<TraceEvent>& events) {
  if (parts.empty()) return {};
  std::string watch = escape_html(parts.watch_for);
  if (const std::optional<size_t> index = selected_event(parts.watch_for_event, events)) {
    const std::string number = std::to_string(*index + 1);
    watch = "<a href=\"#event-" + number + "\" id=\"watch-for\" title=\"open the run at event " +
            number + "\">" + watch + " <span class=\"at\">(event " + number + ")</span></a>";
  }
  // The "watch for" in view; the setup and the why behind "more", so that on a projector's 720
  // lines the diagram still starts in the first view.
  return "<div class=\"parts\"><p class=\"watch\"><b>👁 Watch for</b> " + watch +
         "</p><details class=\"description\" id=\"description\"><summary><b>Setup and why</b> "
         "<span class=\"more\"></span></summary><p class=\"setup\"><b>Setup</b> " +
         escape_html(parts.setup) + "</p><p class=\"why\"><b>Why</b> " + escape_html(parts.why) +
         "</p></details></div>";
}

}  // namespace inboxsim
