// Records what the teaching views show beside the trace (docs/usage.md, `run --html` and
// `--show-rows`): every row a service database's committed transactions insert, change or
// delete, and every message that enters, moves within or leaves a broker queue, each attributed
// to a trace event.
//
// Rows are caught with SQLite's pre-update hook on each connection (old and new values of every
// row a statement writes), held per connection until its transaction ends, kept on COMMIT and
// dropped on ROLLBACK (the commit and rollback hooks). The recorder never prepares a statement
// on a service's connection while a run goes on, so it depends on nothing of how the services
// open connections or prepare theirs: only on the connection's handle. Queues are compared with
// the broker's contents between events.
//
// Which event a change belongs to: a commit's rows go to the first event the commit records
// (its dedupe record, effect or saga change), or, when the commit records none, to the event
// recorded just before it (the handler's own step). Rows written outside a transaction of a
// handler (opening balances, a retention pass's deletes) go to the next event. A queue's changes go
// to the event after which they are seen, except that the broker settles an ack, a nack, a requeue
// or a dead-letter before it records it: a change to that event's own message goes to that event.
//
// A World creates a recorder only when a view will use it: without one no hook is installed
// and a run (a fuzz seed) pays nothing.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "broker/message_broker.h"
#include "domain/row_changes.h"
#include "kernel/trace.h"

struct sqlite3;

namespace inboxsim {

class RowRecorder {
 public:
  // `on_changes` (optional) hears each event's changes as they are attributed (live terminal
  // output): the history so far (for the tables' names and columns), then the changes.
  using Listener = std::function<void(const RowHistory&, const std::vector<RowChange>&)>;
  explicit RowRecorder(Listener on_changes);
  ~RowRecorder();
  RowRecorder(const RowRecorder&) = delete;
  RowRecorder& operator=(const RowRecorder&) = delete;

  // Watches one connection of service database `source`. The first connection of a source
  // also declares its tables (in schema order) and reads the rows already there.
  // REQUIRES: no transaction is open on `handle`; the recorder outlives the hooks (the caller
  // calls unwatch_all() before closing a watched connection).
  void watch(sqlite3* handle, const std::string& source);
  // Removes every hook this recorder installed.
  void unwatch_all();

  // World::record calls these around recording one trace event.
  void before_event(MessageBroker& broker, const TraceEvent& next);
  void after_event();
  // World::committed: a commit that records no event of its own.
  void commit_without_events();
  // The run is over: the last queue changes, then the history.
  RowHistory finish(MessageBroker& broker);

 private:
  struct Connection;
  static int on_commit(void* connection);
  static void on_rollback(void* connection);
  static void on_preupdate(void* connection, sqlite3* handle, int op, const char* database,
                           const char* table, long long old_rowid, long long new_rowid);

  size_t declare_table(const std::string& source, const std::string& table,
                       std::vector<std::string> columns);
  void read_existing_rows(sqlite3* handle, const std::string& source);
  // The queues' changes since the last call.
  std::vector<RowChange> diff_queues(MessageBroker& broker);
  // Hands `changes` to event `index` (or to the opening rows before the first event).
  void attribute(std::vector<RowChange>& changes, size_t events_before);

  Listener on_changes_;
  RowHistory history_;
  std::map<std::pair<std::string, std::string>, size_t> table_index_;  // (source, table)
  std::vector<std::unique_ptr<Connection>> connections_;
  std::vector<RowChange> committed_;  // committed, not yet attributed to an event
  std::vector<RowChange> settled_;    // queue changes that belong to the event being recorded
  size_t events_ = 0;                 // events recorded so far
  // The queues as last seen: (queue table index, position) -> row.
  std::map<std::pair<size_t, uint64_t>, std::vector<Cell>> queues_;
  bool journal_started_ = false;  // the broker keeps its journal of changed rows for us
};

}  // namespace inboxsim
