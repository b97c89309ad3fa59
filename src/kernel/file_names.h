// Names that become file names: a scenario's name is the user's text, and a file name made from
// it must stay inside the folder the user named.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace inboxsim {

// Returns `name` as one safe file-name component: letters, digits, '-', '_' and '.' are kept
// (a leading '.' is not: no hidden files, no "..") and every other byte becomes "%XX". A
// result longer than kFileStemBytesMax is cut and ends with a hash of the whole name, so two
// names never share a file. The same name always gives the same stem.
std::string safe_file_stem(std::string_view name);

inline constexpr size_t kFileStemBytesMax = 100;

}  // namespace inboxsim
