// What the explorer reads from a statement's text (world/sql_footprint.h): the rows a statement
// reads are keyed only where its text says so plainly, and read whole otherwise, since reading
// too little would lose orders. Every statement the services run is held to one of the two.
#include <catch2/catch.hpp>
#include <sqlite3.h>

#include <string>
#include <vector>

#include "kernel/footprint.h"
#include "world/explore_driver.h"
#include "world/sql_footprint.h"

namespace inboxsim {

TEST_CASE("a lookup by one column of one table reads the rows holding that value",
          "[footprint]") {
  const StatementShape inbox = statement_shape(
      "SELECT id, consumed_ms IS NOT NULL FROM inbox_state WHERE message_id = ? AND"
      " consumer_id = ? ORDER BY id LIMIT 2");
  CHECK(inbox.kind == StatementShape::Kind::read);
  CHECK(inbox.tables == std::vector<std::string>{"inbox_state"});
  CHECK(inbox.key_column == "message_id");

  const StatementShape update =
      statement_shape("UPDATE accounts SET balance = balance + ? WHERE name = ? RETURNING balance");
  CHECK(update.tables == std::vector<std::string>{"accounts"});
  CHECK(update.key_column == "name");

  std::string value;
  REQUIRE(keyed_value(
      "UPDATE accounts SET balance = balance + -2500 WHERE name = 'o''brien' RETURNING balance",
      "name", value));
  CHECK(value == "o'brien");
  REQUIRE(keyed_value("UPDATE outbox SET sent_ms = 0 WHERE seq = 12 AND sent_ms IS NULL", "seq",
                      value));
  CHECK(value == "12");
  CHECK_FALSE(keyed_value("SELECT 1 FROM t WHERE a = NULL", "a", value));
}

TEST_CASE("what the text does not bound plainly is read whole", "[footprint]") {
  // No WHERE, a range, an OR, a subquery over two tables, an IN: no key.
  for (const char* sql : {
           "SELECT name, balance FROM accounts ORDER BY name",
           "DELETE FROM inbox_state WHERE delivered_ms < ?",
           "SELECT 1 FROM ledger WHERE transfer_id = ? OR account = ?",
           "SELECT COUNT(*) FROM outbox o WHERE o.delivered_ms IS NULL AND EXISTS (SELECT 1 FROM"
           " inbox_state i WHERE i.message_id = o.inbox_message_id)",
           "DELETE FROM inbox_state WHERE id IN (SELECT id FROM inbox_state WHERE delivered_ms < ?1"
           " ORDER BY delivered_ms, id LIMIT ?2)",
           "SELECT 1 FROM t WHERE a BETWEEN ? AND ? AND b = ?",
       }) {
    INFO(sql);
    const StatementShape shape = statement_shape(sql);
    CHECK(shape.kind == StatementShape::Kind::read);
    CHECK(shape.key_column.empty());
  }
  CHECK(statement_shape("SELECT COUNT(*) FROM outbox o WHERE EXISTS (SELECT 1 FROM inbox_state i)")
            .tables == std::vector<std::string>{"outbox", "inbox_state"});
  // A conjunct inside parentheses bounds nothing at the top.
  CHECK(statement_shape("SELECT 1 FROM t WHERE (a = ? OR b = ?) AND c > 1").key_column.empty());
}

TEST_CASE("an insert reads the rows holding its values, when they are plain literals",
          "[footprint]") {
  const StatementShape insert = statement_shape(
      "INSERT OR IGNORE INTO rejected_debits (transfer_id) VALUES (?)");
  CHECK(insert.kind == StatementShape::Kind::insert);
  CHECK(insert.insert_columns == std::vector<std::string>{"transfer_id"});

  std::vector<std::string> values;
  REQUIRE(insert_values("INSERT INTO ledger (transfer_id, type, account, amount) VALUES ('t1',"
                        " 'DEBIT', 'alice', -2500)",
                        values));
  CHECK(values == std::vector<std::string>{"t1", "DEBIT", "alice", "-2500"});
  // A value that is an expression, or several rows: read the table whole.
  CHECK_FALSE(insert_values("INSERT INTO t (a, b) VALUES (1, (SELECT MAX(b) FROM t))", values));
  CHECK_FALSE(insert_values("INSERT INTO t (a) VALUES (1), (2)", values));
  CHECK(statement_shape("INSERT INTO t SELECT * FROM u").insert_columns.empty());
}

TEST_CASE("transactions read nothing, and a schema change writes the database", "[footprint]") {
  CHECK(statement_shape("BEGIN").kind == StatementShape::Kind::none);
  CHECK(statement_shape("COMMIT").kind == StatementShape::Kind::none);
  CHECK(statement_shape("DROP INDEX IF EXISTS ledger_transfer_type").kind ==
        StatementShape::Kind::ddl);
  CHECK(statement_shape("CREATE UNIQUE INDEX k ON t (a)").kind == StatementShape::Kind::ddl);
}

namespace {

// The footprints of statements run as events of their own on one watched in-memory database.
class Statements {
 public:
  Statements() {
    REQUIRE(sqlite3_open(":memory:", &db_) == SQLITE_OK);
    exec("CREATE TABLE inbox (id INTEGER PRIMARY KEY, message_id TEXT NOT NULL,"
         " consumer TEXT NOT NULL, UNIQUE (message_id, consumer))");
    exec("INSERT INTO inbox (message_id, consumer) VALUES ('m-1', 'c'), ('m-2', 'c')");
    footprint_.watch(db_, 1, "test");
  }
  ~Statements() { sqlite3_close(db_); }
  Statements(const Statements&) = delete;
  Statements& operator=(const Statements&) = delete;

  // Runs `sql` as one event and returns its footprint.
  const std::vector<uint64_t>& event(const char* sql) {
    LoggedEvent event;
    event.kind = "test";
    driver_.begin_event(event);
    exec(sql);
    driver_.end_event(BrokerTouches{});
    return driver_.log().events.back().footprint;
  }

 private:
  void exec(const char* sql) {
    char* error = nullptr;
    const int status = sqlite3_exec(db_, sql, nullptr, nullptr, &error);
    INFO((error != nullptr ? error : ""));
    sqlite3_free(error);
    REQUIRE(status == SQLITE_OK);
  }

  sqlite3* db_ = nullptr;
  ExploreDriver driver_{ExploreControl{}};
  SqlFootprint footprint_{driver_};
};

}  // namespace

TEST_CASE(
    "two reads commute, and a change meets the reads keyed on its values, not another change",
    "[footprint]") {
  Statements db;
  const auto read = db.event("SELECT id FROM inbox WHERE message_id = 'm-1'");
  const auto again = db.event("SELECT id, consumer FROM inbox WHERE message_id = 'm-1'");
  const auto other = db.event("SELECT id FROM inbox WHERE message_id = 'm-2'");
  const auto scan = db.event("SELECT COUNT(*) FROM inbox");
  const auto scan_again = db.event("SELECT MAX(id) FROM inbox");
  CHECK_FALSE(footprints_meet(read, again));
  CHECK_FALSE(footprints_meet(read, other));
  CHECK_FALSE(footprints_meet(scan, scan_again));
  CHECK_FALSE(footprints_meet(scan, read));
  // Two rows that share a consumer: changing one meets the reads of it, and not the other's.
  const auto change = db.event("UPDATE inbox SET consumer = 'd' WHERE message_id = 'm-1'");
  const auto change_other = db.event("UPDATE inbox SET consumer = 'e' WHERE message_id = 'm-2'");
  CHECK(footprints_meet(change, read));
  CHECK(footprints_meet(change, scan));
  CHECK_FALSE(footprints_meet(change, other));
  CHECK_FALSE(footprints_meet(change, change_other));
  CHECK(footprints_meet(change_other, other));
  // A read keyed on a value a change left (or gave) the row meets it too.
  const auto by_consumer = db.event("SELECT id FROM inbox WHERE consumer = 'c'");
  CHECK(footprints_meet(change, by_consumer));
  CHECK(meeting_classes(change, by_consumer) == std::vector<ResourceClass>{ResourceClass::row_key});
  // An insert meets the reads of its key, and every other insert (its rowid is the next one).
  const auto insert = db.event("INSERT INTO inbox (message_id, consumer) VALUES ('m-3', 'c')");
  const auto insert_other =
      db.event("INSERT INTO inbox (message_id, consumer) VALUES ('m-4', 'f')");
  CHECK(footprints_meet(insert, db.event("SELECT id FROM inbox WHERE message_id = 'm-3'")));
  CHECK_FALSE(footprints_meet(insert, read));
  CHECK(footprints_meet(insert, scan));
  CHECK(footprints_meet(insert, insert_other));
  CHECK(meeting_classes(insert, insert_other) ==
        std::vector<ResourceClass>{ResourceClass::table_insert});
}

TEST_CASE("a write meets every access, and a shared access meets only another kind",
          "[footprint]") {
  const uint64_t resource = resource_id(ResourceClass::row_key, 7);
  const auto one = [&](Access access) {
    return std::vector<uint64_t>{footprint_entry(resource, access)};
  };
  for (const Access shared : {Access::read, Access::query, Access::change}) {
    CHECK(footprints_meet(one(Access::write), one(shared)));
    CHECK_FALSE(footprints_meet(one(shared), one(shared)));
  }
  CHECK(footprints_meet(one(Access::write), one(Access::write)));
  CHECK(footprints_meet(one(Access::query), one(Access::change)));
  // An event that both queries a value and changes a row holding it meets either alone.
  std::vector<uint64_t> both{footprint_entry(resource, Access::query),
                             footprint_entry(resource, Access::change)};
  CHECK(footprints_meet(both, one(Access::query)));
  CHECK(footprints_meet(both, one(Access::change)));
  // Another resource of the same class is not met.
  CHECK_FALSE(footprints_meet(
      one(Access::write),
      std::vector<uint64_t>{footprint_entry(resource_id(ResourceClass::row_key, 8),
                                            Access::write)}));
}

}  // namespace inboxsim
