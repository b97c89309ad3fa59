#include "world/publication_log.h"

namespace inboxsim {

bool PublicationLog::record(const MessagePtr& message, bool by_operator) {
  if (keep_envelopes_) envelopes_.try_emplace(message->message_id, envelope_json(*message));
  ++sends_[message->type];
  const bool first = published_ids_.insert({message->type, message->message_id}).second;
  if (first && !by_operator) {
    first_publications_.push_back(message);
    first_publications_by_transfer_[message->transfer].push_back(message);
  }
  return first;
}

const std::vector<MessagePtr>& PublicationLog::candidates(const Match& match) const {
  static const std::vector<MessagePtr> kNone;
  if (match.transfer.empty()) return first_publications_;
  const auto found = first_publications_by_transfer_.find(match.transfer);
  return found == first_publications_by_transfer_.end() ? kNone : found->second;
}

std::map<MessageType, int64_t> PublicationLog::published_counts() const {
  std::map<MessageType, int64_t> counts;
  for (const auto& [type, id] : published_ids_) ++counts[type];
  return counts;
}

}  // namespace inboxsim
