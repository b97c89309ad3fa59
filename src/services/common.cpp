#include <SQLiteCpp/Backup.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <memory>

#include "kernel/assert.h"
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

namespace {

const int kOpenFlags = SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE;

// One template per schema and thread: fuzz workers never share a connection.
SQLite::Database& schema_template(const std::string& schema_key,
                                  const std::function<void(SQLite::Database&)>& create_schema) {
  thread_local std::map<std::string, std::unique_ptr<SQLite::Database>> templates;
  auto& template_db = templates[schema_key];
  if (!template_db) {
    template_db = std::make_unique<SQLite::Database>(":memory:", kOpenFlags);
    create_schema(*template_db);
  }
  return *template_db;
}

void copy_schema(SQLite::Database& to, SQLite::Database& from) {
  SQLite::Backup copy(to, from);
  copy.executeStep(-1);
}

SQLite::Database open_file(const std::string& path) {
  SQLite::Database database(path, kOpenFlags);
  // The file is for looking at afterwards, not for surviving a power cut: a crash in the
  // simulation is a thrown exception, and the process itself stays up.
  database.exec("PRAGMA synchronous = OFF");
  database.exec("PRAGMA journal_mode = MEMORY");
  return database;
}

// Names a shared in-memory database uniquely in this process. The name never reaches a trace,
// so the counter's order across fuzz threads does not matter for determinism.
std::string fresh_memdb_uri() {
  static std::atomic<uint64_t> next{1};
  return "file:/inboxsim-" + std::to_string(next.fetch_add(1)) + "?vfs=memdb";
}

}  // namespace

SharedDatabase::SharedDatabase(std::string path, std::string schema_key,
                               std::function<void(SQLite::Database&)> create_schema,
                               int64_t connections)
    : path_(std::move(path)),
      schema_key_(std::move(schema_key)),
      create_schema_(std::move(create_schema)),
      connections_(connections) {
  INBOXSIM_ASSERT(connections >= 1);
  if (path_.empty() && connections_ > 1) shared_uri_ = fresh_memdb_uri();
}

SQLite::Database SharedDatabase::connect() {
  INBOXSIM_ASSERT(opened_ < connections_);
  const bool first = opened_++ == 0;
  if (!path_.empty()) {
    if (first) std::remove(path_.c_str());
    SQLite::Database database = open_file(path_);
    if (first) create_schema_(database);
    return database;
  }
  if (shared_uri_.empty()) {
    SQLite::Database database(":memory:", kOpenFlags);
    copy_schema(database, schema_template(schema_key_, create_schema_));
    return database;
  }
  SQLite::Database database(shared_uri_, kOpenFlags | SQLite::OPEN_URI);
  if (first) copy_schema(database, schema_template(schema_key_, create_schema_));
  return database;
}

}  // namespace inboxsim
