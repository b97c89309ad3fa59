#include "world/message_names.h"

#include <algorithm>
#include <cstdio>

#include "domain/account_inbox.h"

namespace inboxsim {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-';
}

// Whether `text` holds "m-" and a digit: a name a minted id could be read in.
bool holds_an_id(std::string_view text) {
  for (size_t at = text.find("m-"); at != std::string_view::npos; at = text.find("m-", at + 1)) {
    if (at + 2 < text.size() && is_digit(text[at + 2])) return true;
  }
  return false;
}

}  // namespace

bool MessageNames::commute_in(const Scenario& scenario, const Config& config,
                              const Schedule& schedule) {
  if (schedule.clocked || config.broker_kind != BrokerKind::rabbitmq) return false;
  if (!account_inbox_kind(config.account_inbox).order_read_per_message) return false;
  for (const auto& [name, account] : scenario.accounts) {
    if (holds_an_id(name)) return false;
  }
  const auto names_an_id = [](const Step& step) {
    return step.kind == StepKind::publish ||
           (step.kind == StepKind::transfer &&
            (holds_an_id(step.transfer.id) || holds_an_id(step.transfer.from) ||
             holds_an_id(step.transfer.to)));
  };
  if (std::any_of(scenario.steps.begin(), scenario.steps.end(), names_an_id)) return false;
  const auto acts_by_hand = [&](const Schedule& of) {
    return std::any_of(of.actions.begin(), of.actions.end(),
                       [&](const Schedule::Action& action) { return names_an_id(action.step); });
  };
  return !acts_by_hand(schedule) && !(scenario.schedule && acts_by_hand(*scenario.schedule));
}

Fingerprint MessageNames::name_of(std::string_view id) const {
  if (id.empty()) return Fingerprint{};
  const auto found = names_.find(id);
  // An id no cause minted here (none is, where the rule holds): its own name.
  return found != names_.end() ? found->second : Hasher().add(id).finish();
}

void MessageNames::minted(const std::string& id, const std::string& cause) {
  const Fingerprint of = name_of(cause);
  const uint64_t before = minted_by_cause_[of]++;
  names_[id] = Hasher().add(of).add(before).finish();
}

void MessageNames::fingerprint(Hasher& hasher) const {
  hasher.add(static_cast<uint64_t>(names_.size()));
  for (const auto& [id, name] : names_) hasher.add(id).add(name);
}

bool MessageNames::rename(std::string_view text, std::string& out) const {
  size_t copied = 0;
  for (size_t at = text.find("m-"); at != std::string_view::npos; at = text.find("m-", at + 1)) {
    if (at > 0 && is_word(text[at - 1])) continue;
    size_t end = at + 2;
    while (end < text.size() && is_digit(text[end])) ++end;
    if (end == at + 2 || (end < text.size() && is_word(text[end]))) continue;
    const auto found = names_.find(text.substr(at, end - at));
    if (found == names_.end()) continue;
    out.append(text.substr(copied, at - copied));
    char hex[34];
    std::snprintf(hex, sizeof hex, "#%016llx%016llx",
                  static_cast<unsigned long long>(found->second.high),
                  static_cast<unsigned long long>(found->second.low));
    out += hex;
    copied = end;
    at = end - 1;
  }
  if (copied == 0) return false;
  out.append(text.substr(copied));
  return true;
}

}  // namespace inboxsim
