// Text from the user (a scenario's title, description and lesson) printed on a terminal: a
// control character in it must not reach the terminal as one (an ESC sequence could recolour,
// move or hide what the narration prints).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace inboxsim {

// Returns `text` with every control character but newline and tab written as "\xNN": the C0
// controls, DEL, and the C1 controls U+0080-U+009F (which some terminals obey too).
std::string printable(std::string_view text);

// True when `text` holds a control character printable() would escape, or a newline or tab.
bool has_control_characters(std::string_view text);

// `text` with spaces appended up to `width` characters (bytes: table cells are ASCII).
std::string pad(std::string text, size_t width);

// The parts of a comma-separated list, empty ones included ("a,,b" has three; "" has one).
std::vector<std::string_view> split_commas(std::string_view text);

}  // namespace inboxsim
