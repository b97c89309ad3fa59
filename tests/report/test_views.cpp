// Tests of the rows behind the teaching views: what the row recorder keeps, what the
// HTML report embeds, and what `run --show-rows` prints, on the scenarios of the library.
#include <SQLiteCpp/SQLiteCpp.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <sstream>

#include "support/scenarios.h"
#include "kernel/file_names.h"
#include "report/html.h"
#include "report/narrate.h"
#include "scenario/parse.h"
#include "scenario/runner.h"

using namespace inboxsim;
using inboxsim::testing::library_files;
using inboxsim::testing::library_scenario;
using inboxsim::testing::TemporaryDirectory;

namespace {

RunResult run_recorded(const Scenario& scenario, const std::string& db_dir = "") {
  RunOptions options;
  options.record_rows = true;
  options.db_dir = db_dir;
  return run_scenario(scenario, options);
}

// A table as rows by key: what replaying the recorded changes gives, or what a database holds.
using Table = std::map<int64_t, std::vector<Cell>>;

void apply(std::map<size_t, Table>& tables, const RowChange& change) {
  Table& table = tables[change.table];
  if (change.op == RowOp::remove) {
    REQUIRE(table.count(change.key) == 1);
    REQUIRE(table[change.key] == change.before);
    table.erase(change.key);
  } else {
    if (change.op == RowOp::insert) REQUIRE(table.count(change.key) == 0);
    if (change.op == RowOp::update) REQUIRE(table[change.key] == change.before);
    table[change.key] = change.after;
  }
}

std::map<size_t, Table> replay(const RowHistory& history) {
  std::map<size_t, Table> tables;
  for (const RowChange& change : history.opening) apply(tables, change);
  for (const auto& changes : history.by_event) {
    for (const RowChange& change : changes) apply(tables, change);
  }
  return tables;
}

Table read_table(const std::string& path, const TableColumns& spec) {
  SQLite::Database db(path, SQLite::OPEN_READONLY);
  SQLite::Statement rows(db, "SELECT rowid, * FROM \"" + spec.table + "\" ORDER BY rowid");
  Table table;
  while (rows.executeStep()) {
    std::vector<Cell> cells;
    for (int column = 1; column < rows.getColumnCount(); ++column) {
      const SQLite::Column value = rows.getColumn(column);
      cells.push_back(value.isNull() ? Cell() : Cell(value.getString()));
    }
    table[rows.getColumn(0).getInt64()] = std::move(cells);
  }
  return table;
}

const TableColumns* find_table(const RowHistory& history, std::string_view source,
                               std::string_view table) {
  for (const TableColumns& spec : history.tables) {
    if (spec.source == source && spec.table == table) return &spec;
  }
  return nullptr;
}

size_t column_of(const TableColumns& table, std::string_view name) {
  const auto found = std::find(table.columns.begin(), table.columns.end(), name);
  REQUIRE(found != table.columns.end());
  return static_cast<size_t>(found - table.columns.begin());
}

}  // namespace

// The recorder is checked against the truth: replaying what it kept gives, table by table, the
// databases a run leaves in --db-dir, in every scenario of the library (rolled-back
// transactions, crashes, dropped indexes, cleanup, several instances on one database).
TEST_CASE("replaying the recorded row changes gives the databases the run left", "[views]") {
  for (const std::string& file : library_files()) {
    CAPTURE(file);
    const Scenario scenario = library_scenario(file);
    TemporaryDirectory dir("inboxsim-views-replay");
    const RunResult result = run_recorded(scenario, dir.path.string());
    REQUIRE(result.rows.recorded);
    REQUIRE(result.rows.by_event.size() == result.events.size());
    const std::map<size_t, Table> replayed = replay(result.rows);
    size_t compared = 0;
    for (size_t index = 0; index < result.rows.tables.size(); ++index) {
      const TableColumns& spec = result.rows.tables[index];
      if (spec.source == "broker") continue;
      CAPTURE(spec.source, spec.table);
      const std::string path =
          (dir.path / (safe_file_stem(scenario.name) + "." + spec.source + ".sqlite")).string();
      const auto found = replayed.find(index);
      const Table expected = found == replayed.end() ? Table() : found->second;
      CHECK(read_table(path, spec) == expected);
      ++compared;
    }
    CHECK(compared >= 8);  // both services' tables were there to compare
  }
}

// The queues as replayed end as the broker does: the dead-letter and error queues hold what the
// run reports as parked, and a settled run leaves its work queues empty.
TEST_CASE("replayed queues end with the parked messages the run reports", "[views]") {
  for (const std::string& file :
       {std::string("37-error-queue-hazard.json"), std::string("40-poison-quorum-queue.json"),
        std::string("09-crash-after-commit.json")}) {
    CAPTURE(file);
    const RunResult result = run_recorded(library_scenario(file));
    const std::map<size_t, Table> replayed = replay(result.rows);
    std::vector<std::string> parked;
    size_t queued = 0;
    for (const auto& [index, table] : replayed) {
      const TableColumns& spec = result.rows.tables[index];
      if (spec.source != "broker") continue;
      const bool parking = spec.table.find(".dlq") != std::string::npos ||
                           spec.table.find("_error") != std::string::npos;
      for (const auto& [key, row] : table) {
        if (parking) {
          parked.push_back(spec.table + ": " + *row[column_of(spec, "type")] + " " +
                           *row[column_of(spec, "transfer")] + " (" +
                           *row[column_of(spec, "message_id")] + ")");
        } else {
          ++queued;
        }
      }
    }
    std::vector<std::string> expected = result.parked;
    std::sort(expected.begin(), expected.end());
    std::sort(parked.begin(), parked.end());
    CHECK(parked == expected);
    CHECK(queued == 0);
  }
  // 37 and 40 do park something, so the comparison above is not between two empty lists.
  CHECK_FALSE(run_recorded(library_scenario("40-poison-quorum-queue.json")).parked.empty());
}

// What the highlight means: the rows an event changed are that event's own. A dedupe record is
// written for the message the event names, and an ack takes that message off its queue.
TEST_CASE("row changes go to the event that made them", "[views]") {
  const RunResult result = run_recorded(library_scenario("09-crash-after-commit.json"));
  const RowHistory& rows = result.rows;
  const TableColumns* inbox = find_table(rows, "account-service", "inbox_state");
  const TableColumns* processed = find_table(rows, "transfer-service", "processed_messages");
  REQUIRE(inbox != nullptr);
  REQUIRE(processed != nullptr);
  int64_t inserts_checked = 0;
  int64_t acks_checked = 0;
  for (size_t i = 0; i < result.events.size(); ++i) {
    const TraceEvent& event = result.events[i];
    for (const RowChange& change : rows.by_event[i]) {
      const TableColumns& spec = rows.tables[change.table];
      if (change.op == RowOp::insert && (&spec == inbox || &spec == processed)) {
        CAPTURE(i, describe_event(event));
        CHECK(event.kind == EventKind::dedupe_record);
        CHECK(*change.after[column_of(spec, "message_id")] == event.message_id);
        ++inserts_checked;
      }
    }
    if (event.kind == EventKind::ack) {
      const auto removes_own = std::any_of(
          rows.by_event[i].begin(), rows.by_event[i].end(), [&](const RowChange& change) {
            const TableColumns& spec = rows.tables[change.table];
            return spec.source == "broker" && change.op == RowOp::remove &&
                   *change.before[column_of(spec, "message_id")] == event.message_id;
          });
      CAPTURE(i, describe_event(event));
      CHECK(removes_own);
      ++acks_checked;
    }
  }
  CHECK(inserts_checked >= 3);  // m-1 and m-3 in the inbox, m-2 in processed_messages
  CHECK(acks_checked >= 3);
  // The opening balances are the accounts table before the first event.
  const TableColumns* accounts = find_table(rows, "account-service", "accounts");
  REQUIRE(accounts != nullptr);
  CHECK(std::count_if(rows.opening.begin(), rows.opening.end(), [&](const RowChange& change) {
          return &rows.tables[change.table] == accounts;
        }) == 2);
}

TEST_CASE("a retention pass's deletes go to its cleanup event, not to the clock's jump",
          "[views]") {
  // Scenario 15: the clock runs on past the inbox window, and the cleanup that falls due
  // meanwhile deletes the two inbox rows. The pass's commit records no event of its own: its
  // rows belong to the cleanup event that follows it, which says how many there were.
  const RunResult result = run_recorded(library_scenario("15-window-too-short-no-index.json"));
  const RowHistory& rows = result.rows;
  const TableColumns* inbox = find_table(rows, "account-service", "inbox_state");
  REQUIRE(inbox != nullptr);
  int64_t cleanups = 0;
  for (size_t i = 0; i < result.events.size(); ++i) {
    const TraceEvent& event = result.events[i];
    const auto deleted = std::count_if(
        rows.by_event[i].begin(), rows.by_event[i].end(), [&](const RowChange& change) {
          return &rows.tables[change.table] == inbox && change.op == RowOp::remove;
        });
    CAPTURE(i, describe_event(event));
    if (event.kind == EventKind::cleanup) {
      ++cleanups;
      CHECK(event.cleaned == CleanupOf::dedupe_records);
      CHECK(deleted == event.rows_deleted);
    } else {
      CHECK(deleted == 0);
    }
  }
  CHECK(cleanups == 1);
}

// The recorder only watches: a run records the same trace with or without it, and a run that
// was not asked for rows keeps none.
TEST_CASE("recording rows changes no trace, and is off unless asked for", "[views]") {
  for (const std::string& file : library_files()) {
    CAPTURE(file);
    const Scenario scenario = library_scenario(file);
    const RunResult plain = run_scenario(scenario, RunOptions());
    const RunResult recorded = run_recorded(scenario);
    CHECK(plain.trace_hash == recorded.trace_hash);
    CHECK_FALSE(plain.rows.recorded);
    CHECK(plain.rows.by_event.empty());
    CHECK(plain.rows.tables.empty());
  }
}

TEST_CASE("show-rows lines name the table, the row and what changed", "[views]") {
  RowHistory history;
  history.tables.push_back(TableColumns{
      "account-service", "inbox_state", {"id", "message_id", "receive_count", "consumed_ms"}});
  RowChange insert{0, RowOp::insert, 1, {}, {"1", "m-1", "0", std::nullopt}};
  RowChange update{0, RowOp::update, 1, {"1", "m-1", "0", std::nullopt}, {"1", "m-1", "1", "19"}};
  RowChange remove{0, RowOp::remove, 1, {"1", "m-1", "1", "19"}, {}};
  const std::vector<std::string> lines = describe_row_changes(history, {insert, update, remove});
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "+ account-service.inbox_state #1  id=1 message_id=m-1 receive_count=0");
  CHECK(lines[1] ==
        "~ account-service.inbox_state #1  receive_count: 0 → 1, consumed_ms: NULL → 19");
  CHECK(lines[2] ==
        "- account-service.inbox_state #1  deleted (id=1 message_id=m-1 receive_count=1 "
        "consumed_ms=19)");
}

TEST_CASE("run --show-rows prints each event's rows under its line", "[views]") {
  const Scenario scenario = library_scenario("09-crash-after-commit.json");
  std::ostringstream out;
  Narrator narrator(out, NarratorOptions{});
  RunOptions options;
  options.listener = [&](const TraceEvent& event) { narrator.on_event(event); };
  options.row_listener = [&](const RowHistory& history, const std::vector<RowChange>& changes) {
    narrator.on_row_changes(history, changes);
  };
  run_scenario(scenario, options);
  const std::string text = out.str();
  // The inbox row's insert follows the line that says it was inserted, before the next event.
  const size_t said = text.find("inbox: row (m-1, account-consumer) inserted");
  REQUIRE(said != std::string::npos);
  const size_t line_end = text.find('\n', said);
  const size_t next_line_end = text.find('\n', line_end + 1);
  CHECK(text.substr(line_end + 1, next_line_end - line_end - 1)
            .find("+ account-service.inbox_state #1  id=1 message_id=m-1") != std::string::npos);
  // The redelivery of m-2 was a duplicate whose insert rolled back: m-2 got one row, not two.
  size_t inserts = 0;
  for (size_t at = text.find("+ transfer-service.processed_messages"); at != std::string::npos;
       at = text.find("+ transfer-service.processed_messages", at + 1)) {
    if (text.substr(at, text.find('\n', at) - at).find("message_id=m-2 ") != std::string::npos) {
      ++inserts;
    }
  }
  CHECK(inserts == 1);
  CHECK(text.find("REDELIVERED") != std::string::npos);
}

// The page carries the rows as changes, the invariants and the first-violation control; a
// failing run opens at its first violation (the page's script reads `passed` for that).
TEST_CASE("the HTML report embeds the tables' changes and the invariants", "[views]") {
  Scenario scenario = library_scenario("09-crash-after-commit.json");
  const RunResult result = run_recorded(scenario);
  const std::string html = render_html(result);
  CHECK(html.find("\"rows\":{\"changes\":{") != std::string::npos);
  CHECK(html.find("[\"account-service\",\"inbox_state\",[\"id\",\"message_id\"") !=
        std::string::npos);
  CHECK(html.find("\"invariants\":[\"conservation\"") != std::string::npos);
  CHECK(html.find("id=\"b-violation\"") != std::string::npos);
  CHECK(html.find("lineline") == std::string::npos);
  CHECK(html.find("line.a-request{") != std::string::npos);
  CHECK(html.find("hashchange") != std::string::npos);
  // Changes, not copies: the row data is a small part of the page.
  const size_t rows_at = html.find("\"rows\":");
  const size_t rows_size = html.find("</script>", rows_at) - rows_at;
  CHECK(rows_size < html.size() / 4);
}
