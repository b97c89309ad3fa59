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
// How a line names a delivery: RabbitMQ's delivery tag counts per channel, so it is said with
// the consumer's channel (the `channel`-th it opened, from 1); JetStream's consumer sequence
// counts a consumer's deliveries whichever client pulls them, and its nak and redelivery by
// ack wait have names of their own.
struct DeliveryNaming {
  int64_t channel = 1;
  bool jetstream = false;  // broker.kind = jetstream
};

// The sentence of an event, its delivery named as `naming` says.
std::string describe_on_channel(const TraceEvent& event, const DeliveryNaming& naming);
// How a dedupe hit's line names the mechanism that caught the copy, by the step that did.
std::string_view dedupe_mechanism(DedupeStep step);
// A dedupe hit's line: who, the mechanism, the message and `reason`, then the verdict.
std::string describe_dedupe(const TraceEvent& event, std::string_view reason);
// Whether an event's line names a table of `source`: the tables its kind of line is about.
bool names_table(const TraceEvent& event, std::string_view source, std::string_view table);

}  // namespace inboxsim
