#include <SQLiteCpp/Backup.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
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

// No mutexes: a connection is only ever used by the thread that opened it (pools are per thread).
const int kOpenFlags = SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE | SQLite::OPEN_NOMUTEX;

// One template per schema and thread: fuzz workers never share a connection.
SQLite::Database& schema_template(const std::string& schema_key,
                                  const std::function<void(SQLite::Database&)>& create_schema) {
  thread_local std::map<std::string, std::unique_ptr<SQLite::Database>> templates;
  auto& template_db = templates[schema_key];
  if (!template_db) {
    template_db = std::make_unique<SQLite::Database>(":memory:", kOpenFlags);
    template_db->exec("PRAGMA page_size = 1024");
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

struct SharedDatabase::Pooled {
  std::vector<std::unique_ptr<Connection>> connections;
  int64_t schema_version = 0;       // the schema cookie when the schema was as created
  std::vector<std::string> tables;  // every table, emptied before the database is reused
  // The schema as created, (type, name, sql) in name order: a dropped index is made again.
  std::vector<std::array<std::string, 3>> schema;
};

std::vector<std::array<std::string, 3>> read_schema(Connection& connection) {
  std::vector<std::array<std::string, 3>> schema;
  StatementUse rows(connection.prepared(
      "SELECT type, name, COALESCE(sql, '') FROM sqlite_master ORDER BY type, name"));
  while (rows->executeStep()) {
    schema.push_back({rows->getColumn(0).getString(), rows->getColumn(1).getString(),
                      rows->getColumn(2).getString()});
  }
  return schema;
}

std::vector<std::string> index_statements(SQLite::Database& db,
                                          std::initializer_list<const char*> names) {
  std::vector<std::string> out;
  SQLite::Statement query(db, "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?");
  for (const char* name : names) {
    query.reset();
    query.bind(1, name);
    if (query.executeStep()) out.push_back(query.getColumn(0).getString());
  }
  return out;
}

int64_t schema_version(Connection& connection) {
  StatementUse version(connection.prepared("PRAGMA schema_version"));
  version->executeStep();
  return version->getColumn(0).getInt64();
}

namespace {

// Idle in-memory databases of this thread, by schema and connection count. A world holds one
// per service while it lives; a few idle ones per key cover the explorer's and the shrinker's
// worlds, which are built one after another.
constexpr size_t kPooledPerKey = 4;

using Pool = std::map<std::string, std::vector<std::unique_ptr<SharedDatabase::Pooled>>>;

Pool& pool() {
  thread_local Pool idle;
  return idle;
}

std::string pool_key(const std::string& schema_key, int64_t connections) {
  return schema_key + "#" + std::to_string(connections);
}

std::unique_ptr<SharedDatabase::Pooled> open_in_memory(
    const std::string& schema_key, const std::function<void(SQLite::Database&)>& create_schema,
    int64_t connections) {
  auto pooled = std::make_unique<SharedDatabase::Pooled>();
  SQLite::Database& from = schema_template(schema_key, create_schema);
  if (connections == 1) {
    SQLite::Database database(":memory:", kOpenFlags);
    copy_schema(database, from);
    pooled->connections.push_back(std::make_unique<Connection>(std::move(database)));
  } else {
    const std::string uri = fresh_memdb_uri();
    for (int64_t number = 0; number < connections; ++number) {
      SQLite::Database database(uri, kOpenFlags | SQLite::OPEN_URI);
      if (number == 0) copy_schema(database, from);
      pooled->connections.push_back(std::make_unique<Connection>(std::move(database)));
    }
  }
  Connection& first = *pooled->connections.front();
  pooled->schema_version = schema_version(first);
  pooled->schema = read_schema(first);
  SQLite::Statement tables(first.database(),
                           "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
  while (tables.executeStep()) pooled->tables.push_back(tables.getColumn(0).getString());
  return pooled;
}

// Leaves the database as a fresh copy of its template; false when it cannot be reused.
bool empty_for_reuse(SharedDatabase::Pooled& pooled) {
  for (const auto& connection : pooled.connections) {
    sqlite3* handle = connection->database().getHandle();
    // A world destroyed mid-handler may leave a statement stepped or a transaction open.
    for (sqlite3_stmt* statement = sqlite3_next_stmt(handle, nullptr); statement != nullptr;
         statement = sqlite3_next_stmt(handle, statement)) {
      sqlite3_reset(statement);
    }
    if (sqlite3_get_autocommit(handle) == 0) connection->database().exec("ROLLBACK");
  }
  Connection& first = *pooled.connections.front();
  if (schema_version(first) != pooled.schema_version) {
    // A scenario dropped an index (exercise 3, docs/scenarios.md): make it again, as created, and
    // reuse the database only if that gives back the schema exactly.
    const auto now = read_schema(first);
    for (const auto& entry : pooled.schema) {
      if (entry[0] != "index" || entry[2].empty()) continue;
      if (std::find(now.begin(), now.end(), entry) == now.end()) first.database().exec(entry[2]);
    }
    if (read_schema(first) != pooled.schema) return false;
    pooled.schema_version = schema_version(first);
  }
  StatementUse begin(first.prepared("BEGIN"));
  begin->exec();
  for (const std::string& table : pooled.tables) {
    StatementUse remove(first.prepared("DELETE FROM \"" + table + "\""));
    remove->exec();
  }
  StatementUse commit(first.prepared("COMMIT"));
  commit->exec();
  return true;
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
}

namespace {

// The page cache of each connection to a temporary database: 2,000 pages of 4 KiB, 8 MiB.
constexpr int64_t kTemporaryCachePages = 2'000;

// A file name no other database of this process or another one uses.
std::string fresh_temporary_path() {
  static std::atomic<uint64_t> next{1};
  const std::filesystem::path directory = std::filesystem::temp_directory_path();
  return (directory / ("inboxsim-" + std::to_string(::getpid()) + "-" +
                       std::to_string(next.fetch_add(1)) + ".sqlite"))
      .string();
}

}  // namespace

std::unique_ptr<SharedDatabase> SharedDatabase::temporary(
    std::string schema_key, std::function<void(SQLite::Database&)> create_schema,
    int64_t connections) {
  auto database = std::make_unique<SharedDatabase>(
      fresh_temporary_path(), std::move(schema_key), std::move(create_schema), connections);
  database->remove_file_ = true;
  return database;
}

// The connections of a temporary database share one page cache (SQLite's shared-cache mode),
// which holds the file's only lock, exclusively: a private file that no other process opens.
// Otherwise every transaction would take and drop the file's locks and read its change counter
// (a handful of system calls each), and each connection would drop its cached pages whenever
// another one wrote, which made a long story five times slower than in memory. The services
// never leave a statement stepped or a transaction open across a step, so the shared cache's
// table locks never make a connection wait.
Connection& SharedDatabase::connect_temporary(bool first) {
  SQLite::Database database("file:" + path_ + "?cache=shared",
                            kOpenFlags | SQLite::OPEN_URI | SQLITE_OPEN_SHAREDCACHE);
  if (first) {
    database.exec("PRAGMA synchronous = OFF");
    database.exec("PRAGMA journal_mode = MEMORY");
    database.exec("PRAGMA locking_mode = EXCLUSIVE");
    database.exec("PRAGMA cache_size = " + std::to_string(kTemporaryCachePages));
    create_schema_(database);
  }
  return *files_.emplace_back(std::make_unique<Connection>(std::move(database)));
}

SharedDatabase::~SharedDatabase() {
  if (remove_file_) {
    files_.clear();  // every connection closed before the file goes
    std::remove(path_.c_str());
    return;
  }
  if (!pooled_) return;
  try {
    if (!empty_for_reuse(*pooled_)) return;
  } catch (const SQLite::Exception&) {
    return;  // closed with the object, never reused
  }
  auto& idle = pool()[pool_key(schema_key_, connections_)];
  if (idle.size() < kPooledPerKey) idle.push_back(std::move(pooled_));
}

Connection& SharedDatabase::connect() {
  INBOXSIM_ASSERT(opened_ < connections_);
  const bool first = opened_++ == 0;
  if (!path_.empty()) {
    if (first) std::remove(path_.c_str());
    if (remove_file_) return connect_temporary(first);
    SQLite::Database database = open_file(path_);
    if (first) create_schema_(database);
    return *files_.emplace_back(std::make_unique<Connection>(std::move(database)));
  }
  if (first) {
    auto& idle = pool()[pool_key(schema_key_, connections_)];
    if (idle.empty()) {
      pooled_ = open_in_memory(schema_key_, create_schema_, connections_);
    } else {
      pooled_ = std::move(idle.back());
      idle.pop_back();
    }
  }
  return *pooled_->connections[static_cast<size_t>(opened_ - 1)];
}

}  // namespace inboxsim
