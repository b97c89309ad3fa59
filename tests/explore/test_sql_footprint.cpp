// What the explorer reads from a statement's text (world/sql_footprint.h): the rows a statement
// reads are keyed only where its text says so plainly, and read whole otherwise, since reading
// too little would lose orders. Every statement the services run is held to one of the two.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

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

}  // namespace inboxsim
