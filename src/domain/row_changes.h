// The rows behind a run, event by event, for the teaching views: each service
// database's tables and the broker's queues as a learner would look at them, stored as the
// rows there before the first event plus each event's changes, never as a copy per event.
//
// A "source" is one service's database (shared by all its instances) or the broker; a table
// is an SQLite table or, for the broker, one queue, whose rows are its messages keyed by their
// enqueue position. A view replays the changes in order to show the tables after any event, and
// highlights the rows the event inserted, changed or removed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace inboxsim {

// One column value as the view shows it: SQL NULL is nothing, any other value its text.
using Cell = std::optional<std::string>;

enum class RowOp : uint8_t { insert, update, remove };

struct RowChange {
  size_t table = 0;  // index into RowHistory::tables
  RowOp op = RowOp::insert;
  int64_t key = 0;           // the rowid (a queue: the message's enqueue position)
  std::vector<Cell> before;  // update, remove: the row before
  std::vector<Cell> after;   // insert, update: the row after
};

struct TableColumns {
  std::string source;  // "account-service", "transfer-service" or "broker"
  std::string table;   // the SQLite table, or the queue's name
  std::vector<std::string> columns;
};

struct RowHistory {
  bool recorded = false;  // false: the run was not asked to record rows
  std::vector<TableColumns> tables;
  std::vector<RowChange> opening;                // inserts: the rows before the first event
  std::vector<std::vector<RowChange>> by_event;  // by trace event index
};

}  // namespace inboxsim
