// Where `list` and `demo` find the teaching library, the folder of scenario files.
//
// An installed inboxsim (`cmake --install`, the .deb) keeps its library beside the binary, at
// kLibraryFromBinary from the folder the binary is in, so the library is found from the
// binary's own location (/proc/self/exe) wherever the prefix was installed or moved to. A
// build tree has no such folder; there `./scenarios` is found, the source tree's when the
// binary runs from the repository root, as the README's commands do. No path of the build
// machine is compiled in: a package must not lean on the tree it was built from, and a binary
// that silently read another checkout's library would teach from the wrong version.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#ifndef INBOXSIM_LIBRARY_FROM_BINARY
#define INBOXSIM_LIBRARY_FROM_BINARY "../share/inboxsim/scenarios"
#endif

namespace inboxsim {

// The library's place relative to the folder of the binary; CMake derives it from the install
// folders (bin/ and share/inboxsim/scenarios/ by default), so the two cannot drift apart.
inline constexpr const char* kLibraryFromBinary = INBOXSIM_LIBRARY_FROM_BINARY;

// One place the library is looked for. An empty folder is a place that could not be worked
// out (the binary's own path unknown); `why` then says so.
struct LibraryPlace {
  std::filesystem::path folder;
  std::string why;  // how the place was chosen, for the message when nothing is found
};

// Returns the places to look, in order: beside the binary at `executable` (empty when the
// binary's own path is unknown), then `./scenarios` of the current folder.
std::vector<LibraryPlace> library_places(const std::filesystem::path& executable);

// Returns this process's binary, from /proc/self/exe; empty when it cannot be read.
std::filesystem::path own_executable();

// Returns the first of `places` that is a folder, or nothing.
std::optional<std::filesystem::path> first_library(const std::vector<LibraryPlace>& places);

// Returns the complaint, one line, when no place holds the library: every place looked, and how
// to name a folder instead (`how_to_name`, e.g. "--scenarios DIR").
std::string library_not_found(const std::vector<LibraryPlace>& places,
                              const std::string& how_to_name);

// The scenario files (*.json) of `directory`, sorted, into `files`; the complaint, one line, when
// the folder cannot be read. A broken link or a link loop in the folder is skipped, not fatal.
std::optional<std::string> scenario_files(const std::string& directory,
                                          std::vector<std::string>& files);

}  // namespace inboxsim
