#include "world/world.h"

#include <utility>

#include "domain/participants.h"
#include "kernel/assert.h"
#include "world/world_events.h"

namespace inboxsim {

// The ServiceHost of one instance: what its service object asks of the world, forwarded with
// the instance's index, so that a service never names an instance or reaches another one.
class World::InstanceHost final : public ServiceHost {
 public:
  InstanceHost(World& world, size_t instance) : world_(world), instance_(instance) {}

  int64_t now_ms() const override { return world_.now_ms(); }
  const InstanceNames& names() const override { return world_.instances_[instance_].names; }
  std::string next_message_id() override {
    // One counter for both services: two events that mint ids do not commute (either order
    // gives the other one the next number), so minting is in their footprints.
    world_.touch(World::kMintResource);
    return "m-" + std::to_string(world_.next_message_number_++);
  }
  void crash_point(CrashPoint point, const Message* message) override {
    world_.crash_point(instance_, point, message);
  }
  Suspend between_steps(CrashPointSet points, const Message& message, uint64_t resume,
                        std::string next) override {
    return world_.between_steps(instance_, points, message, resume, std::move(next));
  }
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
    return world_.seen_stores_[static_cast<size_t>(world_.instances_[instance_].service)];
  }
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
      accounts_(scenario.accounts),
      rng_(options.seed),
      trace_(options.keep_trace, options.hash_trace),
      coverage_(config_),
      publications_(options.keep_trace, options.spill_databases && options.db_dir.empty()),
      checker_(scenario.accounts, config.transfer_notifications,
               config.transfer_notifications && config.transfer_email != EmailSend::none),
      broker_([this](TraceEvent event) { record(std::move(event)); }, config.broker_prefetch,
              config.broker_delivery_limit, config.broker_queue_type == QueueType::quorum,
              config.broker_dead_letter == DeadLetter::dlx),
      faults_(options.spill_databases && options.db_dir.empty()
                  ? std::optional<size_t>(options.faults_in_memory_max)
                  : std::nullopt),
      explorer_(options.explore) {
  keep_final_tables_ = options.keep_final_tables;
  if (options.record_rows) rows_ = std::make_unique<RowRecorder>(options.row_listener);
  INBOXSIM_ASSERT(config_.account_instances >= 1 && config_.account_instances <= kInstancesMax);
  INBOXSIM_ASSERT(config_.transfer_instances >= 1 && config_.transfer_instances <= kInstancesMax);
  // Every instance's connection is opened before any runs, so the vector never moves them.
  instances_.reserve(static_cast<size_t>(config_.account_instances + config_.transfer_instances));
  add_instances(ServiceId::account, config_.account_instances, options);
  add_instances(ServiceId::transfer, config_.transfer_instances, options);
  first_instance(ServiceId::account).account->open_accounts(accounts_);
  if (rows_) rows_->commit_without_events();  // the opening balances are the opening rows
  add_consumers();
  checker_.on_violation = [this](const Violation& violation) {
    TraceEvent event;
    event.time_ms = violation.time_ms;
    event.kind = EventKind::violation;
    event.detail = std::string(invariant_name(violation.invariant)) + ": " + violation.detail;
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
  auto& database = databases_[static_cast<size_t>(service)];
  if (options.spill_databases && options.db_dir.empty()) {
    database = SharedDatabase::temporary(key, create, count);
  } else {
    database = std::make_unique<SharedDatabase>(db_path(options, base), key, create, count);
  }
  for (int64_t number = 1; number <= count; ++number) {
    const size_t index = instances_.size();
    Instance& instance = instances_.emplace_back();
    instance.service = service;
    instance.number = number;
    instance.names.service = instance_participant(base, number, count);
    if (!account) {
      instance.names.relay = instance_participant(participant::relay, number, count);
      instance.names.notifications =
          instance_participant(participant::notifications, number, count);
    }
    instance.host = std::make_unique<InstanceHost>(*this, index);
    Connection& connection = database->connect();
    // The recorder is destroyed before the databases (world.h): its hooks leave a pooled
    // connection before the connection goes back to the pool.
    if (rows_) rows_->watch(connection.database().getHandle(), std::string(base));
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
  const size_t account_queue = broker_.declare_queue("account-service", {"transfers.#"});
  // MassTransit's error queue for the endpoint; transfer-service's handler nacks instead.
  account_error_queue_ = broker_.declare_error_queue(account_queue);
  const size_t transfer_queue = broker_.declare_queue("transfer-service", {"accounts.#"});
  std::optional<size_t> notifications_queue;
  if (config_.transfer_notifications) {
    notifications_queue =
        broker_.declare_queue("transfer-service.notifications",
                              {"accounts.account.credited", "accounts.account.refunded"});
  }
  for (size_t index = 0; index < instances_.size(); ++index) {
    Instance& instance = instances_[index];
    auto add = [&](size_t queue, ConsumerRole role, std::string_view participant) {
      const size_t consumer = broker_.add_consumer(participant, queue);
      INBOXSIM_ASSERT(consumer == consumers_.size());
      consumers_.push_back(ConsumerInfo{index, role, participant});
      instance.consumers.push_back(consumer);
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

World::Instance& World::first_instance(ServiceId service) {
  for (Instance& instance : instances_) {
    if (instance.service == service) return instance;
  }
  INBOXSIM_ASSERT(false);
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

template <typename Fn>
void World::guarded(size_t instance, Fn&& fn) {
  try {
    fn();
  } catch (const ServiceCrash&) {
    crashed(instance);
  }
}

// ---- scenario steps --------------------------------------------------------------------------

void World::mark_step(std::string detail) {
  record(instance_event(EventKind::step, now_ms(), {}, std::move(detail)));
}

// An instance that is up and not paused, taking turns (a load balancer's round robin).
std::optional<size_t> World::available_instance(ServiceId service) {
  const size_t count = instances_.size();
  for (size_t tried = 0; tried < count; ++tried) {
    const size_t index = (next_request_instance_ + tried) % count;
    const Instance& instance = instances_[index];
    if (instance.service != service || !instance.up || paused(instance)) continue;
    next_request_instance_ = (index + 1) % count;
    return index;
  }
  return std::nullopt;
}

void World::request_transfer(const TransferSpec& transfer) {
  // A client whose request finds transfer-service down retries until an instance is back.
  std::optional<size_t> target = available_instance(ServiceId::transfer);
  for (int64_t waited = 0; !target; ++waited) {
    INBOXSIM_ASSERT(waited < kEventsPerRunMax);
    if (!step_once()) {
      INBOXSIM_ASSERT(!halted_reason_.empty() || explorer_.stopped());
      return;  // the run has stopped at its bound: no client is served any more
    }
    target = available_instance(ServiceId::transfer);
  }
  Instance& instance = instances_[*target];
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
    for (size_t consumer = 0; consumer < consumers_.size(); ++consumer) {
      const Instance& instance = instances_[consumers_[consumer].instance];
      if (instance.service != *fault.service) continue;
      if (fault.instance && *fault.instance != instance.number) continue;
      if (broker_.connected(consumer)) reset_connection(consumer, "connection dropped");
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

void World::drop_index(IndexName index) {
  Instance& account = first_instance(ServiceId::account);
  std::optional<std::vector<std::string>> removed = account.account->drop_index(index);
  const bool on_account = removed.has_value();
  Instance& transfer = first_instance(ServiceId::transfer);
  if (!on_account) removed = transfer.transfer->drop_index(index);
  INBOXSIM_ASSERT(removed.has_value());
  // Dropped twice, the first drop's statements are the ones that put it back.
  if (!removed->empty()) dropped_[index] = std::move(*removed);
  // The first instance's connection runs the DROP INDEX; the database is the service's.
  // The Marten inbox has no inbox_state: what goes there is its document's primary key.
  const bool marten_key =
      index == IndexName::account_inbox_state && config_.account_inbox == AccountInbox::marten;
  TraceEvent event =
      instance_event(EventKind::index_dropped, now_ms(),
                     on_account ? account.names.service : transfer.names.service,
                     marten_key ? std::string("inbox_documents' primary key (message_id)")
                                : std::string(index_name(index)));
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
  while (!scheduler_.empty() && halted_reason_.empty() && !explorer_.stopped()) {
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
  event.amount = ms;
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

void World::dispatch(const Job& job) {
  if (footprinting()) {
    const bool on_consumer =
        job.kind == JobKind::deliver || job.kind == JobKind::ack || job.kind == JobKind::nack;
    const size_t instance = on_consumer ? consumers_[job.consumer].instance : job.instance;
    touch_instance(instance);
    // Every event that runs service code may read or change the service's database, its row
    // locks and its seen-set (all one resource here).
    if (job.kind != JobKind::ack && job.kind != JobKind::nack && job.kind != JobKind::reconnect) {
      touch_database(instances_[instance].service);
    }
  }
  if (deferred_by_pause(job)) return;
  switch (job.kind) {
    case JobKind::deliver: on_deliver(job); return;
    case JobKind::ack: on_ack(job, false); return;
    case JobKind::nack: on_ack(job, true); return;
    case JobKind::confirm: on_confirm(job); return;
    case JobKind::publish_nack: on_publish_nack(job); return;
    case JobKind::relay_poll: on_relay_poll(job); return;
    case JobKind::account_sweep: on_account_sweep(job); return;
    case JobKind::restart: on_restart(job.instance); return;
    case JobKind::reconnect: on_reconnect(job); return;
    case JobKind::resume:
      if (handlers_.count(job.handler) > 0) run_handler(job.handler);
      return;
    case JobKind::heartbeat_timeout: on_heartbeat_timeout(job); return;
    case JobKind::pause_end: on_pause_end(job.instance); return;
    case JobKind::retry: on_retry(job.handler); return;
  }
  INBOXSIM_ASSERT(false);
}

// A paused process does nothing: what reaches it waits in its socket until the pause ends, and
// its own timers fire late. The broker's side (acks arriving, a heartbeat timing out) goes on.
bool World::deferred_by_pause(const Job& job) {
  switch (job.kind) {
    case JobKind::ack:
    case JobKind::nack:
    case JobKind::restart:
    case JobKind::heartbeat_timeout:
    case JobKind::pause_end: return false;
    default: break;
  }
  const size_t instance_index =
      job.kind == JobKind::deliver ? consumers_[job.consumer].instance : job.instance;
  const Instance& instance = instances_[instance_index];
  if (!paused(instance)) return false;
  schedule(instance.paused_until_ms, job);
  return true;
}

void World::on_deliver(const Job& job) {
  auto found = in_flight_.find(job.delivery_id);
  INBOXSIM_ASSERT(found != in_flight_.end());
  const Delivery delivery = std::move(found->second);
  in_flight_.erase(found);
  // A delivery still on the wire when its channel closed was requeued then; this copy is void.
  if (!broker_.channel_open(delivery.consumer, delivery.channel)) return;
  const ConsumerInfo& consumer = consumers_[delivery.consumer];
  const Instance& instance = instances_[consumer.instance];
  INBOXSIM_ASSERT(instance.up);
  record(delivery_event(EventKind::deliver, now_ms(), participant::broker, consumer.participant,
                        delivery));
  const bool classic = config_.broker_queue_type == QueueType::classic;
  if (classic && delivery.attempts + 1 >= kDeliveriesPerMessageMax) {
    halted_reason_ = "message " + delivery.message->message_id + " (" +
                     std::string(message_type_name(delivery.message->type)) + " " +
                     delivery.message->transfer + ") was delivered " +
                     std::to_string(delivery.attempts + 1) + " times from " +
                     std::string(consumer.participant) +
                     "'s classic queue, which has no delivery limit: a poison message loops, and "
                     "the run stopped at its bound";
    return;
  }
  const Message& message = *delivery.message;
  if (take_fault(FaultKind::drop_connection, instance.service, instance.number, message)) {
    reset_connection(delivery.consumer, "connection dropped");
    return;
  }
  start_handler(consumer.instance, delivery, 0);
}

// Starts attempt `attempt` of handling a delivery. The `nack` fault faults the attempt before
// the handler gets anywhere, as a busy database would, or a message the handler cannot process
// (a poison message: the fault's cause says which the story means).
void World::start_handler(size_t instance_index, const Delivery& delivery, size_t attempt) {
  Instance& instance = instances_[instance_index];
  const uint64_t id = next_handler_id_++;
  ActiveHandler handler;
  handler.instance = instance_index;
  handler.delivery = delivery;
  handler.attempt = attempt;
  if (const std::optional<FaultSpec> fault =
          take_fault(FaultKind::nack, instance.service, instance.number, *delivery.message)) {
    handler_faulted(std::move(handler), fault->cause == FailureCause::poison
                                            ? "the handler throws on this message (poison)"
                                            : "transient failure (database busy)");
    return;
  }
  switch (consumers_[delivery.consumer].role) {
    case ConsumerRole::account: handler.task = instance.account->handle(delivery.message); break;
    case ConsumerRole::saga:
      handler.task = instance.transfer->handle(TransferConsumer::saga, delivery.message);
      break;
    case ConsumerRole::notifications:
      handler.task = instance.transfer->handle(TransferConsumer::notifications, delivery.message);
      break;
  }
  handlers_.emplace(id, std::move(handler));
  run_handler(id);
}

// Whether a handler is a MassTransit consumer whose channel has closed: RabbitMqBasicConsumer's
// HandleChannelShutdown cancels every pending receive context (ConsumerAgent
// .CancelPendingConsumers), so the handler stops at its next await. Wolverine's listener
// (account.inbox = marten) and amqplib (transfer-service) do not cancel a running handler.
bool World::cancelled_by_close(const ActiveHandler& handler) const {
  return consumers_[handler.delivery.consumer].role == ConsumerRole::account &&
         config_.account_inbox != AccountInbox::marten &&
         !broker_.channel_open(handler.delivery.consumer, handler.delivery.channel);
}

// A cancelled handler rolls back (no transaction spans a step, so nothing is open), gives up
// its row locks, is not retried, and moves nothing to the _error queue: the rescue pipe ignores
// OperationCanceledException, and the broker requeued the delivery when the channel closed.
void World::cancel_handler(uint64_t id) {
  const auto found = handlers_.find(id);
  INBOXSIM_ASSERT(found != handlers_.end());
  ActiveHandler handler = std::move(found->second);
  handlers_.erase(found);
  release_locks(handler.instance, id);
  const Delivery& delivery = handler.delivery;
  TraceEvent event = event_about(EventKind::consumer_fault, now_ms(),
                                 consumers_[delivery.consumer].participant, *delivery.message);
  event.detail =
      "cancelled: its channel closed, so MassTransit cancelled the consume context; rolled back, "
      "locks released, not retried, nothing moved to the _error queue (the broker requeued the "
      "message)";
  record(std::move(event));
}

// Runs a handler until its next suspension; a handler that ended is settled at once.
void World::run_handler(uint64_t id) {
  const auto found = handlers_.find(id);
  INBOXSIM_ASSERT(found != handlers_.end());
  if (cancelled_by_close(found->second)) {
    cancel_handler(id);
    return;
  }
  INBOXSIM_ASSERT(current_handler_ == 0);
  current_handler_ = id;
  const bool ended = found->second.task.resume();
  current_handler_ = 0;
  if (ended) finish_handler(id);
}

void World::finish_handler(uint64_t id) {
  const auto found = handlers_.find(id);
  INBOXSIM_ASSERT(found != handlers_.end());
  ActiveHandler handler = std::move(found->second);
  handlers_.erase(found);
  Outcome outcome = Outcome::ack;
  try {
    outcome = handler.task.result();
  } catch (const ServiceCrash&) {
    release_locks(handler.instance, id);
    crashed(handler.instance);
    return;
  } catch (const ConsumerFault& fault) {
    release_locks(handler.instance, id);
    handler_faulted(std::move(handler), fault.reason, fault.cancelled);
    return;
  }
  // A handler that ends normally has committed every pass and released its locks already.
  release_locks(handler.instance, id);
  if (outcome == Outcome::ack) {
    send_ack(handler);
  } else {
    send_nack(handler.delivery, "handler asked for a retry");
  }
}

// A handler faulted (its transaction rolled back). transfer-service's handler nacks, and the
// broker requeues. account-service runs MassTransit's UseMessageRetry (account.retry): the
// delivery is handled again in process after each wait, and once the retries are spent the
// message is moved to account-service_error and acked: the broker never sees it again.
void World::handler_faulted(ActiveHandler handler, std::string_view reason, bool cancelled) {
  const Delivery& delivery = handler.delivery;
  const bool account = consumers_[delivery.consumer].role == ConsumerRole::account;
  TraceEvent event = event_about(EventKind::consumer_fault, now_ms(),
                                 consumers_[delivery.consumer].participant, *delivery.message);
  event.detail = std::string(reason) + "; rolled back" + (account ? "" : ", will nack");
  record(std::move(event));
  if (!account) {
    send_nack(delivery, std::string(reason));
    return;
  }
  // Wolverine's listener (account.inbox = marten) with no account.retry keeps its default
  // failure rules: three attempts, then the error queue (JasperFx/wolverine 6.29.2,
  // ErrorHandling/FailureRuleCollection.cs, MaximumAttempts ?? 3). Its attempts requeue; here
  // they run again in process, as account.retry does.
  static const std::vector<int64_t> kWolverineAttemptWaitsMs = {0, 0};
  const bool wolverine_default = config_.account_inbox == AccountInbox::marten &&
                                 config_.account_retry.kind == RetryPolicy::Kind::none;
  const std::vector<int64_t>& waits =
      wolverine_default ? kWolverineAttemptWaitsMs : config_.account_retry.intervals_ms;
  if (handler.attempt >= waits.size()) {
    if (cancelled) {
      // The rescue pipe ignores OperationCanceledException (ReceivePipeConfiguration.cs): no
      // _error queue; the receive lock nacks the delivery with requeue.
      send_nack(delivery, std::string(reason));
      return;
    }
    move_to_error_queue(handler, reason);
    return;
  }
  const int64_t wait_ms = waits[handler.attempt];
  TraceEvent retry =
      delivery_event(EventKind::retry, now_ms(), consumers_[delivery.consumer].participant,
                     participant::broker, delivery);
  retry.target = {};
  retry.detail = "retry " + std::to_string(handler.attempt + 1) + " of " +
                 std::to_string(waits.size()) + " in " + std::to_string(wait_ms) +
                 (wolverine_default
                      ? " ms (Wolverine's default failure rules: 3 attempts)"
                      : " ms (UseMessageRetry, in process: the broker still holds the delivery)");
  record(std::move(retry));
  const uint64_t id = next_handler_id_++;
  Job job = Job::of_instance(JobKind::retry, handler.instance);
  job.handler = id;
  ++handler.attempt;
  handler.task = Task<Outcome>();
  handler.resume = 0;
  handlers_.emplace(id, std::move(handler));
  schedule(now_ms() + wait_ms, job);
}

void World::on_retry(uint64_t id) {
  const auto found = handlers_.find(id);
  if (found == handlers_.end()) return;  // the instance died while it waited
  // RetryFilter's Task.Delay waits on the consume context's token (RetryFilter.cs).
  if (cancelled_by_close(found->second)) {
    cancel_handler(id);
    return;
  }
  const ActiveHandler waiting = std::move(found->second);
  handlers_.erase(found);
  start_handler(waiting.instance, waiting.delivery, waiting.attempt);
}

// MassTransit's error transport: the faulted message goes to <queue>_error, then the delivery
// is acked (the ack may still be lost, or void on a closed channel, like any ack).
void World::move_to_error_queue(const ActiveHandler& handler, std::string_view reason) {
  const Delivery& delivery = handler.delivery;
  const std::string& queue = broker_.move_to_error_queue(account_error_queue_, delivery.message);
  TraceEvent event =
      delivery_event(EventKind::error_queued, now_ms(), consumers_[delivery.consumer].participant,
                     participant::broker, delivery);
  event.detail = "moved to " + queue + " after " + std::to_string(handler.attempt + 1) +
                 " attempt(s) (" + std::string(reason) + "); the delivery is acked";
  record(std::move(event));
  send_ack(handler);
}

// ---- acks and nacks --------------------------------------------------------------------------

// A handler whose connection closed while it ran (a zombie consumer) acks into the void: the
// client library refuses to ack on a closed channel, and the broker has already requeued the
// message. Returns true (and says so) when that is the case.
bool World::ack_void(const Delivery& delivery, std::string_view verb) {
  if (broker_.channel_open(delivery.consumer, delivery.channel)) return false;
  TraceEvent event =
      delivery_event(EventKind::ack_void, now_ms(), consumers_[delivery.consumer].participant,
                     participant::broker, delivery);
  event.detail = std::string(verb) +
                 " on a closed channel: ignored; the broker requeued the message when the "
                 "connection closed";
  record(std::move(event));
  return true;
}

void World::send_ack(const ActiveHandler& handler) {
  const Delivery& delivery = handler.delivery;
  if (ack_void(delivery, "ack")) return;
  const Instance& instance = instances_[handler.instance];
  if (take_fault(FaultKind::drop_ack, instance.service, instance.number, *delivery.message)) {
    TraceEvent event =
        delivery_event(EventKind::ack_lost, now_ms(), consumers_[delivery.consumer].participant,
                       participant::broker, delivery);
    event.detail = "ack lost on the wire";
    record(std::move(event));
    reset_connection(delivery.consumer, "connection reset after a lost ack");
    return;
  }
  Job job;
  job.kind = JobKind::ack;
  job.consumer = delivery.consumer;
  job.channel = delivery.channel;
  job.delivery_tag = delivery.delivery_tag;
  schedule(now_ms() + latency_ms(), job);
}

void World::send_nack(const Delivery& delivery, std::string reason) {
  if (ack_void(delivery, "nack")) return;
  TraceEvent event =
      delivery_event(EventKind::nack, now_ms(), consumers_[delivery.consumer].participant,
                     participant::broker, delivery);
  event.detail = std::move(reason);
  record(std::move(event));
  Job job;
  job.kind = JobKind::nack;
  job.consumer = delivery.consumer;
  job.channel = delivery.channel;
  job.delivery_tag = delivery.delivery_tag;
  schedule(now_ms() + latency_ms(), job);
}

void World::on_ack(const Job& job, bool is_nack) {
  const std::string_view consumer = consumers_[job.consumer].participant;
  if (is_nack) {
    broker_.nack(job.consumer, job.channel, job.delivery_tag, now_ms());
  } else if (const auto settled = broker_.ack(job.consumer, job.channel, job.delivery_tag)) {
    record(delivery_event(EventKind::ack, now_ms(), consumer, participant::broker, *settled));
  } else {
    TraceEvent event =
        instance_event(EventKind::ack_lost, now_ms(), consumer,
                       "ack for tag " + std::to_string(job.delivery_tag) +
                           " arrived on a closed channel; the message was already requeued");
    event.target = participant::broker;
    record(std::move(event));
  }
  pump();
}

void World::on_confirm(const Job& job) {
  const auto found = awaiting_confirm_.find({job.instance, job.outbox_seq});
  if (found == awaiting_confirm_.end()) return;
  Instance& instance = instances_[job.instance];
  // A confirm on a channel that has closed since is never seen.
  if (instance.publish_channel != job.channel) return;
  const MessagePtr message = found->second;
  awaiting_confirm_.erase(found);
  if (instance.incarnation != job.incarnation) return;
  TraceEvent event = event_about(EventKind::confirm, now_ms(), participant::broker, *message);
  event.target = instance.names.relay;
  event.detail = "outbox row " + std::to_string(job.outbox_seq);
  record(std::move(event));
  guarded(job.instance, [&] { instance.transfer->relay_confirmed(job.outbox_seq); });
}

void World::on_relay_poll(const Job& job) {
  Instance& instance = instances_[job.instance];
  if (instance.incarnation != job.incarnation) return;
  instance.relay_poll_scheduled = false;
  guarded(job.instance, [&] { instance.transfer->relay_poll(); });
}

void World::on_account_sweep(const Job& job) {
  Instance& instance = instances_[job.instance];
  if (instance.incarnation != job.incarnation) return;
  instance.sweep_scheduled = false;
  guarded(job.instance, [&] {
    if (!instance.account->sweep_outbox()) {
      // A publish not confirmed: the delivery loop tries again once reconnected.
      instance.sweep_scheduled = true;
      schedule(now_ms() + kReconnectMs, job);
    }
  });
}

// ---- processes: restarts, pauses, crashes, connections ---------------------------------------

void World::on_restart(size_t index) {
  Instance& instance = instances_[index];
  INBOXSIM_ASSERT(!instance.up);
  instance.up = true;
  record(instance_event(EventKind::restart, now_ms(), instance.names.service,
                        "restarted with its committed data"));
  instance.connected_ms = now_ms();
  for (const size_t consumer : instance.consumers) {
    if (!broker_.connected(consumer)) broker_.open_connection(consumer, now_ms());
  }
  guarded(index, [&] {
    if (instance.account) {
      instance.account->restart();
    } else {
      instance.transfer->restart();
    }
  });
  pump();
}

void World::on_reconnect(const Job& job) {
  Instance& instance = instances_[job.instance];
  if (!instance.up) return;
  bool opened = false;
  for (const size_t consumer : instance.consumers) {
    if (job.consumer != kAllConsumers && consumer != job.consumer) continue;
    if (broker_.connected(consumer)) continue;
    broker_.open_connection(consumer, now_ms());
    opened = true;
  }
  if (!opened) return;
  instance.connected_ms = now_ms();
  pump();
}

// RabbitMQ's heartbeat receiver (rabbit_heartbeat:start_heartbeat_receiver, v4.0.9) checks the
// socket for incoming data every heartbeat interval T, counted from when the connection opened,
// and gives up at the second check in a row that saw nothing: between 2T and 3T after the last
// data. The paused process sends nothing from its pause's start, and a check at that very
// millisecond still sees its last frame: the close comes 2T after the first check at or after
// the pause began.
int64_t World::heartbeat_close_ms(const Instance& instance) const {
  const int64_t interval = config_.broker_heartbeat_ms;
  INBOXSIM_ASSERT(interval > 0);
  const int64_t since_open = instance.pause_started_ms - instance.connected_ms;
  const int64_t checks = std::max<int64_t>(1, (since_open + interval - 1) / interval);
  return instance.connected_ms + (checks + 2) * interval;
}

// The broker closes a connection whose heartbeat checks saw nothing twice (above). The process
// is alive, only paused: its handlers will run on.
void World::on_heartbeat_timeout(const Job& job) {
  const Instance& instance = instances_[job.instance];
  if (instance.incarnation != job.incarnation || !paused(instance)) return;
  if (now_ms() != heartbeat_close_ms(instance)) return;  // a check of an earlier pause
  close_instance_connections(
      job.instance, "two heartbeat checks in a row (every " +
                        std::to_string(config_.broker_heartbeat_ms) + " ms) saw nothing for " +
                        std::to_string(now_ms() - instance.pause_started_ms) +
                        " ms: the broker closed the connection; unacked deliveries go back to "
                        "the queue");
}

// RabbitMQ's consumer timeout (rabbit_channel:evaluate_consumer_timeout, v4.0.9): a channel's
// tick finds its oldest unacked delivery older than consumer_timeout and closes the channel
// with PRECONDITION_FAILED; the broker requeues every delivery it had unacked, and the client
// opens a new channel. An exploration has no clock, so no timeout.
bool World::consumer_timeout_due(int64_t until_ms) {
  if (config_.broker_consumer_timeout_ms <= 0 || clockless() || !halted_reason_.empty()) {
    return false;
  }
  const auto due =
      broker_.next_consumer_timeout(config_.broker_consumer_timeout_ms, kChannelTickMs);
  if (!due || due->at_ms > until_ms) return false;
  scheduler_.advance_to(due->at_ms);
  maybe_cleanup();
  reset_connection(due->consumer,
                   "PRECONDITION_FAILED: delivery acknowledgement (tag " +
                       std::to_string(due->delivery_tag) + ", delivered at " +
                       std::to_string(due->delivered_ms) + " ms) timed out, consumer_timeout " +
                       std::to_string(config_.broker_consumer_timeout_ms) +
                       " ms: the broker closed the channel; every unacked delivery on it goes "
                       "back to the queue");
  return true;
}

void World::on_pause_end(size_t index) {
  Instance& instance = instances_[index];
  if (!instance.up || paused(instance)) return;
  record(instance_event(EventKind::resumed, now_ms(), instance.names.service,
                        "goes on where it stopped"));
  bool closed = false;
  for (const size_t consumer : instance.consumers) closed = closed || !broker_.connected(consumer);
  if (!closed) return;
  // The client library finds its connection gone and recovers it; its handlers run on.
  Job job = Job::of_instance(JobKind::reconnect, index);
  job.consumer = kAllConsumers;
  schedule(now_ms() + kReconnectMs, job);
}

void World::pause(size_t index, int64_t ms, CrashPoint point, const Message& message) {
  Instance& instance = instances_[index];
  instance.pause_started_ms = now_ms();
  instance.paused_until_ms = now_ms() + ms;
  TraceEvent event = event_about(EventKind::paused, now_ms(), instance.names.service, message);
  event.amount = ms;
  event.detail = "paused for " + std::to_string(ms) + " ms at " +
                 std::string(crash_point_name(point)) + " (a GC pause, a stalled disk)";
  record(std::move(event));
  schedule(instance.paused_until_ms, Job::of_instance(JobKind::pause_end, index));
  if (config_.broker_heartbeat_ms > 0) {
    // A pause that ends before the close resumes the heartbeats in time (pause_end runs first
    // when the two fall on the same millisecond: it was scheduled first).
    const int64_t close_ms = heartbeat_close_ms(instance);
    if (close_ms < instance.paused_until_ms) {
      schedule(close_ms, Job::of_instance(JobKind::heartbeat_timeout, index, instance.incarnation));
    }
  }
}

void World::crash_point(size_t index, CrashPoint point, const Message* message) {
  const Instance& instance = instances_[index];
  const auto fired =
      take_fault_at(FaultKind::crash, instance.service, instance.number, point, message);
  if (!fired) return;
  instances_[index].restart_after_ms = fired->restart_after_ms;
  TraceEvent event;
  if (message != nullptr) event = event_about(EventKind::crash, now_ms(), {}, *message);
  event.time_ms = now_ms();
  event.kind = EventKind::crash;
  event.service = instance.names.service;
  event.detail = std::string(crash_point_name(point));
  record(std::move(event));
  throw ServiceCrash{instance.service, point};
}

// The process died: its handlers die with it (their open transactions roll back, their row
// locks go), its connections close (the broker requeues what they had unacked), its memory is
// gone; it comes back later with its committed data.
void World::crashed(size_t index) {
  Instance& instance = instances_[index];
  INBOXSIM_ASSERT(instance.up);
  instance.up = false;
  ++instance.incarnation;
  instance.paused_until_ms = -1;
  instance.relay_poll_scheduled = false;
  instance.sweep_scheduled = false;
  // The relay's publishing channel dies with the process: a confirm still on its way belongs
  // to a channel that no longer exists, and the new incarnation publishes again (found by
  // `inboxsim explore`: a late confirm of the old channel used to take the new one's place).
  ++instance.publish_channel;
  std::erase_if(awaiting_confirm_,
                [index](const auto& entry) { return entry.first.first == index; });
  std::vector<uint64_t> dying;
  for (const auto& [id, handler] : handlers_) {
    if (handler.instance == index) dying.push_back(id);
  }
  // None of them may be handed a lock another of them releases.
  for (const uint64_t id : dying) locks_of(instance.service).withdraw(id);
  for (const uint64_t id : dying) {
    release_locks(index, id);
    handlers_.erase(id);
  }
  if (instance.transfer) instance.transfer->crash();
  close_instance_connections(index, "process died; unacked deliveries go back to the queue");
  schedule(now_ms() + instance.restart_after_ms,
           Job::of_instance(JobKind::restart, index, instance.incarnation));
}

void World::close_instance_connections(size_t index, const std::string& reason) {
  for (const size_t consumer : instances_[index].consumers) {
    if (!broker_.connected(consumer)) continue;
    TraceEvent event = instance_event(EventKind::connection_closed, now_ms(),
                                      consumers_[consumer].participant, reason);
    event.target = participant::broker;
    record(std::move(event));
    broker_.close_connection(consumer, now_ms(), "connection closed");
  }
  // What went back to the queue is for the other instances to take now.
  pump();
}

void World::reset_connection(size_t consumer, std::string reason) {
  TraceEvent event = instance_event(EventKind::connection_closed, now_ms(),
                                    consumers_[consumer].participant, std::move(reason));
  event.target = participant::broker;
  record(std::move(event));
  broker_.close_connection(consumer, now_ms(), "connection closed");
  pump();
  Job job = Job::of_instance(JobKind::reconnect, consumers_[consumer].instance);
  job.consumer = consumer;
  schedule(now_ms() + kReconnectMs, job);
}

// ---- step boundaries and row locks -----------------------------------------------------------

Suspend World::between_steps(size_t index, CrashPointSet points, const Message& message,
                             uint64_t resume, std::string next) {
  INBOXSIM_ASSERT(current_handler_ != 0);
  const Instance& instance = instances_[index];
  ActiveHandler& handler = handlers_.at(current_handler_);
  handler.resume = resume;
  handler.next_step = std::move(next);
  for (size_t point = 0; point < kCrashPointCount; ++point) {
    if (points.contains(static_cast<CrashPoint>(point))) {
      crash_point(index, static_cast<CrashPoint>(point), &message);
    }
  }
  for (size_t point = 0; point < kCrashPointCount; ++point) {
    const auto at = static_cast<CrashPoint>(point);
    if (!points.contains(at)) continue;
    if (const auto fired =
            take_fault_at(FaultKind::pause, instance.service, instance.number, at, &message)) {
      pause(index, fired->ms, at, message);
      break;
    }
  }
  const int64_t work = work_ms();
  const int64_t start_ms = paused(instance) ? instance.paused_until_ms : now_ms();
  // In an exploration every step is an event of its own: others may happen in between.
  if (start_ms + work == now_ms() && !clockless()) return Suspend{false};
  Job job = Job::of_instance(JobKind::resume, index);
  job.handler = current_handler_;
  schedule(start_ms + work, job);
  return Suspend{true};
}

Suspend World::lock_row(size_t index, const std::string& key, uint64_t resume,
                        std::string next) {
  INBOXSIM_ASSERT(current_handler_ != 0);
  ActiveHandler& handler = handlers_.at(current_handler_);
  handler.resume = resume;
  handler.next_step = std::move(next);
  const Instance& instance = instances_[index];
  RowLocks& locks = locks_of(instance.service);
  const std::optional<uint64_t> holder = locks.owner(key);
  if (locks.acquire(key, current_handler_)) return Suspend{false};
  const auto owner = handlers_.find(*holder);
  const Delivery& waiting = handlers_.at(current_handler_).delivery;
  const std::string_view held_by = owner == handlers_.end()
                                       ? std::string_view("another handler")
                                       : consumers_[owner->second.delivery.consumer].participant;
  TraceEvent event = event_about(EventKind::lock_wait, now_ms(),
                                 consumers_[waiting.consumer].participant, *waiting.message);
  event.detail = "waits for the row lock on " + key + ", held by " + std::string(held_by);
  record(std::move(event));
  return Suspend{true};
}

Suspend World::sleep(size_t index, int64_t ms, uint64_t resume, std::string next) {
  INBOXSIM_ASSERT(current_handler_ != 0);
  INBOXSIM_ASSERT(ms > 0);
  ActiveHandler& handler = handlers_.at(current_handler_);
  handler.resume = resume;
  handler.next_step = std::move(next);
  Job job = Job::of_instance(JobKind::resume, index);
  job.handler = current_handler_;
  schedule(now_ms() + ms, job);
  return Suspend{true};
}

void World::unlock_row(size_t index, const std::string& key) {
  INBOXSIM_ASSERT(current_handler_ != 0);
  RowLocks& locks = locks_of(instances_[index].service);
  if (const std::optional<uint64_t> next = locks.release(key, current_handler_)) {
    grant_lock(key, *next);
  }
}

// Releases the locks a handler still holds (it rolled back or its process died) and withdraws
// it from every lock it waits for.
void World::release_locks(size_t index, uint64_t handler) {
  RowLocks& locks = locks_of(instances_[index].service);
  if (locks.empty()) return;
  for (const RowLocks::Grant& grant : locks.release_all(handler)) {
    grant_lock(grant.key, grant.handler);
  }
}

// The waiter that now owns `key` goes on with its step.
void World::grant_lock(const std::string& key, uint64_t handler) {
  const auto found = handlers_.find(handler);
  INBOXSIM_ASSERT(found != handlers_.end());
  const Delivery& delivery = found->second.delivery;
  TraceEvent event = event_about(EventKind::lock_granted, now_ms(),
                                 consumers_[delivery.consumer].participant, *delivery.message);
  event.detail = "got the row lock on " + key;
  record(std::move(event));
  Job job = Job::of_instance(JobKind::resume, found->second.instance);
  job.handler = handler;
  schedule(now_ms(), job);
}

// ---- publishing ------------------------------------------------------------------------------

void World::pump() {
  dispatched_.clear();
  broker_.pump(dispatched_, now_ms());
  for (Delivery& delivery : dispatched_) {
    int64_t delay_ms = latency_ms();
    const Instance& instance = instances_[consumers_[delivery.consumer].instance];
    if (const auto held =
            take_fault(FaultKind::delay, instance.service, instance.number, *delivery.message)) {
      delay_ms += held->ms;
    }
    Job job;
    job.kind = JobKind::deliver;
    job.consumer = delivery.consumer;
    job.delivery_id = next_delivery_id_++;
    in_flight_.emplace(job.delivery_id, std::move(delivery));
    schedule(now_ms() + delay_ms, job);
  }
}

void World::publish(ServiceId publisher_service, std::string_view publisher,
                    const MessagePtr& message, bool copy) {
  TraceEvent event = event_about(EventKind::publish, now_ms(), publisher, *message);
  event.target = participant::broker;
  event.detail = std::string(routing_key(message->type));
  record(std::move(event));
  const bool by_operator = copy || publisher == participant::operator_;
  if (footprinting()) {
    touch((uint64_t{3} << 56) | (Hasher().add(message->message_id).finish().low >> 8));
  }
  const bool first = publications_.record(message, by_operator);
  if (!first && !by_operator) coverage_.reach(Probe::republish_same_id);
  broker_.publish(message);
  if (first && !by_operator) {
    while (const std::optional<FaultSpec> fault =
               take_fault(FaultKind::duplicate, publisher_service, 0, *message)) {
      fire_duplicate(message, fault->copied_by);
    }
  }
  pump();
}

// The copy's publisher in the trace is whoever the story says made it; the narration and the
// diagrams name it from there.
void World::fire_duplicate(const MessagePtr& message, CopySource source) {
  std::string_view publisher = participant::operator_;
  if (source == CopySource::broker) publisher = participant::broker;
  if (source == CopySource::network) publisher = participant::network;
  publish(ServiceId::account, publisher, std::make_shared<Message>(*message), true);
}

// A publish the broker refuses (basic.nack, confirms.md): it is not routed, so it is no
// message of the run's; it still counts as a send.
void World::publish_refused(std::string_view publisher, const Message& message) {
  TraceEvent event = event_about(EventKind::publish_nacked, now_ms(), participant::broker, message);
  event.target = publisher;
  event.detail = "basic.nack: the broker did not take the message";
  record(std::move(event));
  publications_.record_refused(message);
}

PublishResult World::publish_and_confirm(size_t index, const MessagePtr& message) {
  const Instance& instance = instances_[index];
  if (take_fault(FaultKind::publish_nack, instance.service, instance.number, *message)) {
    publish_refused(instance.names.service, *message);
    return PublishResult::nacked;
  }
  publish(instance.service, instance.names.service, message);
  if (take_fault(FaultKind::lose_confirm, instance.service, instance.number, *message)) {
    TraceEvent event =
        event_about(EventKind::confirm_lost, now_ms(), participant::broker, *message);
    event.target = instance.names.service;
    event.detail =
        "the publishing channel closed before the confirm arrived; the message did reach the "
        "broker";
    record(std::move(event));
    return PublishResult::lost;
  }
  return PublishResult::confirmed;
}

void World::relay_publish(size_t index, const MessagePtr& message, int64_t outbox_seq) {
  const Instance& instance = instances_[index];
  largest_relayed_seq_ = std::max(largest_relayed_seq_, outbox_seq);
  Job job = Job::of_instance(JobKind::confirm, index, instance.incarnation);
  job.outbox_seq = outbox_seq;
  job.channel = instance.publish_channel;
  if (take_fault(FaultKind::publish_nack, ServiceId::transfer, instance.number, *message)) {
    publish_refused(instance.names.relay, *message);
    job.kind = JobKind::publish_nack;
    schedule(now_ms() + latency_ms(), job);
    return;
  }
  publish(ServiceId::transfer, instance.names.relay, message);
  if (take_fault(FaultKind::lose_confirm, ServiceId::transfer, instance.number, *message)) {
    relay_channel_closed(index, *message);
    return;
  }
  awaiting_confirm_[{index, outbox_seq}] = message;
  schedule(now_ms() + latency_ms(), job);
}

// RabbitMQ loses a publisher confirm only with its channel (confirms.md): every publish the
// relay awaited a confirm for is in doubt, and it publishes them again, same message ids, once
// it has reconnected.
void World::relay_channel_closed(size_t index, const Message& message) {
  Instance& instance = instances_[index];
  TraceEvent event = event_about(EventKind::confirm_lost, now_ms(), participant::broker, message);
  event.target = instance.names.relay;
  event.detail =
      "the relay's channel closed before the confirm arrived; the message did reach the broker, "
      "and the relay will publish every unconfirmed row again after reconnecting";
  record(std::move(event));
  ++instance.publish_channel;
  std::erase_if(awaiting_confirm_,
                [index](const auto& entry) { return entry.first.first == index; });
  instance.transfer->relay_channel_closed();
  if (!instance.relay_poll_scheduled) {
    schedule_loop(index, JobKind::relay_poll, instance.relay_poll_scheduled, kReconnectMs);
  }
}

void World::on_publish_nack(const Job& job) {
  Instance& instance = instances_[job.instance];
  if (instance.incarnation != job.incarnation || instance.publish_channel != job.channel) return;
  guarded(job.instance, [&] { instance.transfer->relay_publish_nacked(job.outbox_seq); });
}

void World::redrive(const std::string& queue_name) {
  if (queue_name == "all") {
    for (const std::string& name : broker_.parking_queues()) redrive(name);
    return;
  }
  const std::optional<size_t> queue = broker_.find_queue(queue_name);
  if (!queue) {
    mark_step("(" + queue_name + " does not exist in this configuration: nothing to redrive)");
    return;
  }
  for (const MessagePtr& message : broker_.redrive(*queue)) {
    TraceEvent event = event_about(EventKind::redrive, now_ms(), participant::operator_, *message);
    event.target = participant::broker;
    event.detail = "moved from " + queue_name + " back to its queue, as a new message";
    record(std::move(event));
  }
  pump();
}

// The callers check first: their delay is a random draw, which must not be made for nothing.
void World::schedule_loop(size_t index, JobKind kind, bool& pending, int64_t delay_ms) {
  const Instance& instance = instances_[index];
  INBOXSIM_ASSERT(!pending);
  INBOXSIM_ASSERT(instance.up);
  pending = true;
  schedule(now_ms() + delay_ms, Job::of_instance(kind, index, instance.incarnation));
}

void World::schedule_relay_poll(size_t index) {
  touch_instance(index);
  Instance& instance = instances_[index];
  if (instance.relay_poll_scheduled || !instance.up) return;
  schedule_loop(index, JobKind::relay_poll, instance.relay_poll_scheduled,
                clockless() ? 0 : rng_.between(kRelayPollMsMin, kRelayPollMsMax));
}

void World::schedule_account_outbox_sweep(size_t index) {
  Instance& instance = instances_[index];
  if (instance.sweep_scheduled || !instance.up) return;
  schedule_loop(index, JobKind::account_sweep, instance.sweep_scheduled, latency_ms());
}

// ---- cleanup ---------------------------------------------------------------------------------

void World::maybe_cleanup() {
  if (now_ms() < next_cleanup_ms_) return;
  const int64_t ticks_passed = (now_ms() - next_cleanup_ms_) / kCleanupIntervalMs;
  const int64_t tick_ms = next_cleanup_ms_ + ticks_passed * kCleanupIntervalMs;
  next_cleanup_ms_ = tick_ms + kCleanupIntervalMs;
  on_cleanup(tick_ms);
}

// Every instance runs the cleanup service; one pass per tick stands for them all, run by the
// first instance that is up and not paused. When none is, the next tick catches up.
void World::on_cleanup(int64_t tick_ms) {
  for (ServiceId service : {ServiceId::account, ServiceId::transfer}) {
    for (Instance& instance : instances_) {
      if (instance.service != service || !instance.up || paused(instance)) continue;
      if (instance.account) {
        const CleanupCounts deleted = instance.account->cleanup_inbox(tick_ms);
        const std::string window = std::to_string(config_.account_inbox_window_ms);
        // The Marten documents are kept Wolverine's KeepAfterMessageHandling, not the window.
        const std::string what = config_.account_inbox == AccountInbox::marten
                                     ? "documents handled more than " +
                                           std::to_string(config_.account_keep_after_handling_ms) +
                                           " ms ago deleted (KeepAfterMessageHandling)"
                                     : "rows delivered more than " + window + " ms ago deleted";
        record_cleanup(instance.names.service, deleted.dedupe_rows, "inbox cleanup: " + what);
        record_cleanup(instance.names.service, deleted.outbox_rows,
                       "outbox cleanup: rows delivered more than " + window + " ms ago deleted");
      } else {
        const CleanupCounts deleted =
            instance.transfer->cleanup_processed(tick_ms - tick_ms % kTtlMonitorIntervalMs);
        const std::string ttl = std::to_string(config_.transfer_processed_ttl_ms);
        record_cleanup(instance.names.service, deleted.dedupe_rows,
                       "TTL: processed_messages older than " + ttl + " ms deleted");
        record_cleanup(instance.names.service, deleted.outbox_rows,
                       "TTL: outbox rows sent more than " + ttl + " ms ago deleted");
      }
      break;
    }
  }
}

void World::record_cleanup(std::string_view service, int64_t deleted, std::string detail) {
  if (deleted == 0) return;
  TraceEvent event = instance_event(EventKind::cleanup, now_ms(), service, std::move(detail));
  event.amount = deleted;
  record(std::move(event));
}

// ---- observation -----------------------------------------------------------------------------

void World::record(TraceEvent event) {
  stats_.count(event);
  coverage_.count(event);
  if (rows_) rows_->before_event(broker_, event);
  trace_.record(std::move(event));
  if (rows_) rows_->after_event();
}

void World::committed(const CommitRecord& record_in) {
  stats_.count_transaction();
  coverage_.count_commit(record_in);
  if (rows_ && record_in.events.empty()) rows_->commit_without_events();
  for (const TraceEvent& event : record_in.events) record(event);
  checker_.on_commit(record_in, now_ms());
  if (record_in.service != ServiceId::transfer || !record_in.outbox_written) return;
  // Every instance's relay polls the one outbox; each finds the new row on its next poll.
  for (size_t index = 0; index < instances_.size(); ++index) {
    if (instances_[index].service == ServiceId::transfer) schedule_relay_poll(index);
  }
}

RunResult World::finish() {
  Instance& account = first_instance(ServiceId::account);
  Instance& transfer = first_instance(ServiceId::transfer);
  FinalState final_state;
  final_state.balances = account.account->balances();
  final_state.for_each_ledger_entry = [&](const auto& visit) {
    account.account->for_each_ledger_entry(visit);
  };
  final_state.for_each_saga = [&](const auto& visit) { transfer.transfer->for_each_saga(visit); };
  final_state.notifications = transfer.transfer->notification_counts();
  final_state.queued_messages =
      static_cast<int64_t>(broker_.ready_messages() + broker_.unacked_messages());
  final_state.unsent_outbox_rows =
      account.account->undelivered_outbox_rows() + transfer.transfer->unsent_outbox_rows();
  final_state.dead_lettered = stats_.stats().dead_lettered;
  final_state.quiescent = quiescent_;
  final_state.halted = halted_reason_;
  const auto parked_ref = [](const ParkedMessage& parked) {
    return ParkedMessageRef{parked.queue, parked.message->transfer,
                            std::string(message_type_name(parked.message->type)),
                            parked.message->message_id};
  };
  final_state.for_each_parked = [&](const auto& visit) {
    for (const ParkedMessage& parked : broker_.parked()) visit(parked_ref(parked));
  };
  checker_.check_final(final_state, now_ms());
  return snapshot();
}

RunResult World::snapshot() {
  Instance& account = first_instance(ServiceId::account);
  Instance& transfer = first_instance(ServiceId::transfer);
  const auto parked_ref = [](const ParkedMessage& parked) {
    return ParkedMessageRef{parked.queue, parked.message->transfer,
                            std::string(message_type_name(parked.message->type)),
                            parked.message->message_id};
  };
  RunResult result;
  result.config = config_to_json(config_);
  result.trace_hash = trace_.hash_hex();
  result.virtual_ms = now_ms();
  result.stats = stats_.stats();
  result.dedupe_hits = stats_.dedupe_hits();
  result.coverage = coverage_.coverage();
  result.published_ids = publications_.published_counts();
  result.sends = publications_.sends();
  result.dead_letter_queues = broker_.parked_totals();
  if (keep_final_tables_) {
    for (const ParkedMessage& message : broker_.parked()) {
      const ParkedMessageRef parked = parked_ref(message);
      result.parked.push_back(parked.queue + ": " + parked.type + " " + parked.transfer + " (" +
                              parked.message_id + ")");
    }
  }
  for (const auto& [name, spec] : accounts_) result.opening_balances[name] = spec.balance;
  result.balances = account.account->balances();
  if (keep_final_tables_) {
    result.transfers = transfer.transfer->sagas();
    result.transfer_amounts = transfer_amounts_;
    result.ledger = account.account->ledger();
  }
  for (size_t index = 0; index < kInvariantCount; ++index) {
    const auto invariant = static_cast<Invariant>(index);
    result.invariant_applies[index] = checker_.applies(invariant);
  }
  // Violations in contract order, each with the first detail found.
  for (size_t index = 0; index < kInvariantCount; ++index) {
    for (const Violation& violation : checker_.violations()) {
      if (static_cast<size_t>(violation.invariant) == index) result.violations.push_back(violation);
    }
  }
  if (keep_final_tables_) result.unfired_faults = faults_.unfired();
  result.events = trace_.events();
  result.envelopes = publications_.envelopes();
  if (rows_) result.rows = rows_->finish(broker_);
  return result;
}

}  // namespace inboxsim
