// A scenario's description as a teacher reads it out: one paragraph, or three parts (what the
// story sets up, the moment to watch for, why it turns out so), whose "watch for" names one event
// of the run. This file finds that event, for the narration (which marks it, with its #N) and the
// HTML report (which links to its #event-N), and gives the one-paragraph form for the places that
// show a single text (the playground's note).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "domain/scenario.h"
#include "kernel/trace.h"

namespace inboxsim {

// Whether `event` is of `kind` and of the message type and transfer `match` names (absent ones
// match anything). The occurrence is the caller's to count.
bool event_selected(EventKind kind, const Match& match, const TraceEvent& event);

// Counts the events a selector selects, one at a time as they happen.
class SelectorCounter {
 public:
  explicit SelectorCounter(EventSelector selector) : selector_(std::move(selector)) {}
  // Whether `event` is the one the selector names (its `match.occurrence`-th match).
  bool on_event(const TraceEvent& event);

 private:
  EventSelector selector_;
  int64_t seen_ = 0;
};

// The place (from 0) in `events` of the event `selector` names, if the run has it.
std::optional<size_t> selected_event(const EventSelector& selector,
                                     const std::vector<TraceEvent>& events);

// The description as one paragraph: `description` itself, or "Setup: … Watch for: … Why: …".
std::string description_paragraph(const std::string& description, const DescriptionParts& parts);

// The three parts as the HTML report's header shows them: the "watch for" in view, a link to its
// event's #event-N (when the run has it, `events` being the run's trace), and the setup and the
// why behind "more". Empty when `parts` is.
std::string description_parts_html(const DescriptionParts& parts,
                                   const std::vector<TraceEvent>& events);

}  // namespace inboxsim
