// What has been published in a run, kept for three readers: the scenario's `published`
// expectation (distinct message ids per type), the `duplicate` fault (an operator copies a
// message that was already published, so each message's first publication is kept, also by
// transfer, so that arming a fault that names a transfer does not scan the run), and the HTML
// report (each message's envelope, when the trace is kept).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "domain/message.h"
#include "domain/scenario.h"

namespace inboxsim {

class PublicationLog {
 public:
  // `keep_envelopes`: keep each message's envelope (the HTML report). `spill`: keep the log in
  // a temporary SQLite database instead of memory (a long story: its first publications, four
  // or five per transfer, would take a kilobyte per transfer held as messages). The answers
  // are the same either way.
  PublicationLog(bool keep_envelopes, bool spill);
  ~PublicationLog();
  PublicationLog(const PublicationLog&) = delete;
  PublicationLog& operator=(const PublicationLog&) = delete;

  // Records a publication. Returns true when the message id was never published before.
  // `by_operator`: an operator's copy is not a first publication a later fault may copy.
  bool record(const MessagePtr& message, bool by_operator);

  // The ids published so far (what decides whether a publish is the first), for the explorer.
  // REQUIRES: not spilled.
  const std::set<std::pair<MessageType, std::string>>& published_ids() const;

  // The first publications a `duplicate` fault with this match may copy, in publication order.
  std::vector<MessagePtr> candidates(const Match& match);

  // Records a publish the broker refused: a send, not a publication.
  void record_refused(const Message& message) { ++sends_[message.type]; }

  // Distinct message ids per type.
  std::map<MessageType, int64_t> published_counts() const;
  // Publish operations per type.
  const std::map<MessageType, int64_t>& sends() const { return sends_; }

  const std::map<std::string, std::string>& envelopes() const { return envelopes_; }

 private:
  struct Spilled;

  bool keep_envelopes_;
  std::set<std::pair<MessageType, std::string>> published_ids_;
  std::vector<MessagePtr> first_publications_;
  std::map<std::string, std::vector<MessagePtr>, std::less<>> first_publications_by_transfer_;
  std::unique_ptr<Spilled> spilled_;  // when spilled, instead of the three above
  std::map<std::string, std::string> envelopes_;  // by message id
  std::map<MessageType, int64_t> sends_;
};

}  // namespace inboxsim
