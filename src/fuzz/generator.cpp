#include "fuzz/generator.h"

#include <algorithm>
#include <span>
#include <vector>

#include "fuzz/draw_platform.h"
#include "kernel/assert.h"
#include "world/limits.h"

namespace inboxsim {

namespace {

// Bounds of the drawn stories, named so that a reader sees the whole envelope in one place.
constexpr int64_t kBalanceMax = 10'000;
constexpr int64_t kBalanceStep = 100;
constexpr int64_t kDelayMsMax = 400;
constexpr int64_t kRunMsMax = 300;
constexpr int64_t kNackTimesMax = 3;
constexpr int64_t kRestartMsMax = 3'000;
constexpr int64_t kWeightMax = 10;
// Concurrency: at most this many instances per service in a drawn story (the config allows 8;
// three already make every race the bank has), step work times to choose from, and pauses.
constexpr int64_t kDrawnInstancesMax = 3;
constexpr std::array<int64_t, 4> kWorkMsChoices = {2, 5, 10, 20};
constexpr std::array<int64_t, 4> kHeartbeatMsChoices = {0, 1'000, 5'000, 60'000};
constexpr int64_t kShortPauseMsMax = 200;
constexpr int64_t kRetriesDrawnMax = 3;
constexpr int64_t kRetryWaitMsMax = 500;
constexpr int64_t kLongPauseExtraMsMax = 2'000;

struct WorkloadSize {
  int64_t accounts;
  int64_t transfers;
};

WorkloadSize workload_size(Workload workload) {
  switch (workload) {
    case Workload::small: return {3, 3};
    case Workload::standard: return {5, 10};
    case Workload::large: return {12, 50};
  }
  INBOXSIM_ASSERT(false);
}

constexpr std::array<std::string_view, 20> kAccountNames = {
    "alice",  "bob",   "carol", "dave",    "erin",   "frank",  "grace",
    "heidi",  "ivan",  "judy",  "mallory", "niaj",   "olivia", "peggy",
    "rupert", "sybil", "trent", "victor",  "walter", "yolanda"};

std::string account_name(size_t index) {
  if (index < kAccountNames.size()) return std::string(kAccountNames[index]);
  return "account" + std::to_string(index + 1);
}

// Message types a fault most often aims at: the happy path is where every transfer goes, so it
// gets the larger weights; the rejection and refund types still come up.
constexpr std::array<uint32_t, kMessageTypeCount> kTypeWeights = {4, 3, 1, 4, 1, 3, 1, 1};

template <size_t N>
size_t pick_weighted(Rng& rng, const std::array<uint32_t, N>& weights) {
  uint64_t total = 0;
  for (const uint32_t weight : weights) total += weight;
  INBOXSIM_ASSERT(total > 0);
  uint64_t draw = rng.below(total);
  for (size_t i = 0; i < N; ++i) {
    if (draw < weights[i]) return i;
    draw -= weights[i];
  }
  INBOXSIM_ASSERT(false);
}

MessageType pick_type(Rng& rng) { return kAllMessageTypes[pick_weighted(rng, kTypeWeights)]; }

// The types a service handles (consumer crash points) or publishes (relay crash points).
std::vector<MessageType> types_at(ServiceId service, CrashPoint point) {
  const bool commands = (service == ServiceId::account) != (point == CrashPoint::after_publish);
  std::vector<MessageType> out;
  for (const MessageType type : kAllMessageTypes) {
    if (is_transfer_command(type) == commands) out.push_back(type);
  }
  return out;
}

// Whether `point` is one only some account-service mechanisms pass (the wolverine inbox's store
// and ack), drawn only where the inbox's registry row has it.
bool store_and_ack_point(CrashPoint point) {
  return point == CrashPoint::after_store || point == CrashPoint::after_ack;
}

// The crash points a story may aim at: the service's own, without after_mark where no
// external seen-set is marked (account-service: the inbox's registry row says whether its
// handler passes after_mark, after_store and after_ack).
std::vector<CrashPoint> crash_points(ServiceId service, const Config& config) {
  const AccountInboxKind& inbox = account_inbox_kind(config.account_inbox);
  const bool external = service == ServiceId::account
                            ? inbox.has(CrashPoint::after_mark)
                            : (config.transfer_dedupe == TransferDedupe::external_before ||
                               config.transfer_dedupe == TransferDedupe::external_after ||
                               config.transfer_dedupe == TransferDedupe::processed_after);
  std::vector<CrashPoint> points;
  for (const CrashPoint point : crash_points_of(service)) {
    if (point == CrashPoint::after_mark && !external) continue;
    if (store_and_ack_point(point) && !inbox.has(point)) continue;
    points.push_back(point);
  }
  return points;
}

// The pause points of `service`, without the store-and-ack points where the inbox has none.
std::vector<CrashPoint> pause_points(ServiceId service, const Config& config) {
  const AccountInboxKind& inbox = account_inbox_kind(config.account_inbox);
  std::vector<CrashPoint> points;
  for (const CrashPoint point : pause_points_of(service)) {
    if (store_and_ack_point(point) && !inbox.has(point)) continue;
    points.push_back(point);
  }
  return points;
}

// Instances, work time and heartbeat, unless the campaign pinned them. A third of the seeds
// keep one instance of each service: the world of v1, where only pauses interleave.
void draw_concurrency(Rng& rng, const GeneratorOptions& options, Config& config) {
  if (options.draw_instances && !rng.chance(1, 3)) {
    config.account_instances = rng.between(1, kDrawnInstancesMax);
    config.transfer_instances = rng.between(1, kDrawnInstancesMax);
  }
  if (options.draw_work && rng.chance(1, 2)) {
    config.work_ms_min = 0;
    config.work_ms_max = kWorkMsChoices[rng.below(kWorkMsChoices.size())];
  }
  if (options.draw_heartbeat && options.swarm) {
    config.broker_heartbeat_ms = kHeartbeatMsChoices[rng.below(kHeartbeatMsChoices.size())];
  }
}

// With --swarm: MassTransit's retry (none for half the seeds, as by default) and, for a quarter,
// classic queues.
void draw_fault_paths(Rng& rng, const GeneratorOptions& options, Config& config) {
  if (!options.swarm) return;
  if (options.draw_retry && rng.chance(1, 2)) {
    const auto retries = static_cast<size_t>(rng.between(1, kRetriesDrawnMax));
    config.account_retry.intervals_ms.clear();
    if (rng.chance(1, 2)) {
      config.account_retry.kind = RetryPolicy::Kind::immediate;
      config.account_retry.intervals_ms.assign(retries, 0);
    } else {
      config.account_retry.kind = RetryPolicy::Kind::intervals;
      for (size_t i = 0; i < retries; ++i) {
        config.account_retry.intervals_ms.push_back(rng.between(1, kRetryWaitMsMax));
      }
    }
  }
  if (options.draw_queue_type && rng.chance(1, 4)) config.broker_queue_type = QueueType::classic;
  // A third of the seeds run an older MassTransit (a nack faults the outbox pass at once).
  if (options.draw_masstransit && rng.chance(1, 3)) {
    config.account_masstransit =
        rng.chance(1, 2) ? MassTransitVersion::v8_3 : MassTransitVersion::v8_2;
  }
  // A quarter on SQL Server, a quarter at Read Committed: the lock waiter reads the new row.
  if (options.draw_database && rng.chance(1, 4)) {
    config.account_database = AccountDatabase::sqlserver;
  }
  if (options.draw_isolation && rng.chance(1, 4)) {
    config.account_isolation = Isolation::read_committed;
  }
}

// With --swarm: a dead-letter exchange behind the work queues for half the seeds (the default
// has none, so a message past the delivery limit is dropped), and RabbitMQ's consumer timeout
// off for a quarter.
void draw_broker_limits(Rng& rng, const GeneratorOptions& options, Config& config) {
  if (!options.swarm) return;
  if (options.draw_dead_letter && rng.chance(1, 2)) config.broker_dead_letter = DeadLetter::dlx;
  if (options.draw_consumer_timeout && rng.chance(1, 4)) config.broker_consumer_timeout_ms = 0;
}

// With --swarm: Marten 8's rich append for a third of the seeds (Marten 9's quick by default).
void draw_marten_append(Rng& rng, const GeneratorOptions& options, Config& config) {
  if (!options.swarm) return;
  if (options.draw_marten_append && rng.chance(1, 3)) {
    config.account_marten_append = MartenAppend::rich;
  }
}

DrawnOptions draw_options(Rng& rng, const GeneratorOptions& options) {
  const WorkloadSize size = workload_size(options.workload);
  DrawnOptions drawn;
  drawn.accounts = options.accounts.value_or(size.accounts);
  drawn.transfers = options.transfers.value_or(size.transfers);
  INBOXSIM_ASSERT(drawn.accounts >= 2);
  INBOXSIM_ASSERT(drawn.transfers >= 1);
  INBOXSIM_ASSERT(drawn.accounts <= kStoryCountMax);
  INBOXSIM_ASSERT(drawn.transfers <= kStoryCountMax);
  const int64_t faults_max = std::max<int64_t>(2, drawn.transfers);
  if (!options.swarm) {
    drawn.weights.fill(1);
    drawn.faults = rng.between(0, faults_max);
    drawn.closed_percent = 15;
    drawn.overdraft_percent = 15;
    drawn.batch = rng.between(1, std::min<int64_t>(drawn.transfers, 4));
    return drawn;
  }
  // Swarm: each kind is on with even odds (at least one), with its own weight.
  while (
      std::all_of(drawn.weights.begin(), drawn.weights.end(), [](uint32_t w) { return w == 0; })) {
    for (uint32_t& weight : drawn.weights) {
      weight = rng.chance(1, 2) ? static_cast<uint32_t>(rng.between(1, kWeightMax)) : 0;
    }
  }
  // Some seeds are quiet, most moderate, some stormy.
  const std::array<int64_t, 4> fault_levels = {0, faults_max / 2, faults_max, 2 * faults_max};
  drawn.faults = rng.between(0, fault_levels[rng.below(fault_levels.size())]);
  drawn.closed_percent = rng.between(0, 40);
  drawn.overdraft_percent = rng.between(0, 50);
  drawn.batch = rng.between(1, drawn.transfers);
  return drawn;
}

void add_accounts(Rng& rng, const DrawnOptions& drawn, Scenario& scenario) {
  for (size_t i = 0; i < static_cast<size_t>(drawn.accounts); ++i) {
    AccountSpec account;
    account.balance = rng.between(0, kBalanceMax / kBalanceStep) * kBalanceStep;
    // The first two accounts stay open, so that every story has a transfer that can succeed.
    account.closed = i >= 2 && rng.chance(static_cast<uint64_t>(drawn.closed_percent), 100);
    scenario.accounts.emplace(account_name(i), account);
  }
}

TransferSpec draw_transfer(Rng& rng, const DrawnOptions& drawn, const Scenario& scenario,
                           size_t number) {
  const auto count = static_cast<uint64_t>(drawn.accounts);
  const uint64_t from = rng.below(count);
  uint64_t to = rng.below(count - 1);
  if (to >= from) ++to;
  TransferSpec transfer;
  transfer.id = "t" + std::to_string(number);
  transfer.from = account_name(from);
  transfer.to = account_name(to);
  const int64_t balance = scenario.accounts.at(transfer.from).balance;
  if (balance == 0 || rng.chance(static_cast<uint64_t>(drawn.overdraft_percent), 100)) {
    transfer.amount = balance + rng.between(1, kBalanceMax);
  } else {
    transfer.amount = rng.between(1, balance);
  }
  return transfer;
}

Match draw_match(Rng& rng, const std::string& transfer, std::optional<MessageType> type) {
  Match match;
  match.transfer = transfer;
  match.type = type ? type : pick_type(rng);
  match.occurrence = rng.chance(1, 5) ? 2 : 1;
  return match;
}

FaultSpec draw_crash(Rng& rng, const Config& config, const std::string& transfer) {
  FaultSpec fault;
  fault.kind = FaultKind::crash;
  fault.service = rng.chance(1, 2) ? ServiceId::account : ServiceId::transfer;
  const std::vector<CrashPoint> points = crash_points(*fault.service, config);
  fault.at = points[rng.below(points.size())];
  const std::vector<MessageType> types = types_at(*fault.service, fault.at);
  fault.has_match = true;
  fault.match = draw_match(rng, transfer, types[rng.below(types.size())]);
  // A transfer-only match fires on whatever the service handles first for that transfer.
  if (rng.chance(1, 4)) fault.match.type.reset();
  if (rng.chance(1, 3)) fault.restart_after_ms = rng.between(0, kRestartMsMax);
  const int64_t instances = config.instances(*fault.service == ServiceId::account);
  if (instances > 1) fault.instance = rng.between(1, instances);
  return fault;
}

// A pause of one instance between two of its steps: short, or past the heartbeat (the ack wait
// on JetStream), which turns the paused instance into a zombie whose message another instance
// takes over.
FaultSpec draw_pause(Rng& rng, const Config& config, const std::string& transfer) {
  FaultSpec fault;
  fault.kind = FaultKind::pause;
  fault.service = rng.chance(1, 2) ? ServiceId::account : ServiceId::transfer;
  const std::vector<CrashPoint> points = pause_points(*fault.service, config);
  fault.at = points[rng.below(points.size())];
  const std::vector<MessageType> types = types_at(*fault.service, fault.at);
  fault.has_match = true;
  fault.match = draw_match(rng, transfer, types[rng.below(types.size())]);
  const int64_t instances = config.instances(*fault.service == ServiceId::account);
  if (instances > 1) fault.instance = rng.between(1, instances);
  // On JetStream the delivery's lease is its ack wait: a pause past it is redelivered to.
  const int64_t lease_ms = config.broker_kind == BrokerKind::jetstream ? config.broker_ack_wait_ms
                                                                       : config.broker_heartbeat_ms;
  const bool long_pause = lease_ms > 0 && rng.chance(1, 2);
  fault.ms = long_pause ? lease_ms + rng.between(1, kLongPauseExtraMsMax)
                        : rng.between(1, kShortPauseMsMax);
  return fault;
}

FaultSpec draw_fault(Rng& rng, FaultAction action, const Config& config,
                     const std::string& transfer) {
  if (action == FaultAction::crash) return draw_crash(rng, config, transfer);
  if (action == FaultAction::pause) return draw_pause(rng, config, transfer);
  FaultSpec fault;
  fault.has_match = true;
  fault.match = draw_match(rng, transfer, std::nullopt);
  switch (action) {
    case FaultAction::drop_ack: fault.kind = FaultKind::drop_ack; break;
    case FaultAction::drop_connection:
      fault.kind = FaultKind::drop_connection;
      fault.service =
          is_transfer_command(*fault.match.type) ? ServiceId::account : ServiceId::transfer;
      break;
    case FaultAction::nack:
      fault.kind = FaultKind::nack;
      fault.times = rng.between(1, kNackTimesMax);
      break;
    case FaultAction::lose_confirm: fault.kind = FaultKind::lose_confirm; break;
    case FaultAction::publish_nack: fault.kind = FaultKind::publish_nack; break;
    case FaultAction::delay:
      fault.kind = FaultKind::delay;
      fault.ms = rng.between(1, kDelayMsMax);
      break;
    case FaultAction::duplicate:
    case FaultAction::late_duplicate: fault.kind = FaultKind::duplicate; break;
    case FaultAction::crash:
    case FaultAction::pause:
    case FaultAction::drop_index: INBOXSIM_ASSERT(false);
  }
  return fault;
}

Step fault_step(FaultSpec fault) {
  Step step;
  step.kind = StepKind::fault;
  step.fault = std::move(fault);
  return step;
}

}  // namespace

std::string_view workload_name(Workload workload) {
  switch (workload) {
    case Workload::small: return "small";
    case Workload::standard: return "standard";
    case Workload::large: return "large";
  }
  INBOXSIM_ASSERT(false);
}

std::optional<Workload> parse_workload(std::string_view name) {
  for (const Workload workload : {Workload::small, Workload::standard, Workload::large}) {
    if (workload_name(workload) == name) return workload;
  }
  return std::nullopt;
}

std::string_view fault_action_name(FaultAction action) {
  return name_of(kFaultActionNames, action);
}

std::string describe_drawn(const DrawnOptions& drawn) {
  std::string text =
      "accounts=" + std::to_string(drawn.accounts) +
      " transfers=" + std::to_string(drawn.transfers) + " faults=" + std::to_string(drawn.faults) +
      " batch=" + std::to_string(drawn.batch) + " closed=" + std::to_string(drawn.closed_percent) +
      "%" + " overdraft=" + std::to_string(drawn.overdraft_percent) +
      "% instances=" + std::to_string(drawn.account_instances) + "+" +
      std::to_string(drawn.transfer_instances) + " work=" + std::to_string(drawn.work_ms_min) +
      ".." + std::to_string(drawn.work_ms_max) +
      (drawn.broker == BrokerKind::jetstream
           ? "ms broker=jetstream ack_wait=" + std::to_string(drawn.ack_wait_ms)
           : "ms heartbeat=" + std::to_string(drawn.heartbeat_ms)) +
      "ms inbox=" + std::string(account_inbox_name(drawn.inbox)) + " mix=";
  bool first = true;
  for (size_t i = 0; i < kFaultActionCount; ++i) {
    if (drawn.weights[i] == 0) continue;
    if (!first) text += ",";
    first = false;
    text += std::string(fault_action_name(static_cast<FaultAction>(i))) + ":" +
            std::to_string(drawn.weights[i]);
  }
  return text;
}

Generated generate_scenario(uint64_t seed, const GeneratorOptions& options) {
  StoryGenerator story(seed, options);
  Generated out;
  out.scenario = story.header();
  out.drawn = story.drawn();
  while (std::optional<Step> step = story.next()) out.scenario.steps.push_back(std::move(*step));
  return out;
}

StoryGenerator::StoryGenerator(uint64_t seed, const GeneratorOptions& options)
    : options_(options), rng_(seed) {
  drawn_ = draw_options(rng_, options_);
  header_.name = "fuzz-" + std::to_string(seed);
  header_.seed = seed;
  header_.config = options_.config;
  draw_concurrency(rng_, options_, header_.config);
  draw_fault_paths(rng_, options_, header_.config);
  {
    // From a generator of their own, so that every other draw of a seed is what it was.
    Rng limits(seed ^ 0x6272'6f6b'6572'3239ULL);
    draw_broker_limits(limits, options_, header_.config);
  }
  {
    // Its own generator too, for the same reason.
    Rng marten(seed ^ 0x6d61'7274'656e'3239ULL);
    draw_marten_append(marten, options_, header_.config);
  }
  draw_platform(seed, options_, header_.config);
  // After the draws, which happen all the same: every other draw of a seed is what it was.
  if (header_.config.broker_kind == BrokerKind::jetstream) keep_rabbitmq_defaults(header_.config);
  drawn_.account_instances = header_.config.account_instances;
  drawn_.transfer_instances = header_.config.transfer_instances;
  drawn_.work_ms_min = header_.config.work_ms_min;
  drawn_.work_ms_max = header_.config.work_ms_max;
  drawn_.heartbeat_ms = header_.config.broker_heartbeat_ms;
  drawn_.broker = header_.config.broker_kind;
  drawn_.ack_wait_ms = header_.config.broker_ack_wait_ms;
  drawn_.inbox = header_.config.account_inbox;
  add_accounts(rng_, drawn_, header_);

  // Spread the fault actions over the batches in which the transfers are requested.
  const auto transfer_count = static_cast<size_t>(drawn_.transfers);
  const auto batch = static_cast<size_t>(drawn_.batch);
  batch_count_ = (transfer_count + batch - 1) / batch;
  actions_.reserve(static_cast<size_t>(drawn_.faults));
  for (int64_t i = 0; i < drawn_.faults; ++i) {
    const auto batch_index = static_cast<uint32_t>(rng_.below(batch_count_));
    actions_.emplace_back(batch_index,
                          static_cast<FaultAction>(pick_weighted(rng_, drawn_.weights)));
  }
  std::stable_sort(actions_.begin(), actions_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  parks_by_transfer_.assign(transfer_count, 0);
  returns_by_transfer_.assign(transfer_count, 0);
}

std::array<Step, 2> operator_round() {
  Step settle;
  settle.kind = StepKind::run;
  Step redrive;
  redrive.kind = StepKind::redrive;
  redrive.queue = "all";
  return {std::move(settle), std::move(redrive)};
}

std::optional<Step> StoryGenerator::next() {
  while (pending_.empty()) {
    if (ended_) return std::nullopt;
    if (next_batch_ < batch_count_) {
      draw_batch();
    } else {
      draw_ending();
      ended_ = true;
    }
  }
  Step step = std::move(pending_.front());
  pending_.pop_front();
  return step;
}

// One batch: its transfers, the fault actions aimed mostly at them, and the pause that follows.
void StoryGenerator::draw_batch() {
  const size_t b = next_batch_++;
  const auto transfer_count = static_cast<size_t>(drawn_.transfers);
  const auto batch = static_cast<size_t>(drawn_.batch);
  const size_t first = requested_;
  for (size_t i = 0; i < batch && requested_ < transfer_count; ++i) {
    Step step;
    step.kind = StepKind::transfer;
    step.transfer = draw_transfer(rng_, drawn_, header_, ++requested_);
    pending_.push_back(std::move(step));
  }
  for (; next_action_ < actions_.size() && actions_[next_action_].first == b; ++next_action_) {
    draw_fault_action(actions_[next_action_].second, first);
  }
  if (b + 1 < batch_count_ && options_.rate_per_second) {
    // Transfer n arrives at n / rate seconds: this batch came at first / rate, the next one
    // comes at requested / rate, each computed from the start so that rounding never drifts.
    const auto rate = static_cast<size_t>(*options_.rate_per_second);
    Step run;
    run.kind = StepKind::run;
    run.until_quiescent = false;
    run.ms = static_cast<int64_t>(requested_ * 1000 / rate - first * 1000 / rate);
    if (run.ms > 0) pending_.push_back(std::move(run));
  } else if (b + 1 < batch_count_ && rng_.chance(1, 2)) {
    Step run;
    run.kind = StepKind::run;
    run.until_quiescent = rng_.chance(1, 4);
    run.ms = run.until_quiescent ? 0 : rng_.between(1, kRunMsMax);
    pending_.push_back(std::move(run));
  }
  if (next_batch_ == batch_count_) {
    actions_.clear();
    actions_.shrink_to_fit();
  }
}

void StoryGenerator::draw_fault_action(FaultAction action, size_t first) {
  // Mostly aim at this batch, whose messages are all still ahead; sometimes at older ones.
  const size_t target =
      rng_.chance(4, 5) ? first + rng_.below(requested_ - first) : rng_.below(requested_);
  if (action == FaultAction::late_duplicate) {
    late_targets_.push_back(static_cast<uint32_t>(target));
    return;
  }
  if (action == FaultAction::drop_index) {
    // Exercise 3 (docs/scenarios.md): delete the unique index from processed_messages, and see
    // whether the saga state machine still holds. The notifications consumer has no second line
    // of defence, so there the drop is the known break of processed_unique=false.
    if (index_dropped_ || !options_.drop_indexes || header_.config.transfer_notifications) {
      return;
    }
    index_dropped_ = true;
    Step step;
    step.kind = StepKind::drop_index;
    step.index = IndexName::transfer_processed_messages;
    // Before the batch's transfers: every step of the batch drawn so far is still pending.
    pending_.insert(pending_.end() - static_cast<ptrdiff_t>(requested_ - first), std::move(step));
    return;
  }
  const std::string transfer = "t" + std::to_string(target + 1);
  FaultSpec fault = draw_fault(rng_, action, header_.config, transfer);
  // The faults that can park a message of their transfer, for the story's ending.
  // And those that return a delivery to its queue (a nack's failures do both).
  uint32_t parks = 0;
  uint32_t returns = 0;
  switch (fault.kind) {
    case FaultKind::publish_nack:
    case FaultKind::lose_confirm: parks = 1; break;
    case FaultKind::nack: parks = returns = static_cast<uint32_t>(fault.times); break;
    case FaultKind::crash:
    case FaultKind::drop_connection:
    case FaultKind::drop_ack:
    case FaultKind::pause: returns = 1; break;
    default: break;
  }
  parks_by_transfer_[target] += parks;
  returns_by_transfer_[target] += returns;
  // A quorum queue dead-letters a message returned more than its delivery limit times: every
  // limit + 1 returns aimed at a transfer may park one of its messages once more. (RabbitMQ's
  // default limit of 20 makes that nothing in almost every story; with
  // `--set broker.delivery_limit=1`, ten swarm seeds in 20,000 ended with a parked
  // Account.Debited and no round left to replay it.)
  uint32_t rounds = parks_by_transfer_[target];
  const int64_t limit = header_.config.broker_delivery_limit;
  if (header_.config.broker_queue_type == QueueType::quorum && limit > 0) {
    rounds +=
        static_cast<uint32_t>(returns_by_transfer_[target] / static_cast<uint64_t>(limit + 1));
  }
  rounds_max_ = std::max(rounds_max_, rounds);
  pending_.push_back(fault_step(std::move(fault)));
}

// The story's ending. With late duplicates: everything settles, virtual time jumps past the
// account inbox's DuplicateDetectionWindow and its cleanup, and old messages are published
// again. (Not past the processed_messages TTL: a day is longer than any redelivery plausibly
// takes, which is why transfer.processed_ttl_ms is a day by default.)
//
// Then the operator's last act: the world settles, every message parked in an error or
// dead-letter queue is replayed, and the world settles again. Without it, a message parked by
// a fault would hold its transfer for good, by design (scenario 37). A fault still armed can
// park the replay too (two lost confirms on one type of message), so there are as many rounds
// as one transfer has faults that can park one of its messages, and one more: the last round
// runs when that transfer's faults have stopped. Faults name their transfer and strike only its
// messages, so the transfers' parks happen side by side in the same rounds. (Counting them over
// the whole story made the rounds grow with the story, and every round sends every poison
// message parked so far, a duplicate the ledger key rejects, through its consumer again: the
// time of a story grew with the square of its transfers.)
void StoryGenerator::draw_ending() {
  if (!late_targets_.empty()) {
    Step settle;
    settle.kind = StepKind::run;
    pending_.push_back(std::move(settle));
    Step advance;
    advance.kind = StepKind::advance;
    advance.ms = header_.config.account_inbox_window_ms + 2 * kCleanupIntervalMs;
    pending_.push_back(std::move(advance));
    for (const uint32_t target : late_targets_) {
      const std::string transfer = "t" + std::to_string(target + 1);
      FaultSpec fault = draw_fault(rng_, FaultAction::late_duplicate, header_.config, transfer);
      fault.match.occurrence = 1;
      pending_.push_back(fault_step(std::move(fault)));
    }
  }
  for (uint32_t round = 0; round <= rounds_max_; ++round) {
    for (Step& step : operator_round()) pending_.push_back(std::move(step));
  }
  // Released, not only emptied: four bytes a transfer each, held through the story's ending.
  std::vector<uint32_t>().swap(late_targets_);
  std::vector<uint32_t>().swap(parks_by_transfer_);
  std::vector<uint32_t>().swap(returns_by_transfer_);
}

}  // namespace inboxsim
