// The workload generator: seed -> a random bank story (accounts, transfers, faults) as a
// Scenario that the ordinary runner plays.
//
// Each seed first draws its options (swarm testing, as TigerBeetle's VOPR does: with --swarm a
// seed enables only some fault kinds, with its own weights and rates, so some runs are
// crash-heavy, some duplicate-heavy, some quiet), then the story itself. Every random choice
// comes from one Rng seeded with the seed, so the same seed and options give the same scenario.
//
// Faults are match-based (docs/contract.md §6): each names a message type and a transfer, so it needs no
// timing and survives shrinking, which removes steps around it.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "domain/config.h"
#include "domain/scenario.h"
#include "kernel/enum_names.h"
#include "kernel/rng.h"

namespace inboxsim {

// One round of the operator that ends a story with faults: run until quiescent, then redrive
// every error and dead-letter queue. The fuzzer's stories and the explorer's end with these.
std::array<Step, 2> operator_round();

// The most accounts or transfers one generated story may have (docs/contract.md §7: a million
// transfers in one run).
inline constexpr int64_t kStoryCountMax = 1'000'000;
// The highest arrival rate (transfers per virtual second) a story may ask for: one per
// millisecond, the clock's resolution.
inline constexpr int64_t kRatePerSecondMax = 1'000;

enum class Workload : uint8_t { small, standard, large };
std::string_view workload_name(Workload workload);
std::optional<Workload> parse_workload(std::string_view name);

// What the generator may draw. Kinds of fault a seed can inject: the faults of docs/contract.md §2
// plus two story shapes, a late duplicate (virtual time jumps past a dedupe window, then a message
// is published again) and a dropped unique index (exercise 3 of docs/scenarios.md).
enum class FaultAction : uint8_t {
  crash,
  drop_ack,
  drop_connection,
  nack,
  duplicate,
  lose_confirm,
  delay,
  late_duplicate,
  drop_index,
  pause,
  publish_nack,
};
inline constexpr size_t kFaultActionCount = 11;
inline constexpr std::array<std::string_view, kFaultActionCount> kFaultActionNames = {
    "crash", "drop_ack",       "drop_connection", "nack",  "duplicate",   "lose_confirm",
    "delay", "late_duplicate", "drop_index",      "pause", "publish_nack"};
static_assert(names_every(kFaultActionNames, FaultAction::publish_nack));
std::string_view fault_action_name(FaultAction action);

// Returns the default configuration of a campaign: Config's defaults with the rejections
// remembered.
inline Config campaign_config() {
  Config config;
  config.account_remember_rejections = true;
  return config;
}

struct GeneratorOptions {
  Workload workload = Workload::standard;
  std::optional<int64_t> transfers;  // overrides the workload's transfer count
  std::optional<int64_t> accounts;   // overrides the workload's account count
  // Transfers requested per virtual second (fuzz --rate): the batches arrive spread over virtual
  // time at this rate, each followed by a `run` of the time until the next, instead of the
  // drawn pauses between batches. A long story then spans hours or days of virtual time, so the
  // dedupe windows and the TTLs expire during it as they do in production.
  std::optional<int64_t> rate_per_second;
  bool swarm = false;
  // Whether a story may drop processed_messages' unique index mid-run (exercise 3 of
  // docs/scenarios.md). The matrix turns it off: its rows say which defences are on.
  bool drop_indexes = true;
  // The configuration under test, copied into every scenario. Campaigns test the bank with
  // every defence, ours included: account.remember_rejections is off in Config (so that `run`
  // models the default bank), and a campaign on the default bank finds scenario 29's
  // late duplicate of a rejected transfer within a few seeds. A --set of the key overrides it.
  Config config = campaign_config();
  // Concurrency (docs/contract.md §8.1) is drawn per seed, as part of the story, unless the campaign
  // pins it with --set: the instance counts, the work time of a handler step, the heartbeat.
  bool draw_instances = true;
  bool draw_work = true;
  bool draw_heartbeat = true;
  // The fault paths (docs/contract.md §8.2), drawn with --swarm unless pinned: account.retry and
  // broker.queue_type.
  bool draw_retry = true;
  bool draw_queue_type = true;
  // With --swarm unless pinned: broker.dead_letter (a dead-letter exchange for half the seeds)
  // and broker.consumer_timeout_ms (off for a quarter).
  bool draw_dead_letter = true;
  bool draw_consumer_timeout = true;
  // The MassTransit version and the database, drawn with --swarm unless pinned:
  // account.masstransit, account.database and account.isolation.
  bool draw_masstransit = true;
  bool draw_database = true;
  bool draw_isolation = true;
  // With --swarm unless pinned: account.marten_append (rich for a third of the seeds; it acts
  // only with account.inbox = marten).
  bool draw_marten_append = true;
  // The keys the campaign set (--set): with --swarm, draw_platform() (fuzz/draw_platform.h)
  // draws broker.kind, JetStream's keys and account.inbox, and leaves these alone.
  std::vector<std::string> pinned_keys;
};

// The options one seed drew. Printed when the seed fails, and written into the counterexample.
struct DrawnOptions {
  int64_t accounts = 0;
  int64_t transfers = 0;
  int64_t faults = 0;                                 // how many fault actions the story has
  std::array<uint32_t, kFaultActionCount> weights{};  // 0: the kind is off for this seed
  int64_t closed_percent = 0;                         // chance that an account is closed
  int64_t overdraft_percent = 0;  // chance that a transfer asks for more than the balance
  int64_t batch = 1;              // transfers requested together, in flight at once
  // Concurrency, as the story's config holds it (drawn, or pinned by the campaign).
  int64_t account_instances = 1;
  int64_t transfer_instances = 1;
  int64_t work_ms_min = 0;
  int64_t work_ms_max = 0;
  int64_t heartbeat_ms = 0;
  // What the bank runs on, as the story's config holds it (drawn with --swarm, or pinned).
  BrokerKind broker = BrokerKind::rabbitmq;
  int64_t ack_wait_ms = 0;  // JetStream's
  AccountInbox inbox = AccountInbox::masstransit;
};

// Returns "accounts=5 transfers=10 faults=7 batch=3 closed=20% overdraft=15% instances=2+1
// work=0..10ms heartbeat=60000ms inbox=masstransit mix=crash:3,...", with "broker=jetstream
// ack_wait=1000ms" in place of the heartbeat on JetStream.
std::string describe_drawn(const DrawnOptions& drawn);

struct Generated {
  Scenario scenario;
  DrawnOptions drawn;
};

// Returns the story of `seed`. The scenario's seed is `seed`, its config options.config, its
// expect empty (every invariant must hold).
// REQUIRES: the account count, if given, is at least 2; the transfer count at least 1.
Generated generate_scenario(uint64_t seed, const GeneratorOptions& options);

// The story of `seed`, one step at a time: the steps that generate_scenario() collects, in the
// same order, drawn only when asked for. A story of a million transfers held whole takes
// hundreds of megabytes; drawn as it is played, it takes what one batch takes, plus a few
// bytes per transfer (which transfers a late duplicate aims at, and how many faults each has
// that can park one of its messages, for the story's ending).
class StoryGenerator {
 public:
  // REQUIRES: as generate_scenario().
  StoryGenerator(uint64_t seed, const GeneratorOptions& options);

  // The story without its steps: name, seed, config and accounts.
  const Scenario& header() const { return header_; }
  const DrawnOptions& drawn() const { return drawn_; }

  // The next step, or nothing when the story has ended.
  std::optional<Step> next();

 private:
  void draw_batch();
  void draw_fault_action(FaultAction action, size_t first);
  void draw_ending();

  GeneratorOptions options_;
  Rng rng_;
  DrawnOptions drawn_;
  Scenario header_;
  // The fault actions (batch, action), in batch order and, within a batch, in draw order.
  std::vector<std::pair<uint32_t, FaultAction>> actions_;
  size_t next_action_ = 0;
  size_t batch_count_ = 0;
  size_t next_batch_ = 0;
  size_t requested_ = 0;
  bool index_dropped_ = false;
  bool ended_ = false;
  std::vector<uint32_t> late_targets_;       // transfer numbers - 1
  std::vector<uint32_t> parks_by_transfer_;  // by transfer number - 1
  // The rounds the most faulted transfer needs besides the last: its parking faults, and one
  // per delivery limit + 1 returns aimed at it.
  uint32_t rounds_max_ = 0;
  // By transfer number - 1: the faults aimed at it that return a delivery to its queue (crash,
  // drop_connection, drop_ack, pause, a nack's failures); past a quorum queue's delivery limit
  // they dead-letter it.
  std::vector<uint32_t> returns_by_transfer_;
  std::deque<Step> pending_;  // drawn, not yet taken
};

}  // namespace inboxsim
