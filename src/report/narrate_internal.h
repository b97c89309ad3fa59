// What the narration's files share (narrate.cpp, narrate_rows.cpp, event_text.cpp): the line
// styles and layout, and the event sentences. Not an interface: the report's users call
// describe_event and the Narrator (report/narrate.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kernel/trace.h"

namespace inboxsim {

// ANSI styles. Kept few and distinct so that a projector or a dim terminal still shows them.
inline constexpr std::string_view kBold = "1";
inline constexpr std::string_view kDim = "2";
inline constexpr std::string_view kRed = "1;31";
inline constexpr std::string_view kGreen = "32";
inline constexpr std::string_view kBoldGreen = "1;32";
inline constexpr std::string_view kYellow = "33";
inline constexpr std::string_view kCyan = "36";
inline constexpr std::string_view kMagenta = "35";
inline constexpr std::string_view kInverseRed = "1;37;41";

// The layout of an event line: its moment, right-aligned, then its number, then the sentence.
// Row and ↳ lines are indented to the sentence.
inline constexpr size_t kTimeWidth = 9;    // "0.019 s", "12.345 s"; longer moments push the line
inline constexpr size_t kNumberWidth = 5;  // "#4005"
inline constexpr size_t kIndentWidth = kTimeWidth + 2 + kNumberWidth + 2;

// An amount with its sign: "+2500", "-2500", "0".
std::string signed_amount(int64_t amount);
// The sentence of an event whose consumer is on its `channel`-th channel.
std::string describe_on_channel(const TraceEvent& event, int64_t channel);
// Whether an event's line names a table of `source`: the tables its kind of line is about.
bool names_table(const TraceEvent& event, std::string_view source, std::string_view table);

}  // namespace inboxsim
