#include "world/world.h"

#include <optional>
#include <utility>
#include <variant>

#include "domain/participants.h"
#include "domain/topology.h"
#include "kernel/assert.h"
#include "world/world_events.h"

namespace inboxsim {

// The ServiceHost of one instance: what its service object asks of the world, forwarded with
// the instance's index, so that a service never names an instance or reaches another one.
class World::InstanceHost final : public ServiceHost {
 public:
  InstanceHost(World& world, size_t instance) : world_(world), instance_(instance) {}

  int64_t now_ms() const override { return world_.now_ms(); }
  const InstanceNames& names() const override { return world_.processes_.at(instance_).names; }
  std::string next_message_id(const std::string& cause) override {
    // One counter for both services: two events that mint ids do not commute (either order
    // gives the other one the next number), so minting is in their footprints. Where nothing
    // reads the ids' order (MessageNames), only the mints of one cause are ordered.
    std::string id = "m-" + std::to_string(world_.next_message_number_++);
    if (world_.names_canonical_) world_.message_names_.minted(id, cause);
    world_.touch(world_.names_commute_ ? resource_of(ResourceClass::mint, 0, cause)
                                       : resource_id(ResourceClass::mint, 0));
    return id;
  }
  void crash_point(CrashPoint point, const Message* message) override {
    world_.crash_point(instance_, point, message);
  }
  Suspend between_steps(CrashPointSet points, const Message& message, uint64_t resume,
                        std::string next) override {
    return world_.between_steps(instance_, points, message, resume, std::move(next));
  }
  bool names_steps() const override { return world_.explorer_.enabled(); }
  Suspend lock_row(const std::string& key, uint64_t resume, std::string next) override {
    return world_.lock_row(instance_, key, resume, std::move(next));
  }
  void unlock_row(const std::string& key) override { world_.unlock_row(instance_, key); }
  Suspend sleep(int64_t ms, uint64_t resume, std::string next) override {
    return world_.sleep(instance_, ms, resume, std::move(next));
  }
  PublishResult publish_and_confirm(const MessagePtr& message) override {
    return world_.publish_and_confirm(instance_, message);
  }
  void relay_publish(const MessagePtr& message, int64_t outbox_seq) override {
    world_.relay_publish(instance_, message, outbox_seq);
  }
  void record(TraceEvent event) override { world_.record(std::move(event)); }
  void reached(Probe probe) override { world_.coverage_.reach(probe); }
  void committed(const CommitRecord& record) override { world_.committed(record); }
  void schedule_relay_poll() override { world_.schedule_relay_poll(instance_); }
  void schedule_account_outbox_sweep() override { world_.schedule_account_outbox_sweep(instance_); }
  ExternalSeenStore& seen_store() override {
    return world_.shared_of(world_.processes_.at(instance_).service).seen_store;
  }
  void ack_now() override { world_.ack_now(instance_); }
  void schedule_durability_poll() override { world_.schedule_durability_polls(); }
  void email_sent(TraceEvent event) override {
    const std::string transfer = event.transfer;
    world_.record(std::move(event));
    world_.checker_.on_email(transfer, world_.now_ms());
  }

 private:
  World& world_;
  size_t instance_;
};

namespace {

std::string db_path(const WorldOptions& options, std::string_view service) {
  if (options.db_dir.empty()) return {};
  return options.db_dir + "/" + options.db_prefix + std::string(service) + ".sqlite";
}

}  // namespace

World::World(const Scenario& scenario, const Config& config, const WorldOptions& options)
    : config_(config),
      recoverability_(config_),
      retention_(config_),
      accounts_(scenario.accounts),
      rng_(options.seed),
      trace_(options.keep_trace, options.hash_trace),
      coverage_(config_),
      publications_(options.keep_trace, options.spill_databases && options.db_dir.empty()),
      checker_(scenario.accounts, config.transfer_notifications,
               config.transfer_notifications && config.transfer_email != EmailSend::none),
      broker_(make_broker(config, [this](TraceEvent event) { record(std::move(event)); })),
      processes_(config_),
      explorer_(options.explore),
      faults_(options.spill_databases && options.db_dir.empty()
                  ? std::optional<size_t>(options.faults_in_memory_max)
                  : std::nullopt,
              explorer_, processes_, trace_) {
  keep_final_tables_ = options.keep_final_tables;
  names_canonical_ = options.explore.enabled &&
                     MessageNames::commute_in(scenario, config_, options.explore.schedule);
  names_commute_ = names_canonical_ && options.explore.names_commute;
  if (options.record_rows) rows_ = std::make_unique<RowRecorder>(options.row_listener);
  // Rows as footprints where an explorer reads footprints; SQLite has one pre-update hook per
  // connection, so a run that also records rows for a view footprints whole databases.
  const bool footprints = options.explore.enabled && options.explore.footprints_by_row &&
                          (options.explore.log_events || options.explore.stop_at_frontier);
  if (footprints && !rows_) sql_footprint_ = std::make_unique<SqlFootprint>(explorer_);
  add_instances(ServiceId::account, config_.account_instances, options);
  add_instances(ServiceId::transfer, config_.transfer_instances, options);
  processes_.first(ServiceId::account).account->open_accounts(accounts_);
  if (sql_footprint_) {
    // A key of the seen-set, as a row of the databases (contains reads it, but one resource with
    // one mode is enough: the seen-set inboxes read and then write the key they read).
    for (size_t service = 0; service < shared_.size(); ++service) {
      shared_[service].seen_store.listen([this, service](const std::string& key) {
        if (footprinting()) touch(resource_of(ResourceClass::seen_key, service, key));
      });
    }
  }
  if (rows_) rows_->commit_without_events();  // the opening balances are the opening rows
  add_consumers();
  checker_.on_violation = [this](const Violation& violation) {
    TraceEvent event;
    event.time_ms = violation.time_ms;
    event.kind = EventKind::violation;
    event.invariant = invariant_name(violation.invariant);
    event.detail = std::string(event.invariant) + ": " + violation.detail;
    record(std::move(event));
    explorer_.violation(coverage());
  };
}

World::~World() = default;

void World::add_instances(ServiceId service, int64_t count, const WorldOptions& options) {
  const bool account = service == ServiceId::account;
  const std::string_view base =
      account ? participant::account_service : participant::transfer_service;
  auto create = [this, account](SQLite::Database& db) {
    if (account) {
      AccountService::create_schema(db, config_);
    } else {
      TransferService::create_schema(db, config_);
    }
  };
  const std::string key =
      account ? AccountService::schema_key(config_) : TransferService::schema_key(config_);
  std::unique_ptr<SharedDatabase>& database = shared_of(service).database;
  if (options.spill_databases && options.db_dir.empty()) {
    database = SharedDatabase::temporary(key, create, count);
  } else {
    database = std::make_unique<SharedDatabase>(db_path(options, base), key, create, count);
  }
  for (int64_t number = 1; number <= count; ++number) {
    const size_t index = processes_.size();
    InstanceNames names;
    names.service = instance_participant(base, number, count);
    if (!account) {
      names.relay = instance_participant(participant::relay, number, count);
      names.notifications = instance_participant(participant::notifications, number, count);
    }
    Process& instance = processes_.add(service, number, names);
    instance.host = std::make_unique<InstanceHost>(*this, index);
    Connection& connection = database->connect();
    // The recorder is destroyed before the databases (world.h): its hooks leave a pooled
    // connection before the connection goes back to the pool.
    if (rows_) rows_->watch(connection.database().getHandle(), std::string(base));
    if (sql_footprint_) {
      sql_footprint_->watch(connection.database().getHandle(), static_cast<uint64_t>(service), key,
                            !names_commute_ ? std::span<const UnorderedTable>()
                            : account       ? AccountService::unordered_tables(config_)
                                            : TransferService::unordered_tables());
    }
    if (account) {
      instance.account = std::make_unique<AccountService>(*instance.host, config_, connection);
    } else {
      instance.transfer = std::make_unique<TransferService>(*instance.host, config_, connection);
    }
  }
}

// Queues first, then each instance's consumers in instance order: the broker hands a queue's
// messages round-robin to its consumers in the order they were added (docs/contract.md §8.1).
void World::add_consumers() {
  std::array<std::optional<size_t>, 3> queue_of;  // by QueueConsumer
  for (const QueueSpec* spec : declared_queues(config_)) {
    std::vector<std::string> patterns;
    for (const std::string_view binding : spec->bindings) {
      if (!binding.empty()) patterns.emplace_back(binding);
    }
    const size_t queue = broker_->declare_queue(spec->name, std::move(patterns));
    if (spec->error_queue) {
      INBOXSIM_ASSERT(spec->consumer == QueueConsumer::account);
      account_error_queue_ = broker_->declare_error_queue(queue);
    }
    queue_of[static_cast<size_t>(spec->consumer)] = queue;
  }
  const size_t account_queue = *queue_of[static_cast<size_t>(QueueConsumer::account)];
  const size_t transfer_queue = *queue_of[static_cast<size_t>(QueueConsumer::saga)];
  const std::optional<size_t> notifications_queue =
      queue_of[static_cast<size_t>(QueueConsumer::notifications)];
  for (size_t index = 0; index < processes_.size(); ++index) {
    const Process& instance = processes_.at(index);
    auto add = [&](size_t queue, ConsumerRole role, std::string_view participant) {
      processes_.add_consumer(index, broker_->add_consumer(participant, queue), role, participant);
    };
    if (instance.service == ServiceId::account) {
      add(account_queue, ConsumerRole::account, instance.names.service);
    } else {
      add(transfer_queue, ConsumerRole::saga, instance.names.service);
      if (notifications_queue) {
        add(*notifications_queue, ConsumerRole::notifications, instance.names.notifications);
      }
    }
  }
}

// An exploration has no clock: the order of events is its choice, not a draw.
int64_t World::latency_ms() {
  if (clockless()) return 0;
  return rng_.between(kLatencyMsMin, kLatencyMsMax);
}

// No draw at all when the work time is off, so that a run without it keeps the interleaving
// (and the trace) it had before handlers took time.
int64_t World::work_ms() {
  if (config_.work_ms_max == 0 || clockless()) return 0;
  return rng_.between(config_.work_ms_min, config_.work_ms_max);
}

// ---- scenario steps --------------------------------------------------------------------------

void World::mark_step(std::string detail) {
  record(instance_event(EventKind::step, now_ms(), {}, std::move(detail)));
}

void World::request_transfer(const TransferSpec& transfer) {
  // A client whose request finds transfer-service down retries until an instance is back.
  std::optional<size_t> target = processes_.available(ServiceId::transfer, now_ms());
  for (int64_t waited = 0; !target; ++waited) {
    INBOXSIM_ASSERT(waited < kEventsPerRunMax);
    if (!step_once()) {
      INBOXSIM_ASSERT(!halted_reason_.empty() || explorer_.stopped());
      return;  // the run has stopped at its bound: no client is served any more
    }
    target = processes_.available(ServiceId::transfer, now_ms());
  }
  const Process& instance = processes_.at(*target);
  TraceEvent event;
  event.time_ms = now_ms();
  event.kind = EventKind::request;
  event.service = participant::client;
  event.target = instance.names.service;
  event.transfer = transfer.id;
  event.amount = transfer.amount;
  event.detail = transfer.from + " -> " + transfer.to;
  record(std::move(event));
  checker_.register_transfer(transfer.id, transfer.amount);
  if (keep_final_tables_) transfer_amounts_[transfer.id] = transfer.amount;
  instance.transfer->request(transfer);
}

void World::arm_fault(const FaultSpec& fault) {
  if (fault.kind == FaultKind::drop_connection && !fault.has_match) {
    INBOXSIM_ASSERT(fault.service.has_value());
    for (size_t consumer = 0; consumer < processes_.consumer_count(); ++consumer) {
      const Process& instance = processes_.at(processes_.consumer(consumer).instance);
      if (instance.service != *fault.service) continue;
      if (fault.instance && *fault.instance != instance.number) continue;
      if (broker_->connected(consumer)) reset_connection(consumer, "connection dropped");
    }
    return;
  }
  if (fault.kind == FaultKind::duplicate) {
    // "Publish a duplicate by hand": if the message is already out there, copy it now.
    FaultSpec remaining = fault;
    for (const MessagePtr& published : publications_.candidates(fault.match)) {
      if (!match_selects(fault.match, *published)) continue;
      if (remaining.match.occurrence == 1) {
        fire_duplicate(published, fault.copied_by);
        return;
      }
      --remaining.match.occurrence;
    }
    faults_.arm(remaining);
    return;
  }
  faults_.arm(fault);
}

std::optional<FaultSpec> World::take_fault(FaultKind kind, ServiceId service, int64_t instance,
                                           const Message& message) {
  return faults_.take(FaultPoint{kind, service, instance, std::nullopt, &message},
                      [this] { return choose(2); });
}

std::optional<FaultSpec> World::take_fault_at(FaultKind kind, ServiceId service, int64_t instance,
                                              CrashPoint point, const Message* message) {
  return faults_.take(FaultPoint{kind, service, instance, point, message},
                      [this] { return choose(2); });
}

void World::drop_index(IndexName index) {
  const Process& account = processes_.first(ServiceId::account);
  std::optional<std::vector<std::string>> removed = account.account->drop_index(index);
  const bool on_account = removed.has_value();
  const Process& transfer = processes_.first(ServiceId::transfer);
  if (!on_account) removed = transfer.transfer->drop_index(index);
  INBOXSIM_ASSERT(removed.has_value());
  // Dropped twice, the first drop's statements are the ones that put it back.
  if (!removed->empty()) dropped_[index] = std::move(*removed);
  // The first instance's connection runs the DROP INDEX; the database is the service's.
  // An inbox without inbox_state (Marten's) names what the step drops instead.
  const std::string_view key_words =
      index == IndexName::account_inbox_state
          ? account_inbox_kind(config_.account_inbox).dropped_key_words
          : std::string_view();
  TraceEvent event =
      instance_event(EventKind::index_dropped, now_ms(),
                     on_account ? account.names.service : transfer.names.service,
                     key_words.empty() ? std::string(index_name(index)) : std::string(key_words));
  record(std::move(event));
}

bool World::step_once() {
  if (explorer_.enabled() && !explorer_.stopped() && halted_reason_.empty()) take_due_actions();
  if (scheduler_.empty() || !halted_reason_.empty() || explorer_.stopped()) return false;
  if (explorer_.enabled()) return explored_step();
  if (consumer_timeout_due(scheduler_.next_time_ms())) return true;
  const Job job = scheduler_.pop();
  maybe_cleanup();
  dispatch(job);
  return true;
}

bool World::run_until_quiescent() {
  int64_t processed = 0;
  while (halted_reason_.empty() && !explorer_.stopped() &&
         (!scheduler_.empty() || expire_when_quiescent())) {
    if (processed++ >= kEventsPerRunMax) {
      quiescent_ = false;
      return false;
    }
    step_once();
  }
  quiescent_ = halted_reason_.empty() && !explorer_.stopped();
  return quiescent_;
}

void World::run_for(int64_t ms) {
  INBOXSIM_ASSERT(ms >= 0);
  const int64_t target = now_ms() + ms;
  int64_t processed = 0;
  while (halted_reason_.empty() && !explorer_.stopped()) {
    if (scheduler_.empty() || scheduler_.next_time_ms() > target) {
      // Nothing else due: a consumer timeout inside the run still closes its channel (and
      // schedules the reconnect, which may be due too).
      if (consumer_timeout_due(target)) continue;
      break;
    }
    if (processed++ >= kEventsPerRunMax) {
      // A livelock inside a timed run: leave the rest for the final run, whose bound
      // reports it as a termination violation.
      quiescent_ = false;
      return;
    }
    step_once();
  }
  // The clock stays where the run stopped.
  if (!halted_reason_.empty() || explorer_.stopped()) return;
  // A playground's hand action taken inside this run (an `advance` at a choice position the
  // run passed) may have moved the clock past the target already.
  scheduler_.advance_to(std::max(target, now_ms()));
  maybe_cleanup();
}

void World::advance(int64_t ms) {
  TraceEvent event = instance_event(EventKind::advance, now_ms(), {},
                                    "virtual time jumps " + std::to_string(ms) + " ms");
  event.duration_ms = ms;
  record(std::move(event));
  if (clockless()) {
    // No clock decides the order here: the clock jumps, and every pending event may still
    // happen next (retention windows measure from it).
    scheduler_.jump_to(now_ms() + ms);
    maybe_cleanup();
    return;
  }
  run_for(ms);
}

// ---- the event loop --------------------------------------------------------------------------

size_t World::instance_of(const Job& job) const {
  const std::optional<size_t> consumer = job.on_consumer();
  return consumer ? processes_.consumer(*consumer).instance : job.instance;
}

// What an event reads or changes of its process, its loops and its database, for the explorer's
// footprint (kernel/footprint.h).
void World::touch_for(const Job& job) {
  if (touch_voidness(job)) return;
  const JobKind kind = job.kind();
  const size_t instance = instance_of(job);
  // Every event of an instance reads its process (up, incarnation, pause); what changes it
  // writes it: these jobs, and a crash or a pause where it strikes (crashed, pause). Of the
  // process a reconnect changes only the heartbeat's phase (Processes::connected), which only
  // a pause's heartbeat reads: without a clock there is neither, and it only looks whether
  // its process is up.
  const bool process = kind == JobKind::restart || (kind == JobKind::reconnect && !clockless()) ||
                       kind == JobKind::heartbeat_timeout || kind == JobKind::pause_end;
  touch_instance(instance, process ? Access::write : Access::read);
  // A loop's turn changes its flag, and the relay's its memory of what awaits a confirm. A
  // confirm only takes its own row out of that memory: two confirms commute, a poll that reads
  // no full batch commutes with them (on_relay_poll), and a nack (which takes a row out and
  // schedules a poll) meets them all.
  switch (kind) {
    case JobKind::confirm:
      touch_publish_channel(instance, Access::read);
      touch_loop(instance, Loop::relay_awaiting, Access::change);
      touch_awaited(instance, std::get<job::Confirm>(job.payload).outbox_seq);
      break;
    case JobKind::relay_poll: touch_loop(instance, Loop::relay); break;  // and on_relay_poll
    case JobKind::publish_nack:
      touch_publish_channel(instance, Access::read);
      touch_loop(instance, Loop::relay);
      touch_loop(instance, Loop::relay_awaiting);
      break;
    case JobKind::account_sweep: touch_loop(instance, Loop::sweep); break;
    case JobKind::durability_poll: touch_loop(instance, Loop::durability); break;
    default: break;
  }
  // Every event that runs service code may read or change the service's database: its rows
  // say which (SqlFootprint), or else the database is one resource.
  if (!sql_footprint_ && kind != JobKind::ack && kind != JobKind::nack &&
      kind != JobKind::reconnect) {
    touch_database(processes_.at(instance).service);
  }
}

// Each kind's handler sees the job's own payload (and the job, where it needs whose it is).
void World::dispatch(const Job& job) {
  if (footprinting()) touch_for(job);
  if (deferred_by_pause(job)) return;
  std::visit(job::Overloaded{
                 [&](const job::Deliver& deliver) { on_deliver(deliver); },
                 [&](const job::Ack& ack) { on_ack(ack); },
                 [&](const job::Nack& nack) { on_nack(nack); },
                 [&](const job::Confirm& confirm) { on_confirm(job, confirm); },
                 [&](const job::PublishNack& nack) { on_publish_nack(job, nack); },
                 [&](const job::RelayPoll&) { on_relay_poll(job); },
                 [&](const job::AccountSweep&) { on_account_sweep(job); },
                 [&](const job::Restart&) { on_restart(job.instance); },
                 [&](const job::Reconnect& reconnect) { on_reconnect(job.instance, reconnect); },
                 [&](const job::Resume& resume) {
                   if (!handlers_.contains(resume.handler)) return;
                   send_in_progress(resume.handler);
                   run_handler(resume.handler);
                 },
                 [&](const job::HeartbeatTimeout&) { on_heartbeat_timeout(job); },
                 [&](const job::PauseEnd&) { on_pause_end(job.instance); },
                 [&](const job::Retry& retry) { on_retry(retry.handler); },
                 [&](const job::DurabilityPoll&) { on_durability_poll(job); },
                 [&](const job::BrokerTimer& timer) { on_broker_timer(timer); },
             },
             job.payload);
}

// A paused process does nothing: what reaches it waits in its socket until the pause ends, and
// its own timers fire late. The broker's side (acks arriving, a heartbeat timing out) goes on.
bool World::deferred_by_pause(const Job& job) {
  switch (job.kind()) {
    case JobKind::ack:
    case JobKind::nack:
    case JobKind::restart:
    case JobKind::heartbeat_timeout:
    case JobKind::broker_timer:
    case JobKind::pause_end: return false;
    default: break;
  }
  const Process& instance = processes_.at(instance_of(job));
  if (!instance.paused(now_ms())) return false;
  schedule(instance.paused_until_ms, job);
  return true;
}

void World::redrive(const std::string& queue_name) {
  if (queue_name == "all") {
    for (const std::string& name : broker_->parking_queues()) redrive(name);
    return;
  }
  const std::optional<size_t> queue = broker_->find_queue(queue_name);
  if (!queue) {
    mark_step("(" + queue_name + " does not exist in this configuration: nothing to redrive)");
    return;
  }
  for (const MessagePtr& message : broker_->redrive(*queue, now_ms())) {
    TraceEvent event = event_about(EventKind::redrive, now_ms(), participant::operator_, *message);
    event.target = participant::broker;
    event.detail = "moved from " + queue_name + " back to its queue, as a new message";
    record(std::move(event));
  }
  pump();
}

// ---- observation -----------------------------------------------------------------------------

void World::record(TraceEvent event) {
  stats_.count(event);
  coverage_.count(event);
  if (rows_) rows_->before_event(*broker_, event);
  trace_.record(std::move(event));
  if (rows_) rows_->after_event();
}

void World::committed(const CommitRecord& record_in) {
  stats_.count_transaction();
  coverage_.count_commit(record_in);
  if (rows_ && record_in.events.empty() && !cleaning_) rows_->commit_without_events();
  for (const TraceEvent& event : record_in.events) record(event);
  checker_.on_commit(record_in, now_ms());
  if (record_in.service != ServiceId::transfer || !record_in.outbox_written) return;
  // Every instance's relay polls the one outbox; each finds the new row on its next poll.
  for (size_t index = 0; index < processes_.size(); ++index) {
    if (processes_.at(index).service == ServiceId::transfer) schedule_relay_poll(index);
  }
}

}  // namespace inboxsim
