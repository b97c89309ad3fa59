// A run as a Mermaid sequence diagram, for pasting into Markdown (GitHub, GitLab, mkdocs).
//
// Messages on the wire (request, publish, deliver, ack, nack, confirm and their lost variants)
// are arrows; what happens inside one participant (effects, dedupe hits, crashes, dead letters,
// saga changes) is a `Note over` it; each scenario step is a `rect` group headed by a note.
// Every label is escaped so that Mermaid's parser never sees `;`, `#`, `<`, `>` or a newline.
#pragma once

#include <string>
#include <vector>

#include "domain/result.h"

namespace inboxsim {

// Returns the diagram text, starting with "sequenceDiagram". Uses result.events (the run must
// have kept its trace) and the title.
std::string render_mermaid(const RunResult& result);

// Returns true for the event kinds drawn as an arrow between two participants.
bool is_message_event(EventKind kind);

// Returns the participants to draw, left to right: client, transfer-service, notifications (if
// it appears), transfer-relay, broker, account-service, operator (if it appears), then any other
// participant the events name, in order of first appearance. The HTML report uses it too.
std::vector<std::string> diagram_participants(const RunResult& result);

}  // namespace inboxsim
