// transfer-service: the transfer saga, modelled on the NestJS + MongoDB service (docs/contract.md §1).
//
// One TransferService is one instance (one process) of the service, with its own connection to
// the service's one database, which every instance shares: `sagas` (the state machine),
// `processed_messages` (unique index on `message_id`, or on `(message_id, consumer)`), `outbox`
// and `notifications`. A consumed
// event inserts its processed_messages row, updates the saga and writes the next command to the
// outbox in ONE transaction; a duplicate key rolls it all back and is acked. A polling relay
// publishes outbox rows with their stored message id and marks a row sent only on the
// publisher confirm. Every instance runs a relay on the shared outbox; a relay's in-flight set is
// its own memory and dies with its process.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "domain/config.h"
#include "domain/scenario.h"
#include "services/host.h"
#include "services/service_core.h"

namespace inboxsim {

// The consumers of transfer-service.
enum class TransferConsumer : uint8_t { saga, notifications };

class TransferService : private ServiceCore {
 public:
  // Outbox rows a relay poll reads at most; a full batch polls again at once.
  static constexpr int64_t kRelayBatchRows = 64;

  // An instance on its own connection `db` to the service's database.
  TransferService(ServiceHost& host, const Config& config, Connection& connection);
  ~TransferService();

  // The schema of the service's database, and the key that names it among schema templates.
  static void create_schema(SQLite::Database& db, const Config& config);
  static std::string schema_key(const Config& config);
  // The tables whose insertion order nothing reads (UnorderedTable): all but the outbox, which
  // the relay publishes in seq order.
  static std::span<const UnorderedTable> unordered_tables();

  // A client asks for a transfer: the saga row in REQUESTED and the Transfer.Requested outbox
  // row, in one transaction.
  void request(const TransferSpec& transfer);

  // Handles one delivery to the saga consumer or the notifications consumer: a Task that ends
  // with whether to ack, or by throwing ServiceCrash.
  Task<Outcome> handle(TransferConsumer consumer, MessagePtr message);

  // The polling relay: publishes unsent outbox rows that are not awaiting a confirm.
  // Returns how many unsent rows it read (at most kRelayBatchRows), those awaiting a confirm
  // included.
  size_t relay_poll();
  // The publisher confirm for outbox row `seq` arrived: mark the row sent.
  void relay_confirmed(int64_t outbox_seq);
  // The broker nacked the publish of row `seq`: it will be published again.
  void relay_publish_nacked(int64_t outbox_seq);
  // The relay's channel closed with confirms outstanding: every row it awaited a confirm for is
  // in doubt and will be published again once the relay has reconnected.
  void relay_channel_closed();

  // The process died: everything in memory is gone.
  void crash();
  void restart();

  // The explorer's view: the database's rows when asked, and the relay's memory.
  // A canonical one reads the unordered tables as sets (UnorderedTable).
  void fingerprint(Hasher& hasher, bool with_database, bool canonical = false) {
    if (with_database) {
      fingerprint_database(hasher,
                           canonical ? unordered_tables() : std::span<const UnorderedTable>());
    }
    hasher.add(static_cast<uint64_t>(awaiting_confirm_.size()));
    for (const int64_t seq : awaiting_confirm_) hasher.add_signed(seq);
  }

  // The Mongo TTL monitor, as of `as_of_ms`: deletes processed_messages older than the TTL,
  // and outbox rows sent longer ago than the TTL (the outbox collection's TTL index on its
  // sent time: the relay never reads a sent row again). Returns how many rows of each went.
  CleanupCounts cleanup_processed(int64_t as_of_ms);

  // Drops a unique index this service owns; returns the statements that create it again (none
  // when it was dropped already), or nothing if it has no such index.
  std::optional<std::vector<std::string>> drop_index(IndexName index);
  // Runs a statement drop_index returned (an operator puts the index back); throws
  // SQLite::Exception when the rows no longer allow it (a unique index over duplicates).
  void create_index(const std::string& sql);

  // Committed state, read from the database.
  std::map<std::string, SagaState> sagas();
  // Hands every saga (transfer id, state) to `visit`, in transfer id order, without holding them.
  void for_each_saga(const std::function<void(const std::string&, SagaState)>& visit);
  std::map<std::string, int64_t> notification_counts();
  int64_t unsent_outbox_rows();

 private:
  // The playground's labels of a handler's steps, by what it does next ("saga: send the ack").
  struct StepLabels {
    std::string first;         // before its first transaction
    std::string checked;       // after the dedupe check (the external and _after mechanisms)
    std::string handle;        // after marking the seen-set before the handling
    std::string after_commit;  // after the business commit
    std::string ack;           // after marking the seen-set or recording processed_after
  };
  // Built only where the explorer or the playground reads them (ServiceHost::names_steps).
  StepLabels step_labels(TransferConsumer consumer) const;
  void record_processed_after(const Message& message, std::string_view consumer);
  // relay_poll with relay.claim = skip_locked: claims the rows no other relay holds first.
  size_t relay_poll_claiming();
  // The message an outbox row (seq, message_id, type, transfer_id, from, to, amount,
  // created_ms) carries.
  static MessagePtr outbox_message(SQLite::Statement& row);
  // Publishes each row not awaiting a confirm; a full batch polls again.
  void publish_rows(std::vector<std::pair<int64_t, MessagePtr>>& rows);
  void insert_processed(const Message& message, std::string_view consumer, DedupeRecord record);
  bool already_seen(const Message& message, std::string_view consumer, const std::string& key);
  bool commit_event(TransferConsumer consumer, const Message& message);
  bool claim_message(const Message& message, std::string_view consumer);
  void apply_saga_event(const Message& message);
  void write_notification(const Message& message);
  void send_email(const Message& message, std::string_view when);
  // `cause`: the id of the message whose handling sends it ("" for the story's request).
  void add_outbox(const std::string& cause, MessageType type, const std::string& transfer,
                  const std::string& from, const std::string& to, int64_t amount);
  std::string_view participant_of(std::string_view consumer) const;

  std::set<int64_t> awaiting_confirm_;  // outbox seqs published, confirm not yet seen
  struct Statements;
  std::unique_ptr<Statements> statements_;
};

}  // namespace inboxsim
