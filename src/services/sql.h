// Small helpers around SQLiteCpp shared by both services.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>
#include <sqlite3.h>

#include <array>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace inboxsim {

// A table whose insertion order no statement reads across its rows, only (if at all) among the
// rows of one group: the rows holding one value in `group_column`. Two transactions that insert
// into two groups of it then reach the same state in either order, up to which rowids the rows
// got, so the explorer lets them commute and its canonical fingerprint reads the rows as a set,
// each with its rank in its group instead of its rowid (docs/model.md, "Names whose order
// nothing reads"). A service lists such tables (AccountService::unordered_tables).
struct UnorderedTable {
  const char* name;
  const char* group_column;  // nullptr: nothing reads the order of its rows at all
  // Every row as the state knows it, with ranks for rowids (a row's rank in its group, a
  // reference to another table's row as that row's rank in its group).
  const char* canonical_rows;
};

// One connection and the statements prepared on it, kept by their SQL text. The connection may
// outlive the world that used it (SharedDatabase pools in-memory databases per thread), so a
// statement is prepared once per connection, not once per world: a fuzz seed or an explorer
// replay builds a world, and preparing was half of a replay's time.
class Connection {
 public:
  explicit Connection(SQLite::Database database) : database_(std::move(database)) {}
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  SQLite::Database& database() { return database_; }

  // The statement for `sql`, prepared on first use. The reference stays valid as long as the
  // connection: statements are never removed from the cache.
  SQLite::Statement& prepared(const std::string& sql) {
    auto found = statements_.find(sql);
    if (found == statements_.end()) {
      found = statements_.emplace(sql, std::make_unique<SQLite::Statement>(database_, sql)).first;
    }
    return *found->second;
  }

  // What ServiceCore::fingerprint_database reads, kept while the schema stays the same
  // (PRAGMA schema_version): the schema's rows, and for each table a statement that reads all
  // of it in rowid order. The statements are SQLite's own (read column by column, with no copy
  // of a value and no counted reference per column: the explorer fingerprints every state).
  struct RawStatementFree {
    void operator()(sqlite3_stmt* statement) const { sqlite3_finalize(statement); }
  };
  struct TableDump {
    std::string name;
    std::unique_ptr<sqlite3_stmt, RawStatementFree> rows;
  };
  struct DumpPlan {
    int64_t schema_version = -1;
    std::vector<std::array<std::string, 3>> schema;  // type, name, sql; by type, then name
    std::vector<TableDump> tables;
    // The canonical fingerprint's statements of the unordered tables, by their text
    // (UnorderedTable::canonical_rows).
    std::map<const char*, std::unique_ptr<sqlite3_stmt, RawStatementFree>> sets;
  };
  DumpPlan& dump_plan() { return dump_plan_; }

 private:
  // Declared first, destroyed last: every statement is finalized before the connection closes.
  SQLite::Database database_;
  std::map<std::string, std::unique_ptr<SQLite::Statement>, std::less<>> statements_;
  DumpPlan dump_plan_;
};

// The schema of `connection`'s database (type, name and SQL of each entry, by type then name;
// no SQL is ""), and its schema cookie, which SQLite changes whenever the schema changes.
std::vector<std::array<std::string, 3>> read_schema(Connection& connection);
// The CREATE statements of the named indexes that exist, in the order named.
std::vector<std::string> index_statements(SQLite::Database& db,
                                          std::initializer_list<const char*> names);
int64_t schema_version(Connection& connection);

// A statement prepared on its first use, then kept: a run prepares only what its
// configuration and its story use, and a pooled connection never prepares it again.
class LazyStatement {
 public:
  LazyStatement(Connection& connection, std::string sql)
      : connection_(connection), sql_(std::move(sql)) {}

  SQLite::Statement& get() {
    if (statement_ == nullptr) statement_ = &connection_.prepared(sql_);
    return *statement_;
  }

 private:
  Connection& connection_;
  std::string sql_;
  SQLite::Statement* statement_ = nullptr;
};

// Resets a prepared statement before and after use, so a statement that threw halfway (a
// crash point, a constraint) never keeps a read lock or stale bindings.
class StatementUse {
 public:
  explicit StatementUse(SQLite::Statement& statement) : statement_(statement) {
    statement_.reset();
    statement_.clearBindings();
  }
  explicit StatementUse(LazyStatement& statement) : StatementUse(statement.get()) {}
  ~StatementUse() {
    try {
      statement_.reset();
    } catch (...) {
      // reset() reports the error of the last step again; it was already handled there.
    }
  }
  StatementUse(const StatementUse&) = delete;
  StatementUse& operator=(const StatementUse&) = delete;

  SQLite::Statement* operator->() { return &statement_; }
  SQLite::Statement& operator*() { return statement_; }

 private:
  SQLite::Statement& statement_;
};

// SQLITE_CONSTRAINT_PRIMARYKEY and SQLITE_CONSTRAINT_UNIQUE: a duplicate is detected by its
// extended error code, never by the message text.
inline bool is_unique_violation(const SQLite::Exception& error) {
  const int code = error.getExtendedErrorCode();
  return code == 1555 || code == 2067;
}

// One service's database, shared by the service's instances the way one Postgres or MongoDB
// database is: every instance opens its own connection to it (docs/contract.md §8.1).
//
// In memory, a single connection gets a private ":memory:" database copied from a per-thread
// schema template (SQLite's backup API copies pages; running the DDL again for every fuzz seed
// would cost more than the seed's own transactions). Several connections share one database
// through SQLite's memdb VFS ("file:/name?vfs=memdb", SQLite 3.36 and later): a name that begins
// with "/" is one database for every connection of the process that opens it, with SQLite's
// ordinary locking, so each connection is a connection as to a file. With a path, the database
// is that file, and every connection opens it.
//
// In memory, the connections come from a per-thread pool and go back to it, emptied, when the
// SharedDatabase is destroyed: the next world of the same schema and instance count finds them
// open, their schema read and their statements prepared. Emptied means every table's rows
// deleted, which leaves what a fresh copy of the template has (rowids start at 1 again: no
// table uses AUTOINCREMENT). A database whose schema changed (a scenario dropped an index) is
// closed instead.
class SharedDatabase {
 public:
  // `path` empty: in memory. `connections` is how many connections will be opened.
  // REQUIRES: connections >= 1.
  SharedDatabase(std::string path, std::string schema_key,
                 std::function<void(SQLite::Database&)> create_schema, int64_t connections);

  // A database in a temporary file of its own (in the system's temporary directory, removed
  // when the database is destroyed), for a story whose data would not fit in memory: SQLite
  // keeps a bounded cache of its pages per connection (kTemporaryCachePages) and the rest is
  // the operating system's to keep or write out. Same schema, same statements, same results as
  // in memory.
  static std::unique_ptr<SharedDatabase> temporary(
      std::string schema_key, std::function<void(SQLite::Database&)> create_schema,
      int64_t connections);
  ~SharedDatabase();
  SharedDatabase(const SharedDatabase&) = delete;
  SharedDatabase& operator=(const SharedDatabase&) = delete;

  // Returns the next connection; the first one finds the schema created. The connection lives
  // as long as this object.
  // REQUIRES: fewer than `connections` connections were returned.
  Connection& connect();

  // The connections of one in-memory database and what the pool checks before reusing them.
  struct Pooled;

 private:
  Connection& connect_temporary(bool first);

  std::string path_;
  std::string schema_key_;
  std::function<void(SQLite::Database&)> create_schema_;
  int64_t connections_;
  int64_t opened_ = 0;
  std::unique_ptr<Pooled> pooled_;                       // in memory
  std::vector<std::unique_ptr<Connection>> files_;        // with a path
  bool remove_file_ = false;                              // temporary(): removed at the end
};

}  // namespace inboxsim
