#include "world/publication_log.h"

#include "kernel/assert.h"
#include "services/sql.h"

namespace inboxsim {

// The spilled log: the ids published, and the first publications whole, in a temporary
// database (its pages in a bounded cache, the rest on disk).
struct PublicationLog::Spilled {
  std::unique_ptr<SharedDatabase> database;
  Connection* connection = nullptr;
  std::map<MessageType, int64_t> first_counts;  // distinct ids per type
};

namespace {

// The spilled log's page cache: 512 pages of 4 KiB. Its rows and keys are written in the order
// of publication (message ids and transfer ids grow), so its writes touch the last pages of
// each tree, and it is read only when a `duplicate` fault is armed: the services' 8 MiB would
// hold pages it never reads again.
constexpr int64_t kSpilledLogCachePages = 512;

void create_log_schema(SQLite::Database& db) {
  db.exec(
      "CREATE TABLE published (type INTEGER NOT NULL, message_id TEXT NOT NULL,"
      " PRIMARY KEY (type, message_id)) WITHOUT ROWID");
  db.exec(
      "CREATE TABLE first_publications (seq INTEGER PRIMARY KEY, transfer_id TEXT NOT NULL,"
      " message_id TEXT NOT NULL, type INTEGER NOT NULL, from_account TEXT NOT NULL,"
      " to_account TEXT NOT NULL, amount INTEGER NOT NULL, reason TEXT NOT NULL,"
      " occurred_at_ms INTEGER NOT NULL)");
  db.exec("CREATE INDEX first_publications_transfer ON first_publications (transfer_id, seq)");
}

// The statements, built once (the connection caches them by their text).
const std::string& first_columns() {
  static const std::string columns =
      "message_id, type, transfer_id, from_account, to_account, amount, reason, occurred_at_ms";
  return columns;
}
const std::string& keep_first_sql() {
  static const std::string sql =
      "INSERT INTO first_publications (" + first_columns() + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?)";
  return sql;
}
const std::string& all_firsts_sql() {
  static const std::string sql =
      "SELECT " + first_columns() + " FROM first_publications ORDER BY seq";
  return sql;
}
const std::string& firsts_of_transfer_sql() {
  static const std::string sql =
      "SELECT " + first_columns() + " FROM first_publications WHERE transfer_id = ? ORDER BY seq";
  return sql;
}

MessagePtr message_from_row(SQLite::Statement& row) {
  auto message = std::make_shared<Message>();
  message->message_id = row.getColumn(0).getString();
  message->type = static_cast<MessageType>(row.getColumn(1).getInt());
  message->transfer = row.getColumn(2).getString();
  message->from = row.getColumn(3).getString();
  message->to = row.getColumn(4).getString();
  message->amount = row.getColumn(5).getInt64();
  message->reason = row.getColumn(6).getString();
  message->occurred_at_ms = row.getColumn(7).getInt64();
  return message;
}

}  // namespace

PublicationLog::PublicationLog(bool keep_envelopes, bool spill) : keep_envelopes_(keep_envelopes) {
  if (!spill) return;
  spilled_ = std::make_unique<Spilled>();
  spilled_->database = SharedDatabase::temporary("publication-log", create_log_schema, 1);
  spilled_->connection = &spilled_->database->connect();
  spilled_->connection->database().exec("PRAGMA cache_size = " +
                                        std::to_string(kSpilledLogCachePages));
}

PublicationLog::~PublicationLog() = default;

bool PublicationLog::record(const MessagePtr& message, bool by_operator) {
  if (keep_envelopes_) envelopes_.try_emplace(message->message_id, envelope_json(*message));
  ++sends_[message->type];
  if (!spilled_) {
    const bool first = published_ids_.insert({message->type, message->message_id}).second;
    if (first && !by_operator) {
      first_publications_.push_back(message);
      first_publications_by_transfer_[message->transfer].push_back(message);
    }
    return first;
  }
  Connection& db = *spilled_->connection;
  static const std::string insert_sql =
      "INSERT OR IGNORE INTO published (type, message_id) VALUES (?, ?)";
  StatementUse insert(db.prepared(insert_sql));
  insert->bind(1, static_cast<int64_t>(message->type));
  insert->bind(2, message->message_id);
  const bool first = insert->exec() == 1;
  if (!first) return false;
  ++spilled_->first_counts[message->type];
  if (by_operator) return true;
  StatementUse keep(db.prepared(keep_first_sql()));
  keep->bind(1, message->message_id);
  keep->bind(2, static_cast<int64_t>(message->type));
  keep->bind(3, message->transfer);
  keep->bind(4, message->from);
  keep->bind(5, message->to);
  keep->bind(6, message->amount);
  keep->bind(7, message->reason);
  keep->bind(8, message->occurred_at_ms);
  keep->exec();
  return true;
}

const std::set<std::pair<MessageType, std::string>>& PublicationLog::published_ids() const {
  INBOXSIM_ASSERT(!spilled_);
  return published_ids_;
}

std::vector<MessagePtr> PublicationLog::candidates(const Match& match) {
  if (!spilled_) {
    if (match.transfer.empty()) return first_publications_;
    const auto found = first_publications_by_transfer_.find(match.transfer);
    return found == first_publications_by_transfer_.end() ? std::vector<MessagePtr>{}
                                                          : found->second;
  }
  Connection& db = *spilled_->connection;
  std::vector<MessagePtr> out;
  if (match.transfer.empty()) {
    StatementUse rows(db.prepared(all_firsts_sql()));
    while (rows->executeStep()) out.push_back(message_from_row(*rows));
    return out;
  }
  StatementUse rows(db.prepared(firsts_of_transfer_sql()));
  rows->bind(1, match.transfer);
  while (rows->executeStep()) out.push_back(message_from_row(*rows));
  return out;
}

std::map<MessageType, int64_t> PublicationLog::published_counts() const {
  if (spilled_) return spilled_->first_counts;
  std::map<MessageType, int64_t> counts;
  for (const auto& [type, id] : published_ids_) ++counts[type];
  return counts;
}

}  // namespace inboxsim
