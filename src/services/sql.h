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

// Opens a service database with its schema: a fresh file when a path is given, else in memory.
// An in-memory database is copied from a per-thread template built once per `schema_key`
// (SQLite's backup API copies pages; running the DDL again for every fuzz seed would cost more
// than the seed's own transactions).
SQLite::Database open_service_database(const std::string& path, const std::string& schema_key,
                                       const std::function<void(SQLite::Database&)>& create_schema);

}  // namespace inboxsim
