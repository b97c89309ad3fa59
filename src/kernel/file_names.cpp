#include "kernel/file_names.h"

#include <cstdio>

#include "kernel/fingerprint.h"

namespace inboxsim {

namespace {

bool kept(char c, bool first) {
  if (c == '.') return !first;
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

}  // namespace

std::string safe_file_stem(std::string_view name) {
  std::string stem;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (kept(c, i == 0)) {
      stem.push_back(c);
      continue;
    }
    char escaped[4];
    std::snprintf(escaped, sizeof escaped, "%%%02X",
                  static_cast<unsigned>(static_cast<unsigned char>(c)));
    stem += escaped;
  }
  if (stem.empty()) stem = "unnamed";
  if (stem.size() <= kFileStemBytesMax) return stem;
  char hash[20];
  std::snprintf(hash, sizeof hash, "-%016llx", static_cast<unsigned long long>(fnv1a(name)));
  return stem.substr(0, kFileStemBytesMax - 17) + hash;
}

}  // namespace inboxsim
