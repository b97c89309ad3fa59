// The words of transfer-service's processed_messages lines, in one place. The service writes
// them into its trace events with the message id; the narrator writes them again from the
// events' typed fields (`record`, `dedupe_step`) with the table's key spelt out, and, for a saga
// row the state machine then refuses, with what the commit really held. Neither reads the
// other's sentence.
#pragma once

#include <string>
#include <string_view>

#include "kernel/assert.h"
#include "kernel/trace.h"

namespace inboxsim {

// The mechanism's name, as a processed_messages line begins: "processed_messages: …".
inline constexpr std::string_view kProcessedMessages = "processed_messages";

// How a processed_messages record was committed, as its line ends.
// REQUIRES: record is one of processed_messages' records.
inline std::string_view processed_record_how(DedupeRecord record) {
  switch (record) {
    case DedupeRecord::processed_with_saga:
      return ", in one transaction with the saga update and its outbox row";
    case DedupeRecord::processed_with_notification:
      return ", in one transaction with the notification";
    case DedupeRecord::processed_alone:
      return " in a transaction of its own, after the business commit";
    default: INBOXSIM_ASSERT(false && "not a processed_messages record"); return {};
  }
}

// "processed_messages: KEY inserted" followed by `how`.
inline std::string processed_inserted_words(std::string_view key, std::string_view how) {
  return std::string(kProcessedMessages) + ": " + std::string(key) + " inserted" + std::string(how);
}

// Why the unique key made a copy a duplicate: "duplicate key KEY, transaction rolled back".
inline std::string processed_duplicate_words(std::string_view key) {
  return "duplicate key " + std::string(key) + ", transaction rolled back";
}

}  // namespace inboxsim
