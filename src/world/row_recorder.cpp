#include "world/row_recorder.h"

// The pre-update hook is declared only when this is defined; Debian's libsqlite3 is built with
// it (and with the session extension, which is built on it).
#define SQLITE_ENABLE_PREUPDATE_HOOK 1
#include <sqlite3.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "domain/message.h"
#include "kernel/assert.h"

namespace inboxsim {

// One watched connection: the rows its open transaction wrote, kept until it ends.
struct RowRecorder::Connection {
  RowRecorder* recorder = nullptr;
  sqlite3* handle = nullptr;
  std::string source;
  std::vector<RowChange> pending;
};

namespace {

constexpr const char* kBrokerSource = "broker";

Cell cell_of(sqlite3_value* value) {
  if (value == nullptr || sqlite3_value_type(value) == SQLITE_NULL) return std::nullopt;
  const unsigned char* text = sqlite3_value_text(value);
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_value_bytes(value)));
}

// The table's columns in order. (The pre-update hook hands an INTEGER PRIMARY KEY column back
// as the rowid it is, so no column needs mending.)
std::vector<std::string> column_names(sqlite3* handle, const std::string& table) {
  std::vector<std::string> columns;
  sqlite3_stmt* statement = nullptr;
  const std::string sql = "PRAGMA table_info(\"" + table + "\")";
  INBOXSIM_ASSERT(sqlite3_prepare_v2(handle, sql.c_str(), -1, &statement, nullptr) == SQLITE_OK);
  while (sqlite3_step(statement) == SQLITE_ROW) {
    columns.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(statement, 1)));
  }
  sqlite3_finalize(statement);
  return columns;
}

std::vector<std::string> table_names(sqlite3* handle) {
  std::vector<std::string> names;
  sqlite3_stmt* statement = nullptr;
  const char* sql =
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
      "ORDER BY rowid";
  INBOXSIM_ASSERT(sqlite3_prepare_v2(handle, sql, -1, &statement, nullptr) == SQLITE_OK);
  while (sqlite3_step(statement) == SQLITE_ROW) {
    names.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(statement, 0)));
  }
  sqlite3_finalize(statement);
  return names;
}

const std::vector<std::string> kQueueColumns = {
    "position",     "state",       "message_id",       "type",  "transfer", "consumer",
    "delivery_tag", "redelivered", "x_delivery_count", "reason"};

std::vector<Cell> queue_row(const QueueEntry& entry) {
  const auto text = [](std::string_view value) -> Cell {
    return value.empty() ? Cell() : Cell(std::string(value));
  };
  const auto number = [](int64_t value) -> Cell {
    return value == 0 ? Cell() : Cell(std::to_string(value));
  };
  return {std::to_string(entry.position), std::string(entry.state),
          entry.message->message_id,      std::string(message_type_name(entry.message->type)),
          text(entry.message->transfer),  text(entry.consumer),
          number(entry.delivery_tag),     std::string(entry.redelivered ? "true" : "false"),
          number(entry.delivery_count),   text(entry.reason)};
}

}  // namespace

RowRecorder::RowRecorder(Listener on_changes) : on_changes_(std::move(on_changes)) {
  history_.recorded = true;
}

RowRecorder::~RowRecorder() { unwatch_all(); }

size_t RowRecorder::declare_table(const std::string& source, const std::string& table,
                                  std::vector<std::string> columns) {
  const auto key = std::make_pair(source, table);
  if (const auto found = table_index_.find(key); found != table_index_.end()) return found->second;
  history_.tables.push_back(TableColumns{source, table, std::move(columns)});
  table_index_[key] = history_.tables.size() - 1;
  return history_.tables.size() - 1;
}

void RowRecorder::watch(sqlite3* handle, const std::string& source) {
  INBOXSIM_ASSERT(handle != nullptr);
  INBOXSIM_ASSERT(sqlite3_get_autocommit(handle) != 0);
  const bool first = std::none_of(connections_.begin(), connections_.end(),
                                  [&](const auto& c) { return c->source == source; });
  if (first) read_existing_rows(handle, source);
  auto connection = std::make_unique<Connection>();
  connection->recorder = this;
  connection->handle = handle;
  connection->source = source;
  sqlite3_preupdate_hook(handle, &RowRecorder::on_preupdate, connection.get());
  sqlite3_commit_hook(handle, &RowRecorder::on_commit, connection.get());
  sqlite3_rollback_hook(handle, &RowRecorder::on_rollback, connection.get());
  connections_.push_back(std::move(connection));
}

void RowRecorder::unwatch_all() {
  for (const auto& connection : connections_) {
    sqlite3_preupdate_hook(connection->handle, nullptr, nullptr);
    sqlite3_commit_hook(connection->handle, nullptr, nullptr);
    sqlite3_rollback_hook(connection->handle, nullptr, nullptr);
  }
  connections_.clear();
}

// Declares the database's tables and takes the rows already in them as opening rows (a schema
// copied from a template may hold some; a fresh one holds none).
void RowRecorder::read_existing_rows(sqlite3* handle, const std::string& source) {
  for (const std::string& table : table_names(handle)) {
    const std::vector<std::string> columns = column_names(handle, table);
    const size_t index = declare_table(source, table, columns);
    sqlite3_stmt* statement = nullptr;
    const std::string sql = "SELECT rowid, * FROM \"" + table + "\" ORDER BY rowid";
    INBOXSIM_ASSERT(sqlite3_prepare_v2(handle, sql.c_str(), -1, &statement, nullptr) == SQLITE_OK);
    while (sqlite3_step(statement) == SQLITE_ROW) {
      RowChange change;
      change.table = index;
      change.key = sqlite3_column_int64(statement, 0);
      for (size_t column = 1; column <= columns.size(); ++column) {
        change.after.push_back(cell_of(sqlite3_column_value(statement, static_cast<int>(column))));
      }
      history_.opening.push_back(std::move(change));
    }
    sqlite3_finalize(statement);
  }
}

void RowRecorder::on_preupdate(void* opaque, sqlite3* handle, int op, const char* database,
                               const char* table, long long old_rowid, long long new_rowid) {
  auto* connection = static_cast<Connection*>(opaque);
  if (std::string_view(database) != "main") return;
  RowRecorder& recorder = *connection->recorder;
  const auto found = recorder.table_index_.find({connection->source, table});
  if (found == recorder.table_index_.end()) return;  // not a table of the schema (none yet)
  const int columns = sqlite3_preupdate_count(handle);
  RowChange change;
  change.table = found->second;
  change.op = op == SQLITE_INSERT   ? RowOp::insert
              : op == SQLITE_DELETE ? RowOp::remove
                                    : RowOp::update;
  change.key = op == SQLITE_DELETE ? old_rowid : new_rowid;
  for (int column = 0; column < columns; ++column) {
    sqlite3_value* value = nullptr;
    if (op != SQLITE_INSERT && sqlite3_preupdate_old(handle, column, &value) == SQLITE_OK) {
      change.before.push_back(cell_of(value));
    }
    if (op != SQLITE_DELETE && sqlite3_preupdate_new(handle, column, &value) == SQLITE_OK) {
      change.after.push_back(cell_of(value));
    }
  }
  connection->pending.push_back(std::move(change));
}

int RowRecorder::on_commit(void* opaque) {
  auto* connection = static_cast<Connection*>(opaque);
  auto& committed = connection->recorder->committed_;
  for (RowChange& change : connection->pending) committed.push_back(std::move(change));
  connection->pending.clear();
  return 0;  // 0: let the commit go ahead
}

void RowRecorder::on_rollback(void* opaque) { static_cast<Connection*>(opaque)->pending.clear(); }

void RowRecorder::attribute(std::vector<RowChange>& changes, size_t events_before) {
  if (changes.empty()) return;
  std::vector<RowChange>* target = &history_.opening;
  if (events_before > 0) {
    if (history_.by_event.size() < events_before) history_.by_event.resize(events_before);
    target = &history_.by_event[events_before - 1];
  }
  const size_t first = target->size();
  for (RowChange& change : changes) target->push_back(std::move(change));
  changes.clear();
  if (on_changes_) {
    on_changes_(history_,
                std::vector<RowChange>(target->begin() + static_cast<long>(first), target->end()));
  }
}

// The queues' changes since the last call. A message's row is keyed by its enqueue position,
// which it keeps while it moves between ready and unacked. The first call reads every queue
// and starts the broker's journal; later calls look up only the rows the journal names, so
// that a long story costs the same per event as a short one.
std::vector<RowChange> RowRecorder::diff_queues(MessageBroker& broker) {
  std::vector<size_t> queue_tables;
  for (size_t queue = 0; queue < broker.queue_count(); ++queue) {
    queue_tables.push_back(declare_table(kBrokerSource, broker.queue_name(queue), kQueueColumns));
  }
  // (queue table index, position) -> the row now, or nothing when it has gone.
  std::vector<std::pair<std::pair<size_t, uint64_t>, std::optional<std::vector<Cell>>>> now;
  if (!journal_started_) {
    journal_started_ = true;
    broker.keep_changed_entries();
    for (const QueueEntry& entry : broker.contents()) {
      const size_t queue = *broker.find_queue(entry.queue);
      now.emplace_back(std::make_pair(queue_tables[queue], entry.position), queue_row(entry));
    }
  } else {
    for (const auto& [queue, position] : broker.take_changed_entries()) {
      const std::optional<QueueEntry> entry = broker.entry(queue, position);
      now.emplace_back(std::make_pair(queue_tables[queue], position),
                       entry ? std::optional<std::vector<Cell>>(queue_row(*entry)) : std::nullopt);
    }
  }
  std::sort(now.begin(), now.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<RowChange> changes;
  for (auto& [key, row] : now) {
    const auto old_row = queues_.find(key);
    if (old_row == queues_.end() && !row) continue;  // came and went between two events
    RowChange change;
    change.table = key.first;
    change.key = static_cast<int64_t>(key.second);
    if (old_row == queues_.end()) {
      change.op = RowOp::insert;
      change.after = *row;
      queues_.emplace(key, std::move(*row));
    } else if (!row) {
      change.op = RowOp::remove;
      change.before = std::move(old_row->second);
      queues_.erase(old_row);
    } else {
      if (old_row->second == *row) continue;
      change.op = RowOp::update;
      change.before = std::exchange(old_row->second, *row);
      change.after = std::move(*row);
    }
    changes.push_back(std::move(change));
  }
  return changes;
}

namespace {

// The broker changes a queue first and records these events after.
bool settled_before_recorded(EventKind kind) {
  return kind == EventKind::ack || kind == EventKind::nack || kind == EventKind::requeue ||
         kind == EventKind::dead_letter || kind == EventKind::dropped ||
         kind == EventKind::error_queued || kind == EventKind::redrive;
}

constexpr size_t kQueueMessageIdColumn = 2;

const std::string& queue_message_id(const RowChange& change) {
  const std::vector<Cell>& row = change.after.empty() ? change.before : change.after;
  INBOXSIM_ASSERT(row.size() > kQueueMessageIdColumn && row[kQueueMessageIdColumn].has_value());
  return *row[kQueueMessageIdColumn];
}

}  // namespace

void RowRecorder::before_event(MessageBroker& broker, const TraceEvent& next) {
  std::vector<RowChange> earlier;
  for (RowChange& change : diff_queues(broker)) {
    const bool own = settled_before_recorded(next.kind) && !next.message_id.empty() &&
                     queue_message_id(change) == next.message_id;
    (own ? settled_ : earlier).push_back(std::move(change));
  }
  attribute(earlier, events_);
}

void RowRecorder::after_event() {
  ++events_;
  attribute(settled_, events_);
  attribute(committed_, events_);
}

void RowRecorder::commit_without_events() { attribute(committed_, events_); }

namespace {

// A row taken out and put back within one event (a requeued message: off its consumer, then
// back in the queue) is one change for the views.
void merge_reinserts(std::vector<RowChange>& changes) {
  std::vector<RowChange> merged;
  for (RowChange& change : changes) {
    const auto removed = std::find_if(merged.begin(), merged.end(), [&](const RowChange& earlier) {
      return earlier.op == RowOp::remove && earlier.table == change.table &&
             earlier.key == change.key;
    });
    if (change.op == RowOp::insert && removed != merged.end()) {
      removed->op = RowOp::update;
      removed->after = std::move(change.after);
    } else {
      merged.push_back(std::move(change));
    }
  }
  changes = std::move(merged);
}

}  // namespace

RowHistory RowRecorder::finish(MessageBroker& broker) {
  std::vector<RowChange> last = diff_queues(broker);
  attribute(last, events_);
  attribute(committed_, events_);
  history_.by_event.resize(events_);
  for (std::vector<RowChange>& changes : history_.by_event) merge_reinserts(changes);
  return std::move(history_);
}

}  // namespace inboxsim
