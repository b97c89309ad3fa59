// The rows an explored event reads or changes in the services' databases, for the explorer's
// footprints (kernel/footprint.h): two handlers of two transfers that touch other rows of the
// same tables commute, where "the service's database" would order every two of them.
//
// SQLite tells what a statement changes: its pre-update hook hands over every row inserted,
// updated or deleted, before and after. What a statement reads it does not tell, so the
// statement's text says it (sqlite3_trace_v2 hands each statement over as it starts): a
// statement on one table whose WHERE holds `column = value` as a conjunct (and no OR) reads only
// the rows holding that value there; an INSERT reads the rows holding its values in the first
// column of each unique key (a unique index refuses it, or INSERT OR IGNORE skips, because of
// such a row); any other statement reads its tables whole.
//
// As resources (ResourceClass::row_key, kernel/footprint.h's accesses): a row change writes the
// row itself (its rowid) and changes (Access::change) "the rows holding value v in column c" for
// each of its values before and after; a keyed read queries (Access::query) that resource. Two
// changes of two rows that share a value (a consumer id, a status) then commute, two keyed reads
// of one value commute, and a change meets every read keyed on one of its values. In the same
// way a read of a whole table queries ResourceClass::table_scan, which every row change
// changes; an insert or a delete writes where the table's next rowid comes from
// (ResourceClass::table_insert), which the state's rows show, except in a table whose order is
// read only among a group's rows (UnorderedTable), where an insert writes its group's order
// and a delete nothing.
//
// Reading too much only costs the explorer orders; reading too little would lose some, so
// whatever the text does not say plainly is read whole.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/footprint.h"
#include "services/sql.h"

namespace inboxsim {

class ExploreDriver;
}  // namespace inboxsim

struct sqlite3;
struct sqlite3_stmt;

namespace inboxsim {

// What a statement's text says it reads (SqlFootprint's parse, kept per text).
struct StatementShape {
  enum class Kind : uint8_t { none, read, insert, ddl };
  Kind kind = Kind::none;
  std::vector<std::string> tables;  // every table (or view) it names
  // Kind::read on one table: the column of a `column = value` conjunct of its WHERE.
  std::string key_column;
  // Kind::insert: its columns, in the order of its VALUES (empty: read the table whole).
  std::vector<std::string> insert_columns;
};

// Parses a statement's text (exposed for tests).
StatementShape statement_shape(std::string_view sql);
// The value of `column = value` in the WHERE of an expanded statement (its parameters written
// as literals), as SqlFootprint keys it; false when there is no such literal.
bool keyed_value(std::string_view expanded_sql, std::string_view column, std::string& value);
// The literals of an expanded INSERT's VALUES, as keyed; false when one is not a literal.
bool insert_values(std::string_view expanded_sql, std::vector<std::string>& values);

class SqlFootprint {
 public:
  explicit SqlFootprint(ExploreDriver& driver);
  ~SqlFootprint();
  SqlFootprint(const SqlFootprint&) = delete;
  SqlFootprint& operator=(const SqlFootprint&) = delete;

  // Watches a connection of service `scope`'s database, whose schema `schema_key` names (the
  // tables' columns are read once per connection and schema), where the insertion order of
  // the tables in `unordered` is read only among each group's rows (an insert is ordered only
  // with the other inserts into its group). REQUIRES: no transaction open.
  void watch(sqlite3* handle, uint64_t scope, const std::string& schema_key,
             std::span<const UnorderedTable> unordered = {});

  // While held, statements are not footprinted: the explorer's own reads (the state's
  // fingerprint reads every table) are nobody's event.
  class Quiet {
   public:
    explicit Quiet(SqlFootprint* footprint) : footprint_(footprint) {
      if (footprint_ != nullptr) ++footprint_->quiet_;
    }
    ~Quiet() {
      if (footprint_ != nullptr) --footprint_->quiet_;
    }
    Quiet(const Quiet&) = delete;
    Quiet& operator=(const Quiet&) = delete;

   private:
    SqlFootprint* footprint_;
  };

  struct Table {
    std::string name;
    std::vector<std::string> columns;
    int rowid_column = -1;  // the INTEGER PRIMARY KEY column, if any
    // The first column of each unique key (primary key or unique index): where an insert looks
    // for the row that would refuse it.
    std::vector<std::string> unique_columns;
  };

 private:
  struct Watched;
  static int on_statement(unsigned type, void* context, void* statement, void* text);
  static void on_preupdate(void* context, sqlite3* handle, int op, const char* database,
                           const char* table, long long old_rowid, long long new_rowid);
  void statement(const Watched& watched, sqlite3_stmt* statement);
  void row_change(const Watched& watched, int op, std::string_view table, int64_t old_rowid,
                  int64_t new_rowid);
  void touch_row(const Watched& watched, const Table& table, bool old_row, int64_t rowid);
  void insert_order(const Watched& watched, const Table& table, int op);
  void read_whole(const Watched& watched, std::string_view table);
  void touch(uint64_t resource, Access access);

  ExploreDriver& driver_;
  std::vector<std::unique_ptr<Watched>> watched_;
  int quiet_ = 0;
};

}  // namespace inboxsim
