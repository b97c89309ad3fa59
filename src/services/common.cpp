#include <cstdio>

#include "services/host.h"
#include "services/sql.h"

namespace inboxsim {

TraceEvent event_about(EventKind kind, int64_t time_ms, std::string_view service,
                       const Message& message) {
  TraceEvent event;
  event.time_ms = time_ms;
  event.kind = kind;
  event.service = service;
  event.message_id = message.message_id;
  event.type = message_type_name(message.type);
  event.transfer = message.transfer;
  return event;
}

MessagePtr make_message(std::string message_id, MessageType type, const std::string& transfer,
                        const std::string& from, const std::string& to, int64_t amount,
                        std::string reason, int64_t occurred_at_ms) {
  auto message = std::make_shared<Message>();
  message->message_id = std::move(message_id);
  message->type = type;
  message->transfer = transfer;
  message->from = from;
  message->to = to;
  message->amount = amount;
  message->reason = std::move(reason);
  message->occurred_at_ms = occurred_at_ms;
  return message;
}

SQLite::Database open_service_database(const std::string& path) {
  if (path.empty()) {
    return SQLite::Database(":memory:", SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  }
  std::remove(path.c_str());
  SQLite::Database database(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  // The file is for looking at afterwards, not for surviving a power cut: a crash in the
  // simulation is a thrown exception, and the process itself stays up.
  database.exec("PRAGMA synchronous = OFF");
  database.exec("PRAGMA journal_mode = MEMORY");
  return database;
}

}  // namespace inboxsim
