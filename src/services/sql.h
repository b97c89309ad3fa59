// Small helpers around SQLiteCpp shared by both services.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <functional>
#include <optional>
#include <string>

namespace inboxsim {

// A statement prepared on its first use, then kept: a run prepares only what its
// configuration and its story use (a fuzz seed is short, and preparing is not free).
class LazyStatement {
 public:
  LazyStatement(SQLite::Database& db, std::string sql) : db_(db), sql_(std::move(sql)) {}

  SQLite::Statement& get() {
    if (!statement_) statement_.emplace(db_, sql_);
    return *statement_;
  }

 private:
  SQLite::Database& db_;
  std::string sql_;
  std::optional<SQLite::Statement> statement_;
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
// database is: every instance opens its own connection to it (DESIGN §8.1).
//
// In memory, a single connection gets a private ":memory:" database copied from a per-thread
// schema template (SQLite's backup API copies pages; running the DDL again for every fuzz seed
// would cost more than the seed's own transactions). Several connections share one database
// through SQLite's memdb VFS ("file:/name?vfs=memdb", SQLite 3.36 and later): a name that begins
// with "/" is one database for every connection of the process that opens it, with SQLite's
// ordinary locking, so each connection is a connection as to a file. With a path, the database
// is that file, and every connection opens it.
class SharedDatabase {
 public:
  // `path` empty: in memory. `connections` is how many connections will be opened.
  // REQUIRES: connections >= 1.
  SharedDatabase(std::string path, std::string schema_key,
                 std::function<void(SQLite::Database&)> create_schema, int64_t connections);

  // Returns a new connection; the first one finds the schema created.
  SQLite::Database connect();

 private:
  std::string path_;
  std::string schema_key_;
  std::function<void(SQLite::Database&)> create_schema_;
  int64_t connections_;
  int64_t opened_ = 0;
  std::string shared_uri_;  // in memory with several connections: the memdb name
};

}  // namespace inboxsim
