// The World: one simulated bank, and the one place that wires everything together. It owns the
// scheduler, the PRNG, the broker, every instance of both services, the fault gate, the row
// locks, the checker and the trace; each instance reaches them through its own ServiceHost.
//
// Everything happens inside World::dispatch(), one event at a time, in (time, sequence) order:
// a delivery arrives and an instance starts a handler, a handler resumes after its step's work
// time or a lock grant, an ack reaches the broker, a relay polls, a crashed instance restarts.
// The network latency of each hop and the work time of each step are drawn from the seeded
// PRNG, so the seed decides the interleaving and nothing else does.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "broker/message_broker.h"
#include "check/checker.h"
#include "domain/result.h"
#include "domain/scenario.h"
#include "domain/topology.h"
#include "kernel/fingerprint.h"
#include "kernel/footprint.h"
#include "kernel/rng.h"
#include "kernel/scheduler.h"
#include "kernel/task.h"
#include "kernel/trace.h"
#include "services/account_service.h"
#include "services/host.h"
#include "services/recoverability.h"
#include "services/sql.h"
#include "services/transfer_service.h"
#include "world/awaited_confirms.h"
#include "world/coverage_recorder.h"
#include "world/explore_control.h"
#include "world/explore_driver.h"
#include "world/fault_gate.h"
#include "world/faults.h"
#include "world/handler_table.h"
#include "world/job.h"
#include "world/limits.h"
#include "world/message_names.h"
#include "world/processes.h"
#include "world/publication_log.h"
#include "world/retention.h"
#include "world/row_locks.h"
#include "world/row_recorder.h"
#include "world/sql_footprint.h"
#include "world/stats_recorder.h"
#include "world/wire.h"

namespace inboxsim {

struct WorldOptions {
  uint64_t seed = 1;
  std::string db_dir;     // empty: databases in memory
  std::string db_prefix;  // file name prefix inside db_dir
  // Without db_dir: the databases in temporary files instead of memory (a long story).
  bool spill_databases = false;
  // With spill_databases: how many armed faults that name a transfer stay in memory before
  // they go to a temporary database too (tests lower it to spill at once).
  size_t faults_in_memory_max = FaultBook::kFaultsInMemoryMax;
  // Put the ledger, the sagas, the transfers' amounts, the unfired faults and the parked
  // messages in the result (for expectations and views); a fuzz seed needs only the verdict,
  // and a long story's are large.
  bool keep_final_tables = true;
  bool keep_trace = true;
  bool hash_trace = true;  // false: RunResult::trace_hash stays empty and costs nothing
  ExploreControl explore;
  // Record every row change and queue change for a view (RunResult::rows). Off, no hook is
  // installed and a run pays nothing.
  bool record_rows = false;
  RowRecorder::Listener row_listener;  // hears each event's row changes (--show-rows)
};

class World {
 public:
  World(const Scenario& scenario, const Config& config, const WorldOptions& options);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  // Scenario steps.
  void mark_step(std::string detail);
  void request_transfer(const TransferSpec& transfer);
  void arm_fault(const FaultSpec& fault);
  void drop_index(IndexName index);
  // Puts back an index drop_index removed (docs/contract.md §9.2); a unique index that the rows written
  // meanwhile no longer allow stays dropped, and the trace says why.
  void restore_index(IndexName index);
  // A person publishes a message by hand (docs/contract.md §9.2: a `publish` step).
  void publish_by_hand(const Step& step);
  // An operator moves every message of an error or dead-letter queue back to its queue
  // ("all": of every such queue).
  void redrive(const std::string& queue);
  // Runs until nothing is pending; false if the event bound was hit first.
  bool run_until_quiescent();
  // Runs every event due in the next `ms` and moves the clock by `ms`.
  void run_for(int64_t ms);
  void advance(int64_t ms);

  // Checks the final state and returns everything the run produced.
  RunResult finish();
  // Everything the run has produced so far, without the checks of the end (the playground's
  // view of a moment in the middle of a story).
  RunResult snapshot();

  // The playground: takes the hand actions of the schedule due at this point (between two
  // events, or at the story's end); whether it took any.
  bool take_due_actions();
  // What can happen next, in the order a choice names it (the first is option 0).
  std::vector<PendingEvent> pending_events() const;
  // The schedule's hand actions taken so far.
  size_t actions_taken() const { return explorer_.actions_taken(); }
  // Whether the story is stopped at a moment with events pending.
  bool events_pending() const { return !scheduler_.empty(); }
  int64_t clock_ms() const { return now_ms(); }
  // Every queue's messages now (Broker::contents), the instances and the indexes dropped.
  std::vector<QueueEntry> queue_contents() const { return broker_->contents(); }
  struct InstanceState {
    std::string_view name;
    bool up = true;
    bool paused = false;
  };
  std::vector<InstanceState> instance_states() const;
  std::vector<IndexName> dropped_indexes() const;
  std::vector<std::string> parking_queues() const { return broker_->parking_queues(); }
  // The envelope of each message published so far, by message id (a hand publish's template).
  std::map<std::string, std::string> envelopes() const { return publications_.envelopes(); }

  Trace& trace() { return trace_; }

  // Exploration: whether the run stopped for the explorer, and where.
  bool exploration_stopped() const { return explorer_.stopped(); }
  // What persistent sets of one event (ExploreOutcome::alone) assume and this run has kept to so
  // far: no queue has made as many deliveries as the prefetch (so no consumer was ever full and
  // an ack never decided who got a message), and no relay met a full batch of outbox rows.
  bool persistent_sets_assumptions_held() const;
  const ExploreOutcome& explore_outcome() const { return explorer_.outcome(); }
  // ExploreControl::continue_alone: the states passed through, in order; explore_outcome()
  // then reports the last stretch, from the event taken alone at the last of them.
  const std::vector<PassedState>& passed() const { return explorer_.passed(); }
  // The coverage probes reached so far.
  const Coverage& coverage() const { return coverage_.coverage(); }
  // The invariants found broken so far (safety ones, during the run).
  const std::vector<Violation>& violations() const { return checker_.violations(); }
  // The fingerprint of the state between two events: the databases' rows and schema, the
  // broker's queues, what is on the wire, every instance and waiting handler, the locks, the
  // fault book. Equal fingerprints, equal futures (docs/model.md, "Exploration").
  Fingerprint fingerprint();
  // The fingerprint without the broker's counters, even when the exploration
  // keeps them (ExploreControl::keep_broker_counters): tests compare final states by it.
  Fingerprint canonical_fingerprint();
  // A final state's identity, as the explorers count and compare final states: where nothing
  // reads the order of ids and of some tables' rows (MessageNames), the canonical fingerprint,
  // so that two final states that differ only in which message got which id or rowid are
  // one; the fingerprint otherwise.
  Fingerprint final_fingerprint();
  // ExploreControl::log_events: the run so far as events and choices.
  const EventLog& event_log() const { return explorer_.log(); }
  // ExploreControl::log_events: a story step (not a run) is about to be played; it is logged
  // as an event ordered with every other.
  void story_point();

 private:
  class InstanceHost;
  friend class InstanceHost;

  // Which consumer of an instance a broker consumer is (InstanceConsumer::role).
  using ConsumerRole = QueueConsumer;
  // An instance's loops and the relay's memory of what awaits a confirm (processes.h).
  using Loop = InstanceLoop;

  // Wiring.
  void add_instances(ServiceId service, int64_t count, const WorldOptions& options);
  void add_consumers();

  // The event loop.
  bool step_once();
  void dispatch(const Job& job);
  // The instance a job acts in: a delivery's, an ack's or a nack's consumer's, else its own.
  size_t instance_of(const Job& job) const;
  void touch_for(const Job& job);
  bool deferred_by_pause(const Job& job);
  void on_deliver(const job::Deliver& deliver);
  void start_handler(size_t instance, const Delivery& delivery, size_t attempt,
                     bool from_table = false);
  void handler_faulted(ActiveHandler handler, const ConsumerFault& fault);
  bool cancelled_by_close(const ActiveHandler& handler) const;
  void cancel_handler(uint64_t handler);
  void on_retry(uint64_t handler);
  void move_to_error_queue(const ActiveHandler& handler, std::string_view reason);
  void run_handler(uint64_t handler);
  void finish_handler(uint64_t handler);
  void on_ack(const job::Ack& ack);
  void on_nack(const job::Nack& nack);
  void on_confirm(const Job& job, const job::Confirm& confirm);
  void on_publish_nack(const Job& job, const job::PublishNack& nack);
  void relay_channel_closed(size_t instance, const Message& message);
  void publish_refused(std::string_view publisher, const Message& message);
  void on_relay_poll(const Job& job);
  void on_account_sweep(const Job& job);
  void on_restart(size_t instance);
  void on_reconnect(size_t instance, const job::Reconnect& reconnect);
  void on_heartbeat_timeout(const Job& job);
  void on_pause_end(size_t instance);

  // The wolverine inbox's durability agent (world_durability.cpp).
  void on_durability_poll(const Job& job);
  void schedule_durability_polls();
  void schedule_durability_poll(size_t instance);
  std::vector<int64_t> live_nodes() const;
  void start_table_handler(size_t instance, const MessagePtr& message);
  void ack_now(size_t instance);

  // What the instances ask of the world (through InstanceHost).
  void crash_point(size_t instance, CrashPoint point, const Message* message);
  Suspend between_steps(size_t instance, CrashPointSet points, const Message& message,
                        uint64_t resume, std::string next);
  Suspend lock_row(size_t instance, const std::string& key, uint64_t resume, std::string next);
  void unlock_row(size_t instance, const std::string& key);
  Suspend sleep(size_t instance, int64_t ms, uint64_t resume, std::string next);
  PublishResult publish_and_confirm(size_t instance, const MessagePtr& message);
  void relay_publish(size_t instance, const MessagePtr& message, int64_t outbox_seq);
  void committed(const CommitRecord& record);
  void schedule_relay_poll(size_t instance);
  void schedule_account_outbox_sweep(size_t instance);

  // Faults, crashes and connections.
  void pause(size_t instance, int64_t ms, CrashPoint point, const Message& message);
  void crashed(size_t instance);
  void release_locks(size_t instance, uint64_t handler);
  void grant_lock(const std::string& key, uint64_t handler);
  void reset_connection(size_t consumer, std::string reason);
  // Closes the first channel whose consumer timeout is due no later than `until_ms`, moving the
  // clock there; false when none is (or the timeout is off, or there is no clock).
  bool consumer_timeout_due(int64_t until_ms);
  void close_instance_connections(size_t instance, const std::string& reason);
  template <typename Fn>
  void guarded(size_t instance, Fn&& fn);

  // Exploration: the next choice among `options` (docs/contract.md §8.3), made by the explorer's
  // driver; `event` when it chooses which pending event happens next.
  uint32_t choose(size_t options, bool event = false);
  bool clocked() const { return explorer_.clocked(); }
  bool clockless() const { return explorer_.clockless(); }
  // How many pending events a choice is among: every one without a clock, those due first with.
  size_t choosable() const;
  // One step of an explored run, and its stop at the explorer's frontier.
  bool explored_step();
  bool at_frontier(size_t enabled);
  PendingEvent describe_job(const Job& job) const;
  // describe_job's words for the jobs about a message, by kind: each sets the event's kind,
  // and its participant, message and label as far as the job knows them.
  void describe_delivery(const job::Deliver& deliver, PendingEvent& event) const;
  void describe_ack(std::string kind, size_t consumer, int64_t delivery_tag, bool term,
                    PendingEvent& event) const;
  void describe_confirm(const Job& job, bool confirm, int64_t outbox_seq,
                        PendingEvent& event) const;
  void describe_handler_step(bool resume, uint64_t handler, PendingEvent& event) const;
  void describe_ack_wait_expiry(const job::BrokerTimer& timer, PendingEvent& event) const;
  std::map<IndexName, std::vector<std::string>> dropped_;  // what drop_index removed
  // A scripted fault of `kind` that fires on this event, or, in an exploration with faults
  // left, one the explorer chooses to inject here (FaultGate::take, with World's choice).
  std::optional<FaultSpec> take_fault(FaultKind kind, ServiceId service, int64_t instance,
                                      const Message& message);
  std::optional<FaultSpec> take_fault_at(FaultKind kind, ServiceId service, int64_t instance,
                                         CrashPoint point, const Message* message);
  Fingerprint fingerprint_job(const Job& job) const;
  Fingerprint fingerprint_handler(uint64_t handler) const;
  void fingerprint_keyed_by_ids(Hasher& hasher) const;
  void fingerprint_channel(Hasher& hasher, size_t consumer, uint64_t channel,
                           int64_t delivery_tag) const;
  bool broker_counters_in_fingerprint() const;
  Fingerprint fingerprint_delivery(const Delivery& delivery) const;

  // Acks, nacks and publishing.
  // `at_once`: the ack reaches the broker now, with no time on the wire (the wolverine inbox's
  // ack after the store, so that its after_ack point means the broker has the ack).
  void send_ack(const ActiveHandler& handler, bool at_once = false);
  void send_in_progress(uint64_t handler);
  void send_nack(const Delivery& delivery, std::string reason);
  bool ack_void(const Delivery& delivery, std::string_view verb);
  void pump();
  // Schedules the broker's next timer (MessageBroker::next_due_ms), once per instant; without
  // a clock, keeps the ack wait choices in step with the broker (sync_ack_wait_choices).
  void schedule_broker_timer();
  // Without a clock: one broker_timer job (its `consumer` the work queue) per work queue with a
  // lease whose ack wait may run out, while the budget of expiries lasts; none other.
  void sync_ack_wait_choices();
  // Without a clock, once nothing else is pending: the first work queue's oldest lease whose
  // ack wait may run out runs out next, the budget spent or not (time passes, and that wait is
  // the next thing due). Schedules its broker_timer job and returns true, or returns false.
  bool expire_when_quiescent();
  void on_broker_timer(const job::BrokerTimer& timer);
  // `copy`: a duplicate fault's copy, which no later fault copies again and which is no
  // re-publication of its publisher's, whoever the trace names as its publisher.
  void publish(ServiceId publisher_service, std::string_view publisher, const MessagePtr& message,
               bool copy = false);
  void fire_duplicate(const MessagePtr& message, CopySource source);

  // Time and cleanup.
  int64_t now_ms() const { return scheduler_.now_ms(); }
  int64_t latency_ms();
  int64_t work_ms();
  void schedule(int64_t time_ms, Job job) {
    job.born = explorer_.born();
    scheduler_.schedule_at(time_ms, job);
  }
  // Schedules a periodic loop's next turn on an instance and marks it pending.
  // REQUIRES: no turn is pending and the instance is up.
  void schedule_loop(size_t instance, job::Payload payload, Loop loop, int64_t delay_ms);
  void maybe_cleanup();
  void on_cleanup(int64_t tick_ms);
  void record_cleanup(std::string_view service, int64_t deleted, CleanupOf cleaned,
                      const std::string& detail);

  // Observation.
  void record(TraceEvent event);
  RowLocks& locks_of(ServiceId service) { return shared_of(service).locks; }

  // Configuration and randomness.
  Config config_;
  Recoverability recoverability_;  // what a faulted delivery becomes
  Retention retention_;            // when the cleanup passes are due, and their words
  std::map<std::string, AccountSpec> accounts_;
  Rng rng_;

  // Time and the record of what happened.
  Scheduler<Job> scheduler_;
  Trace trace_;
  StatsRecorder stats_;
  CoverageRecorder coverage_;
  PublicationLog publications_;
  Checker checker_;
  std::map<std::string, int64_t> transfer_amounts_;  // when keep_final_tables_
  bool keep_final_tables_ = true;

  // The broker and what is on the wire.
  std::unique_ptr<MessageBroker> broker_;
  size_t account_error_queue_ = 0;         // account-service_error
  Wire wire_;  // deliveries on their way to the consumers
  std::set<int64_t> broker_timers_;  // when a broker_timer job is scheduled
  std::set<size_t> ack_wait_choices_;  // without a clock: the work queues with a broker_timer job
  AwaitedConfirms confirms_;  // what each relay awaits a publisher confirm for

  // What the instances of one service share: the service's database, in which each instance
  // holds a connection of its own; the external seen-set (a Redis SET) that the seen-set
  // inboxes read and mark; the row locks its handlers hold across steps.
  struct ServiceShared {
    std::unique_ptr<SharedDatabase> database;
    ExternalSeenStore seen_store;
    RowLocks locks;
  };
  ServiceShared& shared_of(ServiceId service) { return shared_[static_cast<size_t>(service)]; }

  // The services: what each one's instances share, by ServiceId, then the instances. Declared
  // in this order so that the databases outlive the connections the instances hold.
  std::array<ServiceShared, 2> shared_;
  Processes processes_;    // every instance, its liveness, the requests' round robin
  HandlerTable handlers_;  // every handler not yet ended, and the one running now
  // A preemption-bounded exploration: the instance that took the last step of a handler (a
  // live `resume`); -1 before any. Deliveries start handlers but do not switch the runner.
  int64_t runner_ = -1;

  // The rows behind the views (docs/usage.md, `run --html`); null unless a view asked for them.
  // Declared after the instances so that it is destroyed first, while their connections still
  // hold its hooks.
  std::unique_ptr<RowRecorder> rows_;
  bool cleaning_ = false;  // a retention pass runs (on_cleanup)

  // The run's progress.
  uint64_t next_message_number_ = 1;
  bool quiescent_ = true;
  // Set when the run stopped at a bound that is not the event count (a poison message looping
  // on a classic queue): why, for the termination report.
  std::string halted_reason_;

  // Exploration.
  // What an event reads or changes, for the explorer (kernel/footprint.h); each is one branch
  // on a flag outside an exploration.
  void touch(uint64_t resource, Access access = Access::write) {
    explorer_.touch(resource, access);
  }
  bool footprinting() const { return explorer_.footprinting(); }
  // An instance's loops (ResourceClass::loop): each one's flag and its jobs; the relay's memory
  // of the rows that await a confirm is a resource of its own (two bits of the instance's id).
  void touch_loop(size_t instance, Loop loop, Access access = Access::write);
  // One row's entry in an instance's relay memory of what awaits a confirm.
  void touch_awaited(size_t instance, int64_t outbox_seq);
  // The relay's publishing channel (which a confirm or a publish nack is void without), and
  // which incarnation an instance is in (a scheduled loop's turn is void in another): written
  // by what changes them, read by the jobs they void.
  void touch_publish_channel(size_t instance, Access access = Access::write);
  void touch_incarnation(size_t instance, Access access = Access::write);
  // A void job's footprint (touch_voidness in world_explore.cpp); false if the job is not void.
  bool touch_voidness(const Job& job);
  void touch_row_lock(ServiceId service, const std::string& key);
  // Every lock `handler` holds or waits for (it is about to give them all up).
  void touch_row_locks_of(ServiceId service, uint64_t handler);
  bool commutes_with_the_rest(const Job& job) const;
  bool live_step(const Job& job) const;
  // A handler whose next step is ready (a live `resume` pending), and its instance.
  struct ReadyStep {
    uint64_t handler;
    size_t instance;
    bool operator==(const ReadyStep& other) const {
      return handler == other.handler && instance == other.instance;
    }
  };
  // Every ready step, by handler id: the runner's (runner_) and what an inert event leaves as
  // it found it (ExploreOutcome::inert).
  std::vector<ReadyStep> steps_ready() const;
  // The runner (runner_) has a step ready: a step of another instance now preempts it.
  bool runner_ready() const;
  bool void_forever(const Job& job) const;
  void touch_instance(size_t instance, Access access = Access::write);
  void touch_database(ServiceId service);
  // The services' databases tell the explorer each row an event reads or changes (off: each
  // event that runs service code touches its whole database).
  std::unique_ptr<SqlFootprint> sql_footprint_;
  ExploreDriver explorer_;
  // The fault gate: the faults the scenario armed, and the explorer's injections (declared after
  // the driver, which it asks).
  FaultGate faults_;
  // Set while canonical_fingerprint runs: channel numbers are left out whatever the control says.
  bool canonical_only_ = false;
  // MessageNames::commute_in held: canonical_fingerprint reads ids by their names here and the
  // unordered tables as sets; and with ExploreControl::names_commute, two messages' mints and
  // their inserts into the unordered tables commute (names_commute_).
  bool names_canonical_ = false;
  bool names_commute_ = false;
  MessageNames message_names_;
  // Takes the `option`-th pending event and runs it (an explored run's step).
  void take_and_dispatch(size_t option);
};

// Runs `fn` on an instance's behalf; a crash at one of its crash points kills the instance.
template <typename Fn>
void World::guarded(size_t instance, Fn&& fn) {
  try {
    fn();
  } catch (const ServiceCrash&) {
    crashed(instance);
  }
}

}  // namespace inboxsim
