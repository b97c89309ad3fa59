// What every verb of the command line does the same way: exit codes, bad input reported on
// stderr, output files and folders checked, --set applied.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "domain/config.h"

namespace inboxsim {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitInternal = 3;

// Reports bad input the way every verb does: one line on stderr, exit code 2.
int bad_input(const std::string& message);

// The help of every verb's --set.
inline constexpr const char* kSetOptionHelp =
    "Override a config key: KEY=VALUE (repeatable; 'inboxsim config' lists the keys)";

// Writes `text` to `path`; says so on stderr and returns false when it cannot.
bool write_file(const std::string& path, const std::string& text);

// Makes sure `dir` is a folder this process can write to (creating it if needed); returns exit
// code 2, with a message naming the flag and the folder, when it is not.
std::optional<int> prepare_output_dir(const std::string& flag, const std::string& dir);

// Whether to paint in colour for --color MODE: always, never, or auto (standard output is a
// terminal and NO_COLOR is unset or empty).
bool use_color(const std::string& mode);

// Applies --set KEY=VALUE overrides to a config; returns exit code 2 on the first bad one.
std::optional<int> apply_sets(const std::vector<std::string>& sets, Config& config);

}  // namespace inboxsim
