#include "app/cli_args.h"

#include <charconv>
#include <string_view>

namespace inboxsim {

bool parse_seed(const std::string& text, uint64_t& seed) {
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, seed);
  return !text.empty() && text.front() != '-' && text.front() != '+' && error == std::errc() &&
         ptr == end && seed <= kSeedMax;
}

bool parse_seed_range(const std::string& text, uint64_t& first, uint64_t& last) {
  const size_t dots = text.find("..");
  if (dots == std::string::npos) {
    if (!parse_seed(text, first)) return false;
    last = first;
    return true;
  }
  return parse_seed(text.substr(0, dots), first) && parse_seed(text.substr(dots + 2), last) &&
         first <= last && last - first < kSeedsPerCampaignMax;
}

bool parse_shard(const std::string& text, int64_t& index, int64_t& count) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos) return false;
  const std::string_view view(text);
  auto parse = [](std::string_view part, int64_t& value) {
    const char* end = part.data() + part.size();
    const auto [ptr, error] = std::from_chars(part.data(), end, value);
    return error == std::errc() && ptr == end && !part.empty();
  };
  return parse(view.substr(0, slash), index) && parse(view.substr(slash + 1), count) &&
         count >= 1 && index >= 1 && index <= count;
}

}  // namespace inboxsim
