#include "world/faults.h"

#include <algorithm>
#include <set>

#include "kernel/assert.h"
#include "services/sql.h"

namespace inboxsim {

// The spilled faults: every column of an armed fault but its transfer's text in the match,
// which is the row's `transfer`.
struct FaultBook::Spilled {
  size_t in_memory_max = 0;
  std::unique_ptr<SharedDatabase> database;
  Connection* connection = nullptr;
  // A hash of each transfer whose faults went to the database, sorted and unique: a transfer
  // whose hash is not here has none there. One whose hash is here may have none (brought back
  // already, or another transfer's hash): the database answers.
  std::vector<uint64_t> transfers;
  // Transfers brought back since the last spill: none of their faults is in the database.
  std::set<std::string, std::less<>> reloaded;
};

namespace {

// The spilled book's page cache: 512 pages of 4 KiB. Its rows are written in batches and read
// back rarely, so a small cache costs no time.
constexpr int64_t kSpillCachePages = 512;

// How many transfers brought back the spilled book remembers until its next spill.
constexpr size_t kReloadedMax = 4'096;

// Any spread will do; the hashes only say which transfers to look up.
uint64_t transfer_hash(std::string_view transfer) { return fnv1a(transfer); }

void create_book_schema(SQLite::Database& db) {
  db.exec(
      "CREATE TABLE armed (sequence INTEGER PRIMARY KEY, transfer TEXT NOT NULL,"
      " kind INTEGER NOT NULL, service INTEGER, instance INTEGER, at INTEGER NOT NULL,"
      " has_match INTEGER NOT NULL, type INTEGER, occurrence INTEGER NOT NULL,"
      " ms INTEGER NOT NULL, restart_after_ms INTEGER NOT NULL, times INTEGER NOT NULL,"
      " occurrences_left INTEGER NOT NULL, times_left INTEGER NOT NULL,"
      " copied_by INTEGER NOT NULL, cause INTEGER NOT NULL)");
  db.exec("CREATE INDEX armed_transfer ON armed (transfer)");
}

const std::string& armed_columns() {
  static const std::string columns =
      "sequence, transfer, kind, service, instance, at, has_match, type, occurrence, ms,"
      " restart_after_ms, times, occurrences_left, times_left, copied_by, cause";
  return columns;
}

}  // namespace

FaultBook::FaultBook(std::optional<size_t> in_memory_max) {
  if (!in_memory_max) return;
  spilled_ = std::make_unique<Spilled>();
  spilled_->in_memory_max = *in_memory_max;
  spilled_->database = SharedDatabase::temporary("fault-book", create_book_schema, 1);
  spilled_->connection = &spilled_->database->connect();
  spilled_->connection->database().exec("PRAGMA cache_size = " + std::to_string(kSpillCachePages));
}

FaultBook::~FaultBook() = default;

bool match_selects(const Match& match, const Message& message) {
  if (match.type && *match.type != message.type) return false;
  if (!match.transfer.empty() && match.transfer != message.transfer) return false;
  return true;
}

void FaultBook::arm(const FaultSpec& fault) {
  INBOXSIM_ASSERT(fault.match.occurrence >= 1);
  INBOXSIM_ASSERT(fault.times >= 1);
  const std::string transfer = fault.has_match ? fault.match.transfer : std::string();
  buckets_[static_cast<size_t>(fault.kind)][transfer].push_back(
      Armed{fault, next_sequence_++, fault.match.occurrence, fault.times});
  if (transfer.empty()) return;
  ++named_in_memory_;
  if (spilled_ && named_in_memory_ > spilled_->in_memory_max) spill_all();
}

int64_t FaultBook::spilled_count() const {
  int64_t count = 0;
  for (const int64_t of_kind : spilled_counts_) count += of_kind;
  return count;
}

// One transaction writes every fault that names a transfer; the faults that name none stay
// (they may strike any event, so every event would have to read them).
void FaultBook::spill_all() {
  Connection& db = *spilled_->connection;
  static const std::string insert_sql = "INSERT INTO armed (" + armed_columns() +
                                        ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
  std::vector<uint64_t> hashes;
  SQLite::Transaction transaction(db.database());
  for (size_t kind = 0; kind < kFaultKindCount; ++kind) {
    Buckets& buckets = buckets_[kind];
    for (auto bucket = buckets.begin(); bucket != buckets.end();) {
      if (bucket->first.empty()) {
        ++bucket;
        continue;
      }
      hashes.push_back(transfer_hash(bucket->first));
      for (const Armed& armed : bucket->second) {
        const FaultSpec& spec = armed.spec;
        StatementUse insert(db.prepared(insert_sql));
        insert->bind(1, static_cast<int64_t>(armed.sequence));
        insert->bind(2, bucket->first);
        insert->bind(3, static_cast<int64_t>(spec.kind));
        if (spec.service) insert->bind(4, static_cast<int64_t>(*spec.service));
        if (spec.instance) insert->bind(5, *spec.instance);
        insert->bind(6, static_cast<int64_t>(spec.at));
        insert->bind(7, static_cast<int64_t>(spec.has_match));
        if (spec.match.type) insert->bind(8, static_cast<int64_t>(*spec.match.type));
        insert->bind(9, spec.match.occurrence);
        insert->bind(10, spec.ms);
        insert->bind(11, spec.restart_after_ms);
        insert->bind(12, spec.times);
        insert->bind(13, armed.occurrences_left);
        insert->bind(14, armed.times_left);
        insert->bind(15, static_cast<int64_t>(spec.copied_by));
        insert->bind(16, static_cast<int64_t>(spec.cause));
        insert->exec();
        ++spilled_counts_[kind];
      }
      bucket = buckets.erase(bucket);
    }
  }
  transaction.commit();
  named_in_memory_ = 0;
  std::vector<uint64_t>& transfers = spilled_->transfers;
  std::sort(hashes.begin(), hashes.end());
  const size_t old_size = transfers.size();
  transfers.insert(transfers.end(), hashes.begin(), hashes.end());
  std::inplace_merge(transfers.begin(), transfers.begin() + static_cast<ptrdiff_t>(old_size),
                     transfers.end());
  transfers.erase(std::unique(transfers.begin(), transfers.end()), transfers.end());
  spilled_->reloaded.clear();
}

namespace {

FaultBook::Armed armed_from_row(SQLite::Statement& row) {
  FaultSpec spec;
  spec.kind = static_cast<FaultKind>(row.getColumn(2).getInt());
  if (!row.getColumn(3).isNull()) spec.service = static_cast<ServiceId>(row.getColumn(3).getInt());
  if (!row.getColumn(4).isNull()) spec.instance = row.getColumn(4).getInt64();
  spec.at = static_cast<CrashPoint>(row.getColumn(5).getInt());
  spec.has_match = row.getColumn(6).getInt() != 0;
  if (!row.getColumn(7).isNull())
    spec.match.type = static_cast<MessageType>(row.getColumn(7).getInt());
  spec.match.transfer = row.getColumn(1).getString();
  spec.match.occurrence = row.getColumn(8).getInt64();
  spec.ms = row.getColumn(9).getInt64();
  spec.restart_after_ms = row.getColumn(10).getInt64();
  spec.times = row.getColumn(11).getInt64();
  spec.copied_by = static_cast<CopySource>(row.getColumn(14).getInt());
  spec.cause = static_cast<FailureCause>(row.getColumn(15).getInt());
  return FaultBook::Armed{std::move(spec), static_cast<uint64_t>(row.getColumn(0).getInt64()),
                          row.getColumn(12).getInt64(), row.getColumn(13).getInt64()};
}

}  // namespace

void FaultBook::reload(std::string_view transfer) {
  Spilled& spilled = *spilled_;
  if (!std::binary_search(spilled.transfers.begin(), spilled.transfers.end(),
                          transfer_hash(transfer))) {
    return;
  }
  if (spilled.reloaded.count(transfer) > 0) return;
  Connection& db = *spilled.connection;
  static const std::string select_sql =
      "SELECT " + armed_columns() + " FROM armed WHERE transfer = ? ORDER BY sequence";
  static const std::string delete_sql = "DELETE FROM armed WHERE transfer = ?";
  const std::string key(transfer);
  std::array<std::vector<Armed>, kFaultKindCount> loaded;
  {
    StatementUse rows(db.prepared(select_sql));
    rows->bind(1, key);
    while (rows->executeStep()) {
      Armed armed = armed_from_row(*rows);
      loaded[static_cast<size_t>(armed.spec.kind)].push_back(std::move(armed));
    }
  }
  // A small set: past its bound, forgetting costs a lookup that finds nothing.
  if (spilled.reloaded.size() >= kReloadedMax) spilled.reloaded.clear();
  spilled.reloaded.insert(key);
  bool any = false;
  for (size_t kind = 0; kind < kFaultKindCount; ++kind) {
    if (loaded[kind].empty()) continue;
    any = true;
    spilled_counts_[kind] -= static_cast<int64_t>(loaded[kind].size());
    named_in_memory_ += loaded[kind].size();
    // Everything in the database was armed before anything of this transfer in memory.
    std::vector<Armed>& list = buckets_[kind][key];
    INBOXSIM_ASSERT(list.empty() || loaded[kind].back().sequence < list.front().sequence);
    list.insert(list.begin(), std::make_move_iterator(loaded[kind].begin()),
                std::make_move_iterator(loaded[kind].end()));
  }
  if (!any) return;
  StatementUse erase(db.prepared(delete_sql));
  erase->bind(1, key);
  erase->exec();
}

std::vector<FaultBook::Armed> FaultBook::spilled_faults() const {
  std::vector<Armed> out;
  if (!spilled_) return out;
  static const std::string all_sql = "SELECT " + armed_columns() + " FROM armed ORDER BY sequence";
  StatementUse rows(spilled_->connection->prepared(all_sql));
  while (rows->executeStep()) out.push_back(armed_from_row(*rows));
  return out;
}

// Walks the faults of `kind` that name `transfer` and those that name none, together in arm
// order. Every selecting fault counts the event; the first whose count is reached fires.
template <typename Selects>
std::optional<FaultSpec> FaultBook::take_first(FaultKind kind, std::string_view transfer,
                                               Selects&& selects) {
  if (spilled_ && !transfer.empty()) reload(transfer);
  Buckets& buckets = buckets_[static_cast<size_t>(kind)];
  const auto named = transfer.empty() ? buckets.end() : buckets.find(transfer);
  const auto any = buckets.find(std::string_view{});
  std::vector<Armed>* lists[2] = {named == buckets.end() ? nullptr : &named->second,
                                  any == buckets.end() ? nullptr : &any->second};
  size_t next[2] = {0, 0};
  for (;;) {
    int pick = -1;
    for (int side = 0; side < 2; ++side) {
      if (lists[side] == nullptr || next[side] >= lists[side]->size()) continue;
      if (pick < 0 || (*lists[side])[next[side]].sequence < (*lists[pick])[next[pick]].sequence) {
        pick = side;
      }
    }
    if (pick < 0) return std::nullopt;
    std::vector<Armed>& list = *lists[pick];
    Armed& armed = list[next[pick]];
    if (!selects(armed.spec) || armed.occurrences_left > 1) {
      if (selects(armed.spec)) --armed.occurrences_left;
      ++next[pick];
      continue;
    }
    FaultSpec fired = armed.spec;
    if (--armed.times_left == 0) {
      if (pick == 0) --named_in_memory_;
      list.erase(list.begin() + static_cast<ptrdiff_t>(next[pick]));
      if (list.empty()) buckets.erase(pick == 0 ? named : any);
    }
    return fired;
  }
}

std::optional<FaultSpec> FaultBook::take_at(FaultKind kind, ServiceId service, int64_t instance,
                                            CrashPoint point, const Message* message) {
  INBOXSIM_ASSERT(kind == FaultKind::crash || kind == FaultKind::pause);
  const std::string_view transfer = message == nullptr ? std::string_view{} : message->transfer;
  return take_first(kind, transfer, [&](const FaultSpec& spec) {
    if (spec.service != service || spec.at != point) return false;
    if (spec.instance.value_or(1) != instance) return false;
    return !spec.has_match || (message != nullptr && match_selects(spec.match, *message));
  });
}

std::optional<FaultSpec> FaultBook::take(FaultKind kind, ServiceId service, int64_t instance,
                                         const Message& message) {
  INBOXSIM_ASSERT(kind != FaultKind::crash && kind != FaultKind::pause);
  return take_first(kind, message.transfer, [&](const FaultSpec& spec) {
    if (spec.service && *spec.service != service) return false;
    if (spec.instance && *spec.instance != instance) return false;
    return !spec.has_match || match_selects(spec.match, message);
  });
}

void FaultBook::fingerprint(Hasher& hasher) const {
  INBOXSIM_ASSERT(spilled_count() == 0);
  for (const Buckets& buckets : buckets_) {
    hasher.add(static_cast<uint64_t>(buckets.size()));
    for (const auto& [transfer, list] : buckets) {
      hasher.add(transfer).add(static_cast<uint64_t>(list.size()));
      for (const Armed& armed : list) {
        hasher.add(describe_fault(armed.spec)).add_signed(armed.spec.restart_after_ms);
        hasher.add_signed(armed.occurrences_left).add_signed(armed.times_left);
      }
    }
  }
}

std::vector<std::string> FaultBook::unfired() const {
  const std::vector<Armed> spilled = spilled_faults();
  std::vector<const Armed*> never_fired;
  for (const Armed& armed : spilled) {
    if (armed.times_left == armed.spec.times) never_fired.push_back(&armed);
  }
  for (const Buckets& buckets : buckets_) {
    for (const auto& [transfer, list] : buckets) {
      for (const Armed& armed : list) {
        if (armed.times_left == armed.spec.times) never_fired.push_back(&armed);
      }
    }
  }
  std::sort(never_fired.begin(), never_fired.end(),
            [](const Armed* a, const Armed* b) { return a->sequence < b->sequence; });
  std::vector<std::string> out;
  for (const Armed* armed : never_fired) out.push_back(describe_fault(armed->spec));
  return out;
}

}  // namespace inboxsim
