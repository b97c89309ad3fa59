#include "services/transfer_service.h"

#include <array>
#include <optional>

#include "domain/dedupe_words.h"
#include "domain/participants.h"
#include "kernel/assert.h"
#include "services/sql.h"

namespace inboxsim {

namespace {

constexpr std::string_view kSagaConsumer = "saga";
constexpr std::string_view kNotificationsConsumer = "notifications";
// What a relay reads of an outbox row, in the order outbox_message() takes it.
constexpr const char* kOutboxColumns =
    "seq, message_id, type, transfer_id, from_account, to_account, amount, created_ms";

void create_tables(SQLite::Database& db, const Config& config) {
  const bool claims = config.relay_claim == RelayClaim::skip_locked;
  db.exec(std::string(
      "CREATE TABLE sagas (transfer_id TEXT PRIMARY KEY, state TEXT NOT NULL,"
      "  from_account TEXT NOT NULL, to_account TEXT NOT NULL, amount INTEGER NOT NULL,"
      "  updated_ms INTEGER NOT NULL);"
      "CREATE TABLE processed_messages (id INTEGER PRIMARY KEY, message_id TEXT NOT NULL,"
      "  consumer TEXT NOT NULL, processed_ms INTEGER NOT NULL);"
      "CREATE INDEX processed_messages_age ON processed_messages (processed_ms);"
      "CREATE TABLE outbox (seq INTEGER PRIMARY KEY, message_id TEXT NOT NULL,"
      "  type TEXT NOT NULL, transfer_id TEXT NOT NULL, from_account TEXT NOT NULL,"
      "  to_account TEXT NOT NULL, amount INTEGER NOT NULL, created_ms INTEGER NOT NULL,"
      "  sent_ms INTEGER" +
      std::string(claims ? ", claimed_by TEXT" : "") +
      ");"
      "CREATE INDEX outbox_unsent ON outbox (seq) WHERE sent_ms IS NULL;"
      "CREATE INDEX outbox_sent ON outbox (sent_ms) WHERE sent_ms IS NOT NULL;"
      "CREATE TABLE notifications (id INTEGER PRIMARY KEY, transfer_id TEXT NOT NULL,"
      "  kind TEXT NOT NULL, created_ms INTEGER NOT NULL);"));
  if (config.transfer_processed_unique) {
    db.exec(config.transfer_dedupe_key == DedupeKey::message_id
                ? "CREATE UNIQUE INDEX processed_messages_key ON processed_messages (message_id)"
                : "CREATE UNIQUE INDEX processed_messages_key"
                  " ON processed_messages (message_id, consumer)");
  }
}

}  // namespace

struct TransferService::Statements {
  Statements(Connection& db, bool claims)
      : saga_insert(db,
                    "INSERT INTO sagas (transfer_id, state, from_account, to_account, amount,"
                    " updated_ms) VALUES (?, ?, ?, ?, ?, ?)"),
        saga_find(db,
                  "SELECT state, from_account, to_account, amount FROM sagas"
                  " WHERE transfer_id = ?"),
        saga_update(db, "UPDATE sagas SET state = ?, updated_ms = ? WHERE transfer_id = ?"),
        processed_insert(db,
                         "INSERT INTO processed_messages (message_id, consumer, processed_ms)"
                         " VALUES (?, ?, ?)"),
        processed_cleanup(db, "DELETE FROM processed_messages WHERE processed_ms < ?"),
        // The consumer is bound NULL when the key is the message id alone.
        processed_find(db,
                       "SELECT 1 FROM processed_messages WHERE message_id = ?1"
                       " AND (?2 IS NULL OR consumer = ?2)"),
        outbox_sent_cleanup(db, "DELETE FROM outbox WHERE sent_ms < ?"),
        outbox_insert(db,
                      "INSERT INTO outbox (message_id, type, transfer_id, from_account,"
                      " to_account, amount, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?)"),
        outbox_unsent(db, std::string("SELECT ") + kOutboxColumns +
                              " FROM outbox WHERE sent_ms IS NULL ORDER BY seq LIMIT " +
                              std::to_string(TransferService::kRelayBatchRows)),
        // With relay.claim = skip_locked: the rows no other relay holds, the claim of those this
        // relay does not hold yet, a dead relay's claims let go, and the mark that ends a claim.
        outbox_unclaimed(db, std::string("SELECT ") + kOutboxColumns +
                                 ", claimed_by IS NULL FROM outbox WHERE sent_ms IS NULL AND"
                                 " (claimed_by IS NULL OR claimed_by = ?1) ORDER BY seq LIMIT " +
                                 std::to_string(TransferService::kRelayBatchRows)),
        outbox_claim(db, "UPDATE outbox SET claimed_by = ? WHERE seq = ? AND claimed_by IS NULL"),
        outbox_release(
            db, "UPDATE outbox SET claimed_by = NULL WHERE claimed_by = ? AND sent_ms IS NULL"),
        outbox_mark_sent(db, std::string("UPDATE outbox SET sent_ms = ?") +
                                 (claims ? ", claimed_by = NULL" : "") +
                                 " WHERE seq = ? AND sent_ms IS NULL"),
        outbox_unsent_count(db, "SELECT COUNT(*) FROM outbox WHERE sent_ms IS NULL"),
        notification_insert(db,
                            "INSERT INTO notifications (transfer_id, kind, created_ms)"
                            " VALUES (?, ?, ?)") {}

  LazyStatement saga_insert;
  LazyStatement saga_find;
  LazyStatement saga_update;
  LazyStatement processed_insert;
  LazyStatement processed_cleanup;
  LazyStatement processed_find;
  LazyStatement outbox_sent_cleanup;
  LazyStatement outbox_insert;
  LazyStatement outbox_unsent;
  LazyStatement outbox_unclaimed;
  LazyStatement outbox_claim;
  LazyStatement outbox_release;
  LazyStatement outbox_mark_sent;
  LazyStatement outbox_unsent_count;
  LazyStatement notification_insert;
};

void TransferService::create_schema(SQLite::Database& db, const Config& config) {
  create_tables(db, config);
}

std::string TransferService::schema_key(const Config& config) {
  // The key names every config choice create_schema() depends on.
  std::string key = !config.transfer_processed_unique ? "not-unique"
                    : config.transfer_dedupe_key == DedupeKey::message_id
                        ? "unique(message_id)"
                        : "unique(message_id, consumer)";
  if (config.relay_claim == RelayClaim::skip_locked) key += "+claims";
  return key;
}

namespace {

// The saga rows are read by transfer id, processed_messages by message id, the notifications
// counted per transfer: no statement reads their order.
constexpr std::array<UnorderedTable, 3> kUnordered = {{
    {"sagas", nullptr,
     "SELECT transfer_id, state, from_account, to_account, amount, updated_ms FROM sagas"},
    {"processed_messages", nullptr,
     "SELECT message_id, consumer, processed_ms FROM processed_messages"},
    {"notifications", nullptr, "SELECT transfer_id, kind, created_ms FROM notifications"},
}};

}  // namespace

std::span<const UnorderedTable> TransferService::unordered_tables() { return kUnordered; }

TransferService::TransferService(ServiceHost& host, const Config& config, Connection& connection)
    : ServiceCore(host, config, connection, ServiceId::transfer),
      statements_(std::make_unique<Statements>(connection_,
                                               config.relay_claim == RelayClaim::skip_locked)) {}

TransferService::~TransferService() = default;

std::string_view TransferService::participant_of(std::string_view consumer) const {
  return consumer == kSagaConsumer ? host_.names().service : host_.names().notifications;
}

void TransferService::request(const TransferSpec& transfer) {
  UnitOfWork work(*this);
  {
    StatementUse insert(statements_->saga_insert);
    insert->bind(1, transfer.id);
    insert->bind(2, std::string(saga_state_name(SagaState::requested)));
    insert->bind(3, transfer.from);
    insert->bind(4, transfer.to);
    insert->bind(5, static_cast<int64_t>(transfer.amount));
    insert->bind(6, static_cast<int64_t>(host_.now_ms()));
    insert->exec();
  }
  add_outbox("", MessageType::transfer_requested, transfer.id, transfer.from, transfer.to,
             transfer.amount);
  pending_.transitions.push_back(SagaTransition{transfer.id, std::nullopt, SagaState::requested});
  TraceEvent event;
  event.time_ms = host_.now_ms();
  event.kind = EventKind::saga;
  event.service = host_.names().service;
  event.transfer = transfer.id;
  event.detail = "->REQUESTED";
  event.saga_to = saga_state_name(SagaState::requested);
  pending_.events.push_back(std::move(event));
  commit(work);
}

// The NestJS handler (docs/model.md, "transfer-service"): processed_messages, the saga and the
// next command's outbox row in one transaction; or, in the external modes, the seen-set (a
// "Redis SET") checked first and marked before or after that transaction.
Task<Outcome> TransferService::handle(TransferConsumer consumer, MessagePtr message_ptr) {
  const Message& message = *message_ptr;
  const std::string_view consumer_name =
      consumer == TransferConsumer::saga ? kSagaConsumer : kNotificationsConsumer;
  const TransferDedupe dedupe = config_.transfer_dedupe;
  const std::string key = config_.transfer_dedupe_key == DedupeKey::message_id
                              ? message.message_id
                              : message.message_id + "|" + std::string(consumer_name);
  // Named before the co_await: GCC 12 destroys a temporary made in one arm of a conditional
  // inside a co_await expression twice (a double free), so no label is built there.
  const StepLabels labels = names_steps() ? step_labels(consumer) : StepLabels{};
  co_await step(labels.first, CrashPointSet(CrashPoint::before_tx), message);
  if (already_seen(message, consumer_name, key)) co_return Outcome::ack;
  if (dedupe == TransferDedupe::none) {
    crash_point(CrashPoint::after_dedupe, message);
  } else if (dedupe != TransferDedupe::processed_messages) {
    co_await step(labels.checked,
                  CrashPointSet(CrashPoint::after_precheck, CrashPoint::after_dedupe), message);
  }
  if (dedupe == TransferDedupe::external_before) {
    mark_seen(participant_of(consumer_name), key, message, "before");
    co_await step(labels.handle, CrashPointSet(CrashPoint::after_mark), message);
  }
  const bool emails = consumer == TransferConsumer::notifications;
  if (emails && config_.transfer_email == EmailSend::before_commit) send_email(message, "before");
  if (!commit_event(consumer, message)) co_return Outcome::ack;
  co_await step(labels.after_commit, CrashPointSet(CrashPoint::after_commit), message);
  if (emails && config_.transfer_email == EmailSend::after_commit) send_email(message, "after");
  if (dedupe == TransferDedupe::external_after) {
    mark_seen(participant_of(consumer_name), key, message, "after");
    co_await step(labels.ack, CrashPointSet(CrashPoint::after_mark), message);
  }
  if (dedupe == TransferDedupe::processed_after) {
    record_processed_after(message, consumer_name);
    co_await step(labels.ack, CrashPointSet(CrashPoint::after_mark), message);
  }
  co_return Outcome::ack;
}

// What the handler does next at each step, by its dedupe mechanism and when it emails.
TransferService::StepLabels TransferService::step_labels(TransferConsumer consumer) const {
  const TransferDedupe dedupe = config_.transfer_dedupe;
  const bool emails = consumer == TransferConsumer::notifications;
  const std::string mail = "call the mail API (outside the transaction), then ";
  const std::string mark = "mark the message in the seen-set";
  std::string handle = dedupe == TransferDedupe::processed_messages
                           ? "insert into processed_messages, handle the event, commit"
                           : "handle the event, commit";
  if (emails && config_.transfer_email == EmailSend::before_commit) handle = mail + handle;
  const bool external =
      dedupe == TransferDedupe::external_before || dedupe == TransferDedupe::external_after;
  const std::string first = dedupe == TransferDedupe::processed_after
                                ? "look for the message in processed_messages"
                            : external ? "check the seen-set"
                                       : handle;
  std::string after_commit = dedupe == TransferDedupe::external_after ? mark
                             : dedupe == TransferDedupe::processed_after
                                 ? "insert into processed_messages in a transaction of its own"
                                 : "send the ack";
  if (emails && config_.transfer_email == EmailSend::after_commit) {
    after_commit = mail + after_commit;
  }
  const std::string name =
      std::string(consumer == TransferConsumer::saga ? kSagaConsumer : kNotificationsConsumer) +
      ": ";
  return StepLabels{
      .first = name + first,
      .checked = name + (dedupe == TransferDedupe::external_before ? mark : handle),
      .handle = name + handle,
      .after_commit = name + after_commit,
      .ack = name + "send the ack"};
}

// processed_after's second transaction: the dedupe record, committed on its own after the
// business commit. A unique violation means a concurrent copy recorded it first: nothing to do.
void TransferService::record_processed_after(const Message& message, std::string_view consumer) {
  UnitOfWork work(*this);
  try {
    insert_processed(message, consumer, DedupeRecord::processed_alone);
  } catch (const SQLite::Exception& error) {
    if (!is_unique_violation(error)) throw;
    return;
  }
  commit(work);
}

// Inserts the processed_messages row in the open transaction and traces it on commit: "… m-3
// inserted" followed by how `record` was committed. Throws SQLite's unique violation when the
// index already holds it.
void TransferService::insert_processed(const Message& message, std::string_view consumer,
                                       DedupeRecord record) {
  StatementUse insert(statements_->processed_insert);
  insert->bind(1, message.message_id);
  insert->bind(2, std::string(consumer));
  insert->bind(3, static_cast<int64_t>(host_.now_ms()));
  insert->exec();
  TraceEvent event =
      event_about(EventKind::dedupe_record, host_.now_ms(), participant_of(consumer), message);
  event.detail = processed_inserted_words(message.message_id, processed_record_how(record));
  event.record = record;
  pending_.events.push_back(std::move(event));
}

// The pre-check of the modes that keep the record outside the business transaction: the
// external seen-set, or processed_messages read before the business transaction
// (processed_after). Traces the dedupe hit when it finds the message.
bool TransferService::already_seen(const Message& message, std::string_view consumer,
                                   const std::string& key) {
  if (config_.transfer_dedupe == TransferDedupe::processed_after) {
    StatementUse find(statements_->processed_find);
    find->bind(1, message.message_id);
    if (config_.transfer_dedupe_key == DedupeKey::message_id_and_consumer) {
      find->bind(2, std::string(consumer));
    }
    if (!find->executeStep()) return false;
    dedupe_hit(Probe::dedupe_processed_messages, DedupeStep::processed_precheck,
               participant_of(consumer), message,
               "processed_messages: " + message.message_id +
                   " found by the pre-check, acked without effect");
    return true;
  }
  const bool external = config_.transfer_dedupe == TransferDedupe::external_before ||
                        config_.transfer_dedupe == TransferDedupe::external_after;
  if (!external || !host_.seen_store().contains(key)) return false;
  dedupe_hit(config_.transfer_dedupe == TransferDedupe::external_before
                 ? Probe::dedupe_transfer_external_before
                 : Probe::dedupe_transfer_external_after,
             DedupeStep::seen_marked, participant_of(consumer), message,
             "external seen-set: message " + message.message_id + " already marked");
  return true;
}

// The handler's one transaction. Returns false when processed_messages said the message was
// processed already (rolled back, acked).
bool TransferService::commit_event(TransferConsumer consumer, const Message& message) {
  const std::string_view consumer_name =
      consumer == TransferConsumer::saga ? kSagaConsumer : kNotificationsConsumer;
  UnitOfWork work(*this);
  if (config_.transfer_dedupe == TransferDedupe::processed_messages) {
    if (!claim_message(message, consumer_name)) return false;
    crash_point(CrashPoint::after_dedupe, message);
  }
  if (consumer == TransferConsumer::saga) {
    apply_saga_event(message);
  } else {
    write_notification(message);
  }
  crash_point(CrashPoint::after_effect, message);
  commit(work);
  return true;
}

// transfer.email: the handler calls the mail API, an effect no transaction holds. Before the
// commit, every copy that reaches the handler sends again (a redelivery, a concurrent copy: the
// transaction's rollback does not unsend it); after it, a crash in between loses the email.
void TransferService::send_email(const Message& message, std::string_view when) {
  TraceEvent event =
      event_about(EventKind::notification, host_.now_ms(), host_.names().notifications, message);
  event.detail = "email sent to the customer (" +
                 std::string(message.type == MessageType::account_credited ? "transfer completed"
                                                                           : "transfer refunded") +
                 "), " + std::string(when) +
                 " the commit: a call to the mail API, outside the transaction";
  host_.email_sent(std::move(event));
}

void TransferService::write_notification(const Message& message) {
  StatementUse insert(statements_->notification_insert);
  insert->bind(1, message.transfer);
  insert->bind(2, message.type == MessageType::account_credited ? "completed" : "refunded");
  insert->bind(3, static_cast<int64_t>(host_.now_ms()));
  insert->exec();
  pending_.notifications.push_back(message.transfer);
  TraceEvent event =
      event_about(EventKind::notification, host_.now_ms(), host_.names().notifications, message);
  event.detail =
      message.type == MessageType::account_credited ? "transfer completed" : "transfer refunded";
  pending_.events.push_back(std::move(event));
}

// Inserts the processed_messages row; false when the unique index said it was already there
// (the E11000 of the original, caught, logged and acked).
bool TransferService::claim_message(const Message& message, std::string_view consumer) {
  try {
    const bool saga = consumer == kSagaConsumer;
    insert_processed(
        message, consumer,
        saga ? DedupeRecord::processed_with_saga : DedupeRecord::processed_with_notification);
    return true;
  } catch (const SQLite::Exception& error) {
    if (!is_unique_violation(error)) throw;
  }
  dedupe_hit(Probe::dedupe_processed_messages, DedupeStep::processed_duplicate_key,
             participant_of(consumer), message,
             std::string(kProcessedMessages) + ": " +
                 processed_duplicate_words(message.message_id) + ", acked without effect");
  return false;
}

void TransferService::apply_saga_event(const Message& message) {
  std::optional<SagaState> state;
  std::string from;
  std::string to;
  int64_t amount = 0;
  {
    StatementUse find(statements_->saga_find);
    find->bind(1, message.transfer);
    if (find->executeStep()) {
      state = parse_saga_state(find->getColumn(0).getString());
      from = find->getColumn(1).getString();
      to = find->getColumn(2).getString();
      amount = find->getColumn(3).getInt64();
    }
  }
  INBOXSIM_ASSERT(state.has_value());
  const SagaEdge* edge = config_.transfer_state_machine ? find_saga_edge(*state, message.type)
                                                        : saga_edge_for_event(message.type);
  if (edge == nullptr) {
    TraceEvent event =
        event_about(EventKind::illegal_transition, host_.now_ms(), host_.names().service, message);
    event.detail = std::string(saga_state_name(*state)) + " + " +
                   std::string(message_type_name(message.type)) +
                   ": no such transition, logged and acked";
    pending_.events.push_back(std::move(event));
    return;
  }
  {
    StatementUse update(statements_->saga_update);
    update->bind(1, std::string(saga_state_name(edge->to)));
    update->bind(2, static_cast<int64_t>(host_.now_ms()));
    update->bind(3, message.transfer);
    update->exec();
  }
  pending_.transitions.push_back(SagaTransition{message.transfer, *state, edge->to});
  TraceEvent event = event_about(EventKind::saga, host_.now_ms(), host_.names().service, message);
  event.saga_from = saga_state_name(*state);
  event.saga_to = saga_state_name(edge->to);
  event.detail = std::string(event.saga_from) + "->" + std::string(event.saga_to);
  pending_.events.push_back(std::move(event));
  if (edge->emit) add_outbox(message.message_id, *edge->emit, message.transfer, from, to, amount);
}

void TransferService::add_outbox(const std::string& cause, MessageType type,
                                 const std::string& transfer, const std::string& from,
                                 const std::string& to, int64_t amount) {
  StatementUse insert(statements_->outbox_insert);
  insert->bind(1, host_.next_message_id(cause));
  insert->bind(2, std::string(message_type_name(type)));
  insert->bind(3, transfer);
  insert->bind(4, from);
  insert->bind(5, to);
  insert->bind(6, static_cast<int64_t>(amount));
  insert->bind(7, static_cast<int64_t>(host_.now_ms()));
  insert->exec();
  pending_.outbox_written = true;
}

size_t TransferService::relay_poll() {
  if (config_.relay_claim == RelayClaim::skip_locked) return relay_poll_claiming();
  std::vector<std::pair<int64_t, MessagePtr>> rows;
  {
    StatementUse unsent(statements_->outbox_unsent);
    while (unsent->executeStep()) {
      rows.emplace_back(unsent->getColumn(0).getInt64(), outbox_message(*unsent));
    }
  }
  publish_rows(rows);
  return rows.size();
}

// MassTransit's bus outbox delivery service locks what it delivers (`SELECT ... FOR UPDATE SKIP
// LOCKED`) in a transaction it commits once the messages are sent; another instance's query
// skips the locked row. Here the claim is a column: the poll's transaction claims the rows no
// other relay holds, the confirm marks the row sent, and the process's death lets its claims go
// (crash()).
size_t TransferService::relay_poll_claiming() {
  std::vector<std::pair<int64_t, MessagePtr>> rows;
  std::vector<int64_t> unclaimed;
  const std::string relay(host_.names().relay);
  UnitOfWork work(*this);
  {
    StatementUse free_rows(statements_->outbox_unclaimed);
    free_rows->bind(1, relay);
    while (free_rows->executeStep()) {
      const int64_t seq = free_rows->getColumn(0).getInt64();
      rows.emplace_back(seq, outbox_message(*free_rows));
      if (free_rows->getColumn(8).getInt() != 0) unclaimed.push_back(seq);
    }
  }
  for (const int64_t seq : unclaimed) {
    StatementUse claim(statements_->outbox_claim);
    claim->bind(1, relay);
    claim->bind(2, static_cast<int64_t>(seq));
    claim->exec();
  }
  commit(work);
  publish_rows(rows);
  return rows.size();
}

MessagePtr TransferService::outbox_message(SQLite::Statement& row) {
  const auto type = parse_message_type(row.getColumn(2).getString());
  INBOXSIM_ASSERT(type.has_value());
  return make_message(row.getColumn(1).getString(), *type, row.getColumn(3).getString(),
                      row.getColumn(4).getString(), row.getColumn(5).getString(),
                      row.getColumn(6).getInt64(), "", row.getColumn(7).getInt64());
}

void TransferService::publish_rows(std::vector<std::pair<int64_t, MessagePtr>>& rows) {
  for (auto& [seq, message] : rows) {
    if (awaiting_confirm_.count(seq) > 0) continue;
    if (!config_.relay_stable_message_id) {
      // The bug being modelled: a relay that mints a new id on every attempt, so a
      // re-publication looks like a new message to every inbox downstream.
      auto fresh = std::make_shared<Message>(*message);
      fresh->message_id = host_.next_message_id(message->message_id);
      message = std::move(fresh);
    }
    awaiting_confirm_.insert(seq);
    host_.relay_publish(message, seq);
    crash_point(CrashPoint::after_publish, *message);
  }
  if (static_cast<int64_t>(rows.size()) == TransferService::kRelayBatchRows) {
    host_.schedule_relay_poll();
  }
}

void TransferService::relay_confirmed(int64_t outbox_seq) {
  if (awaiting_confirm_.erase(outbox_seq) == 0) return;
  UnitOfWork work(*this);
  {
    StatementUse mark(statements_->outbox_mark_sent);
    mark->bind(1, static_cast<int64_t>(host_.now_ms()));
    mark->bind(2, static_cast<int64_t>(outbox_seq));
    mark->exec();
  }
  commit(work);
}

void TransferService::relay_publish_nacked(int64_t outbox_seq) {
  if (awaiting_confirm_.erase(outbox_seq) == 0) return;
  host_.schedule_relay_poll();
}

void TransferService::relay_channel_closed() { awaiting_confirm_.clear(); }

void TransferService::crash() {
  awaiting_confirm_.clear();
  if (config_.relay_claim != RelayClaim::skip_locked) return;
  // The process's connection died, so Postgres rolled its transaction back and its row locks
  // went: the rows it claimed and did not mark sent are free, and each live relay finds them on
  // its next poll.
  UnitOfWork work(*this);
  StatementUse release(statements_->outbox_release);
  release->bind(1, std::string(host_.names().relay));
  if (release->exec() > 0) pending_.outbox_written = true;
  commit(work);
}

void TransferService::restart() { host_.schedule_relay_poll(); }

CleanupCounts TransferService::cleanup_processed(int64_t as_of_ms) {
  const int64_t cutoff = as_of_ms - config_.transfer_processed_ttl_ms;
  if (cutoff <= 0) return {};
  UnitOfWork work(*this);
  CleanupCounts deleted;
  {
    StatementUse remove(statements_->processed_cleanup);
    remove->bind(1, static_cast<int64_t>(cutoff));
    deleted.dedupe_rows = remove->exec();
  }
  {
    StatementUse remove(statements_->outbox_sent_cleanup);
    remove->bind(1, static_cast<int64_t>(cutoff));
    deleted.outbox_rows = remove->exec();
  }
  if (deleted.dedupe_rows == 0 && deleted.outbox_rows == 0) return {};
  commit(work);
  return deleted;
}

std::optional<std::vector<std::string>> TransferService::drop_index(IndexName index) {
  if (index != IndexName::transfer_processed_messages) return std::nullopt;
  std::vector<std::string> sql = index_statements(db_, {"processed_messages_key"});
  db_.exec("DROP INDEX IF EXISTS processed_messages_key");
  return sql;
}

void TransferService::create_index(const std::string& sql) { db_.exec(sql); }

std::map<std::string, SagaState> TransferService::sagas() {
  std::map<std::string, SagaState> out;
  for_each_saga([&](const std::string& transfer, SagaState state) { out[transfer] = state; });
  return out;
}

void TransferService::for_each_saga(
    const std::function<void(const std::string&, SagaState)>& visit) {
  StatementUse query(connection_.prepared("SELECT transfer_id, state FROM sagas ORDER BY transfer_id"));
  while (query->executeStep()) {
    const auto state = parse_saga_state(query->getColumn(1).getString());
    INBOXSIM_ASSERT(state.has_value());
    visit(query->getColumn(0).getString(), *state);
  }
}

std::map<std::string, int64_t> TransferService::notification_counts() {
  std::map<std::string, int64_t> out;
  StatementUse query(connection_.prepared("SELECT transfer_id, COUNT(*) FROM notifications GROUP BY transfer_id"
                          " ORDER BY transfer_id"));
  while (query->executeStep()) out[query->getColumn(0).getString()] = query->getColumn(1).getInt64();
  return out;
}

int64_t TransferService::unsent_outbox_rows() {
  StatementUse count(statements_->outbox_unsent_count);
  const bool has_row = count->executeStep();
  INBOXSIM_ASSERT(has_row);
  return count->getColumn(0).getInt64();
}

}  // namespace inboxsim
