// What both services do the same way: one instance's connection to its service's database, the
// unit of work that commits a transaction and reports it, step boundaries and crash points, the
// trace lines of a dedupe hit or a dedupe record, and the external seen-set (a "Redis SET of
// seen messageIds"). What the real systems differ in (MassTransit's passes, Marten's
// document, the NestJS handler, the relay) stays in each service.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "domain/config.h"
#include "kernel/assert.h"
#include "kernel/fingerprint.h"
#include "services/host.h"
#include "services/sql.h"

namespace inboxsim {

class ServiceCore {
 public:
  // Prepared statements point at the connection: a service never moves.
  ServiceCore(const ServiceCore&) = delete;
  ServiceCore& operator=(const ServiceCore&) = delete;

 protected:
  // The connection outlives the service (SharedDatabase owns it).
  ServiceCore(ServiceHost& host, const Config& config, Connection& connection, ServiceId service)
      : host_(host),
        config_(config),
        connection_(connection),
        db_(connection.database()),
        service_(service),
        begin_(connection, "BEGIN"),
        commit_(connection, "COMMIT"),
        rollback_(connection, "ROLLBACK") {}
  ~ServiceCore() = default;

  // One transaction per unit of work, so RAII rolls back every early exit. It starts a fresh
  // CommitRecord: what a rolled-back attempt collected must never reach the checker.
  //
  // Not SQLite::Transaction: that one runs BEGIN and COMMIT through sqlite3_exec, which parses
  // them again for every transaction (a fifth of a fuzz run's time); these are prepared once
  // per connection. Same semantics: BEGIN (deferred), COMMIT, ROLLBACK unless committed.
  class UnitOfWork {
   public:
    explicit UnitOfWork(ServiceCore& core) : core_(core) {
      core_.pending_.clear();
      StatementUse begin(core_.begin_);
      begin->exec();
    }
    ~UnitOfWork() {
      if (committed_) return;
      try {
        StatementUse rollback(core_.rollback_);
        rollback->exec();
      } catch (...) {
        // A failed ROLLBACK leaves nothing to undo: SQLite has already rolled back.
      }
    }
    UnitOfWork(const UnitOfWork&) = delete;
    UnitOfWork& operator=(const UnitOfWork&) = delete;

    void commit() {
      StatementUse commit(core_.commit_);
      commit->exec();
      committed_ = true;
    }

   private:
    ServiceCore& core_;
    bool committed_ = false;
  };

  // Commits, then hands what the transaction changed to the host (the checker and the trace).
  void commit(UnitOfWork& work) {
    work.commit();
    pending_.service = service_;
    host_.committed(pending_);
    pending_.clear();
  }

  // Whether a handler's step labels and frame digests are read (ServiceHost::names_steps).
  bool names_steps() const { return host_.names_steps(); }

  // The boundary between two steps of a handler (see ServiceHost::between_steps). `next` names
  // what the handler does when it goes on; `locals` is a digest of every local of the handler
  // that is still read after this boundary (0 when the code position says all); `line` tells
  // the boundaries of one handler apart.
  Suspend step(std::string next, CrashPointSet points, const Message& message,
               uint64_t locals = 0, unsigned line = __builtin_LINE()) {
    return host_.between_steps(points, message, resume_digest(line, locals), std::move(next));
  }
  Suspend step(std::string next, const Message& message, uint64_t locals = 0,
               unsigned line = __builtin_LINE()) {
    return host_.between_steps(CrashPointSet(), message, resume_digest(line, locals),
                               std::move(next));
  }
  // Takes a row lock (see ServiceHost::lock_row); `next`, `locals` and `line` as for step().
  Suspend lock_row(const std::string& key, std::string next, uint64_t locals = 0,
                   unsigned line = __builtin_LINE()) {
    return host_.lock_row(key, resume_digest(line, locals), std::move(next));
  }

  // Every row of every table of this connection's database, in rowid order, and the schema
  // (a dropped index changes the future), for the explorer. Between two events no transaction
  // is open, so the connection sees what is committed. The tables in `unordered` go in as sets
  // of their canonical rows instead (a canonical fingerprint, UnorderedTable).
  void fingerprint_database(Hasher& hasher, std::span<const UnorderedTable> unordered = {}) {
    Connection::DumpPlan& plan = connection_.dump_plan();
    const int64_t version = schema_version(connection_);
    if (version != plan.schema_version) {
      plan.schema = read_schema(connection_);
      plan.tables.clear();
      for (const auto& [type, name, sql] : plan.schema) {
        if (type != "table") continue;
        plan.tables.push_back(
            {name, prepare_raw("SELECT rowid, * FROM \"" + name + "\" ORDER BY rowid")});
      }
      plan.schema_version = version;
    }
    for (const auto& [type, name, sql] : plan.schema) hasher.add(type).add(name).add(sql);
    for (const Connection::TableDump& table : plan.tables) {
      hasher.add(table.name);
      const auto set = std::find_if(unordered.begin(), unordered.end(),
                                    [&](const UnorderedTable& t) { return table.name == t.name; });
      if (set == unordered.end()) {
        sqlite3_stmt* rows = table.rows.get();
        const int columns = sqlite3_column_count(rows);
        step_all(rows, [&] { add_row(hasher, rows, columns); });
        continue;
      }
      // As a set: each row's values hashed alone, then the sorted row hashes.
      auto& prepared = plan.sets[set->canonical_rows];
      if (!prepared) prepared = prepare_raw(set->canonical_rows);
      sqlite3_stmt* rows = prepared.get();
      const int columns = sqlite3_column_count(rows);
      std::vector<Fingerprint> hashed;
      step_all(rows, [&] {
        Hasher row;
        add_row(row, rows, columns);
        hashed.push_back(row.finish());
      });
      std::sort(hashed.begin(), hashed.end());
      hasher.add(static_cast<uint64_t>(hashed.size()));
      for (const Fingerprint& row : hashed) hasher.add(row);
    }
  }

  // One of SQLite's own statements for the explorer's reads (no copy of a value per column).
  std::unique_ptr<sqlite3_stmt, Connection::RawStatementFree> prepare_raw(const std::string& sql) {
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v2(db_.getHandle(), sql.c_str(), -1, &statement, nullptr) != SQLITE_OK) {
      sqlite3_finalize(statement);
      throw SQLite::Exception(db_.getHandle());
    }
    return std::unique_ptr<sqlite3_stmt, Connection::RawStatementFree>(statement);
  }

  // Steps `rows` to its end, calling `each` at every row, and resets it.
  template <typename Each>
  void step_all(sqlite3_stmt* rows, Each&& each) {
    int step = SQLITE_ROW;
    while ((step = sqlite3_step(rows)) == SQLITE_ROW) each();
    sqlite3_reset(rows);
    if (step != SQLITE_DONE) throw SQLite::Exception(db_.getHandle(), step);
  }

  // The row `rows` is at: each value's type, then the integer or the value's bytes as stored
  // (text, or a blob), as SQLite::Column::getString reads them.
  static void add_row(Hasher& hasher, sqlite3_stmt* rows, int columns) {
    for (int column = 0; column < columns; ++column) {
      const int type = sqlite3_column_type(rows, column);
      hasher.add(static_cast<uint64_t>(type));
      if (type == SQLITE_INTEGER) {
        hasher.add_signed(sqlite3_column_int64(rows, column));
      } else if (type != SQLITE_NULL) {
        const auto* bytes = static_cast<const char*>(sqlite3_column_blob(rows, column));
        const auto size = static_cast<size_t>(sqlite3_column_bytes(rows, column));
        hasher.add(std::string_view(bytes == nullptr ? "" : bytes, size));
      }
    }
  }

  static uint64_t resume_digest(unsigned line, uint64_t locals) {
    return Hasher().add(static_cast<uint64_t>(line)).add(locals).finish().low;
  }

  // A publish that was not confirmed faults the handler, as MassTransit's send throws.
  static void require_confirmed(PublishResult result) {
    if (result == PublishResult::lost) {
      throw ConsumerFault{"the channel closed before the publisher confirm arrived",
                          FaultCause::confirm_lost};
    }
    if (result == PublishResult::nacked) {
      throw ConsumerFault{"the broker nacked the publish", FaultCause::publish_nacked};
    }
  }

  void crash_point(CrashPoint point, const Message& message) { host_.crash_point(point, &message); }

  // A delivery acked without running the business change: traced at once. The event names the
  // service, not which of its mechanisms caught the duplicate (Marten has two), so the caller
  // names it for the coverage probes.
  // REQUIRES: caught_by is a dedupe probe; step is not none.
  void dedupe_hit(Probe caught_by, DedupeStep step, std::string_view participant,
                  const Message& message, std::string detail) {
    INBOXSIM_ASSERT(is_dedupe_probe(caught_by));
    INBOXSIM_ASSERT(step != DedupeStep::none);
    host_.reached(caught_by);
    TraceEvent event = event_about(EventKind::dedupe_hit, host_.now_ms(), participant, message);
    event.dedupe_step = step;
    event.detail = std::move(detail);
    host_.record(std::move(event));
  }

  // A dedupe record written in the open transaction: it reaches the trace on commit.
  void note_dedupe_record(std::string_view participant, const Message& message,
                          DedupeRecord record, std::string detail) {
    TraceEvent event = event_about(EventKind::dedupe_record, host_.now_ms(), participant, message);
    event.detail = std::move(detail);
    event.record = record;
    pending_.events.push_back(std::move(event));
  }

  // Marks the external seen-set, which is no transaction's business, and says so at once.
  void mark_seen(std::string_view participant, const std::string& key, const Message& message,
                 std::string_view when) {
    host_.seen_store().mark(key);
    TraceEvent event = event_about(EventKind::dedupe_record, host_.now_ms(), participant, message);
    event.detail = "external seen-set: " + message.message_id + " marked " + std::string(when) +
                   " the business commit, outside its transaction";
    event.record = DedupeRecord::seen_marked;
    host_.record(std::move(event));
  }

  ServiceHost& host_;
  const Config& config_;
  Connection& connection_;
  SQLite::Database& db_;
  CommitRecord pending_;
  ServiceId service_;

 private:
  LazyStatement begin_;
  LazyStatement commit_;
  LazyStatement rollback_;
};

}  // namespace inboxsim
