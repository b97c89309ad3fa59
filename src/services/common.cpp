#include <SQLiteCpp/Backup.h>

#include <cstdio>
#include <map>
#include <memory>

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

SQLite::Database open_service_database(
    const std::string& path, const std::string& schema_key,
    const std::function<void(SQLite::Database&)>& create_schema) {
  const int flags = SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE;
  if (!path.empty()) {
    std::remove(path.c_str());
    SQLite::Database database(path, flags);
    // The file is for looking at afterwards, not for surviving a power cut: a crash in the
    // simulation is a thrown exception, and the process itself stays up.
    database.exec("PRAGMA synchronous = OFF");
    database.exec("PRAGMA journal_mode = MEMORY");
    create_schema(database);
    return database;
  }
  // One template per schema and thread: fuzz workers never share a connection.
  thread_local std::map<std::string, std::unique_ptr<SQLite::Database>> templates;
  auto& template_db = templates[schema_key];
  if (!template_db) {
    template_db = std::make_unique<SQLite::Database>(":memory:", flags);
    create_schema(*template_db);
  }
  SQLite::Database database(":memory:", flags);
  SQLite::Backup copy(database, *template_db);
  copy.executeStep(-1);
  return database;
}

}  // namespace inboxsim
