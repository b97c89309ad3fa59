// The World: one simulated bank, and the one place that wires everything together. It owns the
// scheduler, the PRNG, the broker, every instance of both services, the fault book, the row
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
#include <string>
#include <vector>

#include "broker/broker.h"
#include "check/checker.h"
#include "domain/result.h"
#include "domain/scenario.h"
#include "kernel/fingerprint.h"
#include "kernel/rng.h"
#include "kernel/scheduler.h"
#include "kernel/task.h"
#include "kernel/trace.h"
#include "services/account_service.h"
#include "services/host.h"
#include "services/sql.h"
#include "services/transfer_service.h"
#include "world/coverage_recorder.h"
#include "world/faults.h"
#include "world/limits.h"
#include "world/publication_log.h"
#include "world/row_locks.h"
#include "world/row_recorder.h"
#include "world/stats_recorder.h"

namespace inboxsim {

class World;

// Exploration (docs/contract.md §8.3): every choice a run makes (which pending event happens next,
// whether a fault strikes here) is taken from `schedule` and, past its end, is option 0: the
// event scheduled first, no fault. There is no clock: every pending event may happen next,
// network and work take no time, and each step of a handler is an event of its own.
struct ExploreControl {
  bool enabled = false;
  Schedule schedule;  // the choices to follow, and the faults the run may inject
  // The explorer's mode: stop at the first state past the schedule where several events may
  // happen next (and at the first violation), so that it can branch there.
  bool stop_at_frontier = false;
  // Tests: every event World::void_forever calls void is checked to change nothing when it
  // runs (the state's fingerprint before and after it is the same). Two fingerprints per void
  // event: too slow for a real search.
  bool check_void_events = false;
  // With stop_at_frontier: at a state where the explorer would take one event alone
  // (ExploreOutcome::alone), take it and go on instead of stopping, and keep what stopping
  // there would have reported (World::passed): the explorer then needs no replay for that
  // state's one child. The search is the same; only the replays are fewer.
  bool continue_alone = false;
  // With continue_alone: a state the explorer has already explored, where a run stops instead
  // of going on (the explorer would take nothing from it).
  std::function<bool(const Fingerprint&)> explored;
  // The playground (docs/contract.md §9.1): stop at the first moment between two events past the
  // schedule (its hand actions due there taken first), to show what can happen next.
  bool stop_at_schedule_end = false;
  // Past the schedule too, choices are made step by step (Schedule::stepwise), option 0 each:
  // the playground's look at the faults that can strike during one event.
  bool stepwise_beyond = false;
  // Keep a record of every choice the run makes (ExploreOutcome::log), with what it is.
  bool log_choices = false;
  // With log_choices: also every place where the playground would offer a choice and this run
  // has none (an event alone, a fault outside the kinds or the budget), as option 0 of it:
  // the log is then the run's schedule taken step by step (play/moment.h stepwise_schedule).
  bool log_every_point = false;
  // Stop past the schedule once this many choices were made (0: no bound): a playground
  // request is bounded in work and in the schedule it sends back.
  size_t choices_max = 0;
  // Keep the event log (World::event_log): every event taken with its footprint and creator,
  // every choice with its options.
  bool log_events = false;
  // Fill ExploreOutcome::preempts at each frontier (a preemption-bounded search).
  bool count_preemptions = false;
  // With log_events, past the schedule: the explorer picks each option itself, reading the
  // log (whose last choice is the one being made, its `enabled` filled for an event). A
  // negative answer stops the run there.
  std::function<int64_t(World&)> chooser;
};

// One choice an explored run made (ExploreControl::log_choices): which option of how many, and
// whether it chose an event (which one is the pending events' business) or a fault.
struct ChoiceRecord {
  size_t position = 0;  // its index among the choices, those past the schedule counted too
  uint32_t options = 0;
  uint32_t taken = 0;
  bool event = false;
  std::string fault_kind;   // a fault choice: its kind's name
  std::string label;        // a fault choice: what striking there does, in words
  size_t trace_events = 0;  // the events in the trace when the choice was made
  bool counted = true;      // false: a place with no choice (ExploreControl::log_every_point)
  int64_t action = -1;      // not a choice: the schedule's hand action of this index was taken
};

// An event that can happen next, in words (the playground's buttons).
struct PendingEvent {
  std::string kind;         // deliver, ack, nack, confirm, publish_nack, relay_poll, ...
  std::string label;        // what happens when it is taken
  std::string participant;  // whose event it is
  MessagePtr message;       // the message it is about, if any
};

// Where an explored run stopped, for the explorer.
struct ExploreOutcome {
  size_t consumed = 0;              // schedule entries used
  int64_t void_events_checked = 0;  // ExploreControl::check_void_events: void events run
  std::vector<uint32_t> defaults;   // past the schedule: each choice's option count (0 was taken)
  bool misfit = false;              // a schedule entry named an option that was not there
  bool at_frontier = false;         // stopped at a state where `enabled` events may happen next
  size_t enabled = 0;
  Fingerprint state;                      // that state's fingerprint
  std::vector<Fingerprint> enabled_jobs;  // what each option there is (fingerprint_job)
  int64_t faults_injected = 0;
  // The last schedule entry chose an event (not a fault): that event (`transition`) and what
  // it and every event after it read or changed (`footprint`, sorted resource ids: each
  // service's database, each instance, each broker queue, each message id's publication
  // record, the fault book). Two events whose footprints are disjoint commute.
  bool recorded = false;
  Fingerprint transition;
  std::vector<uint64_t> footprint;
  // ExploreControl::log_choices: every choice made, in order.
  std::vector<ChoiceRecord> log;
  // Choices made past the schedule (option 0 each): its end plus these is where the run is.
  size_t defaulted = 0;
  // At the frontier, per option: taking it is a preemption (a step of a handler of one
  // instance while a handler another instance started has its next step ready).
  std::vector<uint8_t> preempts;
  // At the frontier: an event that commutes with every event that can still happen in this
  // run (an ack or a publisher confirm no fault left can race), so that taking it alone loses
  // no order: a persistent set of one (docs/model.md, "Exploration"). -1: none.
  int64_t alone = -1;
};

// Dynamic partial-order reduction (fuzz/dpor.cpp) reads a run as a sequence of events with what
// each read or changed, and of the choices that picked them (ExploreControl::log_events).
struct LoggedEvent {
  Fingerprint job;                  // the job's fingerprint when taken; zero for a story point
  std::string_view kind;            // deliver, ack, resume, ... ("story" for a story point)
  std::string_view who;             // the instance it runs on
  std::vector<uint64_t> footprint;  // sorted resource ids it read or changed (ExploreOutcome)
  int64_t creator = -1;             // the event that scheduled the job; -1: the story's start
  int64_t choice = -1;              // the choice (LoggedChoice index) that took it; -1: alone
  // A story step or a hand action: it reads and changes anything, so it is ordered with every
  // event; `pending`: events were pending across it (it did not come at quiescence).
  bool story = false;
  bool pending = false;
  bool violated = false;  // an invariant broke while it ran: ordered with every event
};

// One choice of a logged run: how many options, which was taken, and for an event choice the
// job each option is (World::fingerprint_job, in option order).
struct LoggedChoice {
  bool event = false;
  uint32_t options = 0;
  uint32_t taken = 0;
  std::vector<Fingerprint> enabled;  // past the schedule only
  std::vector<int64_t> born;         // each option's job: the event that scheduled it
  // Past the schedule: an option that commutes with every event that can still happen in this
  // run (ExploreOutcome::alone, a persistent set of one); -1: none.
  int64_t alone = -1;
};

struct EventLog {
  std::vector<LoggedEvent> events;
  std::vector<LoggedChoice> choices;
  // A logged run goes on past a violation (the explorer reads the events after it for races);
  // for each violation in order, the event it broke in (-1: between events), and how many
  // choices had been made when the first broke.
  std::vector<int64_t> violation_events;
  size_t choices_at_violation = 0;
  Coverage coverage_at_violation;  // the probes reached when the first broke
};

// A state an explored run went through with ExploreControl::continue_alone: what the run
// would have reported had it stopped there.
struct PassedState {
  ExploreOutcome outcome;        // at_frontier; the run went on with option `alone`
  Coverage coverage;             // the probes reached up to that state
  bool assumptions_held = true;  // World::persistent_sets_assumptions_held there
};

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
  size_t actions_taken() const { return next_action_; }
  // Whether the story is stopped at a moment with events pending.
  bool events_pending() const { return !scheduler_.empty(); }
  int64_t clock_ms() const { return now_ms(); }
  // Every queue's messages now (Broker::contents), the instances and the indexes dropped.
  std::vector<QueueEntry> queue_contents() const { return broker_.contents(); }
  struct InstanceState {
    std::string_view name;
    bool up = true;
    bool paused = false;
  };
  std::vector<InstanceState> instance_states() const;
  std::vector<IndexName> dropped_indexes() const;
  std::vector<std::string> parking_queues() const { return broker_.parking_queues(); }
  // The envelope of each message published so far, by message id (a hand publish's template).
  std::map<std::string, std::string> envelopes() const { return publications_.envelopes(); }

  Trace& trace() { return trace_; }

  // Exploration: whether the run stopped for the explorer, and where.
  bool exploration_stopped() const { return explore_stop_; }
  // What persistent sets of one event (ExploreOutcome::alone) assume and this run has kept to so
  // far: no queue has made as many deliveries as the prefetch (so no consumer was ever full and
  // an ack never decided who got a message), and no relay met a full batch of outbox rows.
  bool persistent_sets_assumptions_held() const;
  const ExploreOutcome& explore_outcome() const { return explore_outcome_; }
  // ExploreControl::continue_alone: the states passed through, in order; explore_outcome()
  // then reports the last stretch, from the event taken alone at the last of them.
  const std::vector<PassedState>& passed() const { return passed_; }
  // The coverage probes reached so far.
  const Coverage& coverage() const { return coverage_.coverage(); }
  // The invariants found broken so far (safety ones, during the run).
  const std::vector<Violation>& violations() const { return checker_.violations(); }
  // The fingerprint of the state between two events: the databases' rows and schema, the
  // broker's queues, what is on the wire, every instance and waiting handler, the locks, the
  // fault book. Equal fingerprints, equal futures (docs/model.md, "Exploration").
  Fingerprint fingerprint();
  // ExploreControl::log_events: the run so far as events and choices.
  const EventLog& event_log() const { return log_; }
  // ExploreControl::log_events: a story step (not a run) is about to be played; it is logged
  // as an event ordered with every other.
  void story_point();

 private:
  class InstanceHost;
  friend class InstanceHost;

  // What a scheduled job does when its time comes. Each job carries only the fields its kind
  // reads (Job's named constructors say which).
  enum class JobKind : uint8_t {
    deliver,            // a delivery reaches its consumer
    ack,                // an ack reaches the broker
    nack,               // a nack reaches the broker
    confirm,            // a publisher confirm reaches a relay
    publish_nack,       // the broker's nack of a publish reaches a relay
    relay_poll,         // a relay polls the outbox
    account_sweep,      // account-service's outbox delivery loop
    restart,            // a crashed instance comes back
    reconnect,          // an instance reopens a closed connection
    resume,             // a handler's next step begins
    heartbeat_timeout,  // the broker gives up on a silent connection
    pause_end,          // a paused instance goes on
    retry,              // a faulted handler's next attempt begins (account.retry)
  };
  struct Job {
    JobKind kind = JobKind::deliver;
    size_t instance = 0;       // the instance the job belongs to
    uint64_t incarnation = 0;  // its incarnation when scheduled: a crash voids the job
    size_t consumer = 0;       // deliver, ack, nack, reconnect: the broker consumer
    uint64_t channel = 0;      // ack, nack: the channel the delivery came on; confirm: the relay's
    int64_t delivery_id = 0;   // deliver: the delivery on the wire
    int64_t delivery_tag = 0;  // ack, nack
    int64_t outbox_seq = 0;    // confirm, publish_nack
    uint64_t handler = 0;      // resume, retry
    int64_t born = -1;         // the logged event that scheduled it (ExploreControl::log_events)

    // A job of `instance`, voided by a crash when `incarnation` is given.
    static Job of_instance(JobKind kind, size_t instance, uint64_t incarnation = 0) {
      Job job;
      job.kind = kind;
      job.instance = instance;
      job.incarnation = incarnation;
      return job;
    }
  };

  // A reconnect job that reopens every closed connection of its instance.
  static constexpr size_t kAllConsumers = static_cast<size_t>(-1);

  // Which consumer of an instance a broker consumer is.
  enum class ConsumerRole : uint8_t { account, saga, notifications };
  struct ConsumerInfo {
    size_t instance = 0;
    ConsumerRole role = ConsumerRole::account;
    std::string_view participant;
  };

  // One process of a service (docs/contract.md §8.1): its liveness, its consumers, its service object on
  // its own connection, and the host through which that object reaches the world.
  struct Instance {
    ServiceId service = ServiceId::account;
    int64_t number = 1;
    InstanceNames names;
    bool up = true;
    uint64_t incarnation = 1;
    int64_t restart_after_ms = 1000;
    int64_t paused_until_ms = -1;  // paused while now < paused_until_ms
    int64_t pause_started_ms = 0;
    int64_t connected_ms = 0;  // when its broker connection last opened: the heartbeat's phase
    uint64_t publish_channel = 1;  // the relay's publishing channel; a closed one voids confirms
    bool relay_poll_scheduled = false;
    bool sweep_scheduled = false;
    std::vector<size_t> consumers;  // broker consumer indices
    std::unique_ptr<InstanceHost> host;
    std::unique_ptr<AccountService> account;
    std::unique_ptr<TransferService> transfer;
  };

  // A delivery being handled: the handler runs in steps until it acks or nacks. A faulted
  // account-service handler waiting for its retry stays here, with no task, until it starts.
  struct ActiveHandler {
    size_t instance = 0;
    Delivery delivery;
    Task<Outcome> task;
    size_t attempt = 0;   // 0 for the first, then one per retry
    uint64_t resume = 0;  // where it waits and what it still needs (ServiceHost::between_steps)
    std::string next_step;  // what it does when it goes on (ServiceHost::between_steps)
  };

  // Wiring.
  void add_instances(ServiceId service, int64_t count, const WorldOptions& options);
  void add_consumers();

  // The event loop.
  bool step_once();
  void dispatch(const Job& job);
  bool deferred_by_pause(const Job& job);
  void on_deliver(const Job& job);
  void start_handler(size_t instance, const Delivery& delivery, size_t attempt);
  void handler_faulted(ActiveHandler handler, std::string_view reason, bool cancelled = false);
  bool cancelled_by_close(const ActiveHandler& handler) const;
  void cancel_handler(uint64_t handler);
  void on_retry(uint64_t handler);
  void move_to_error_queue(const ActiveHandler& handler, std::string_view reason);
  void run_handler(uint64_t handler);
  void finish_handler(uint64_t handler);
  void on_ack(const Job& job, bool is_nack);
  void on_confirm(const Job& job);
  void on_publish_nack(const Job& job);
  void relay_channel_closed(size_t instance, const Message& message);
  void publish_refused(std::string_view publisher, const Message& message);
  void on_relay_poll(const Job& job);
  void on_account_sweep(const Job& job);
  void on_restart(size_t instance);
  void on_reconnect(const Job& job);
  void on_heartbeat_timeout(const Job& job);
  void on_pause_end(size_t instance);

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
  // When the broker's heartbeat closes the connection of an instance paused now (docs/contract.md §9.0).
  int64_t heartbeat_close_ms(const Instance& instance) const;
  // Closes the first channel whose consumer timeout is due no later than `until_ms`, moving the
  // clock there; false when none is (or the timeout is off, or there is no clock).
  bool consumer_timeout_due(int64_t until_ms);
  void close_instance_connections(size_t instance, const std::string& reason);
  template <typename Fn>
  void guarded(size_t instance, Fn&& fn);

  // Exploration: the next choice among `options` (docs/contract.md §8.3); `event` when it chooses which
  // pending event happens next (step by step, even one is a choice).
  uint32_t choose(size_t options, bool event = false);
  // Whether the next choice is made step by step (Schedule::stepwise, the playground's moves).
  bool stepwise_now() const;
  // A run with a clock whose events are still chosen (Schedule::clocked).
  bool clocked() const { return explore_.enabled && explore_.schedule.clocked; }
  bool clockless() const { return explore_.enabled && !explore_.schedule.clocked; }
  // How many pending events a choice is among: every one without a clock, those due first with.
  size_t choosable() const;
  PendingEvent describe_job(const Job& job) const;
  void log_fault_point(FaultKind kind, ServiceId service, int64_t instance,
                       std::optional<CrashPoint> point, const Message* message);
  std::string fault_label(FaultKind kind, ServiceId service, int64_t instance,
                          std::optional<CrashPoint> point, const Message* message) const;
  std::string pending_label_;  // the fault choice being made, for the log
  std::string pending_kind_;
  size_t next_action_ = 0;      // the schedule's hand actions taken so far
  std::map<IndexName, std::vector<std::string>> dropped_;  // what drop_index removed
  // A scripted fault of `kind` that fires on this event, or, in an exploration with faults
  // left, one the explorer chooses to inject here.
  std::optional<FaultSpec> take_fault(FaultKind kind, ServiceId service, int64_t instance,
                                      const Message& message);
  std::optional<FaultSpec> take_fault_at(FaultKind kind, ServiceId service, int64_t instance,
                                         CrashPoint point, const Message* message);
  bool may_inject(FaultKind kind) const;
  std::optional<FaultSpec> inject_fault(FaultKind kind, ServiceId service, int64_t instance);
  Fingerprint fingerprint_job(const Job& job) const;
  static std::string_view job_kind_word(JobKind kind);
  Fingerprint fingerprint_handler(uint64_t handler) const;
  Fingerprint fingerprint_delivery(const Delivery& delivery) const;

  // Acks, nacks and publishing.
  void send_ack(const ActiveHandler& handler);
  void send_nack(const Delivery& delivery, std::string reason);
  bool ack_void(const Delivery& delivery, std::string_view verb);
  void pump();
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
    job.born = in_event_ ? current_event_ : story_event_;
    scheduler_.schedule_at(time_ms, job);
  }
  // Schedules a periodic loop's next turn on an instance and marks it pending.
  // REQUIRES: no turn is pending and the instance is up.
  void schedule_loop(size_t instance, JobKind kind, bool& pending, int64_t delay_ms);
  void maybe_cleanup();
  void on_cleanup(int64_t tick_ms);
  void record_cleanup(std::string_view service, int64_t deleted, std::string detail);

  // Observation.
  void record(TraceEvent event);
  bool paused(const Instance& instance) const { return now_ms() < instance.paused_until_ms; }
  std::optional<size_t> available_instance(ServiceId service);
  Instance& first_instance(ServiceId service);
  RowLocks& locks_of(ServiceId service) { return locks_[static_cast<size_t>(service)]; }

  // Configuration and randomness.
  Config config_;
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
  Broker broker_;
  std::vector<ConsumerInfo> consumers_;    // by broker consumer index
  size_t account_error_queue_ = 0;         // account-service_error
  std::map<int64_t, Delivery> in_flight_;  // deliveries on the wire, by id
  std::map<std::pair<size_t, int64_t>, MessagePtr> awaiting_confirm_;  // (instance, outbox seq)
  int64_t next_delivery_id_ = 1;
  std::vector<Delivery> dispatched_;  // scratch for pump()

  // The services: their databases, their instances, what the instances share.
  std::array<std::unique_ptr<SharedDatabase>, 2> databases_;
  std::vector<Instance> instances_;
  std::array<ExternalSeenStore, 2> seen_stores_;
  std::array<RowLocks, 2> locks_;
  std::map<uint64_t, ActiveHandler> handlers_;  // by handler id, in start order
  uint64_t next_handler_id_ = 1;
  uint64_t current_handler_ = 0;  // the handler running now, 0 outside handlers
  size_t next_request_instance_ = 0;

  // The rows behind the views (issue 13); null unless a view asked for them. Declared after
  // the instances so that it is destroyed first, while their connections still hold its hooks.
  std::unique_ptr<RowRecorder> rows_;

  // Faults and the run's progress.
  FaultBook faults_;
  uint64_t next_message_number_ = 1;
  bool quiescent_ = true;
  // Set when the run stopped at a bound that is not the event count (a poison message looping
  // on a classic queue): why, for the termination report.
  std::string halted_reason_;
  int64_t next_cleanup_ms_ = kCleanupIntervalMs;

  // Exploration.
  static constexpr uint64_t kMintResource = uint64_t{6} << 56;  // the message-id counter
  void touch(uint64_t resource) {
    if (recording_) explore_outcome_.footprint.push_back(resource);
    if (in_event_) event_touches_.push_back(resource);
  }
  // Whether what an event reads or changes is being written down (for the explorer).
  bool footprinting() const { return recording_ || in_event_; }
  bool commutes_with_the_rest(const Job& job) const;
  bool live_step(const Job& job) const;
  bool void_forever(const Job& job) const;
  int64_t largest_relayed_seq_ = 0;
  void touch_instance(size_t instance);
  void touch_database(ServiceId service);
  ExploreControl explore_;
  ExploreOutcome explore_outcome_;
  std::vector<PassedState> passed_;
  // Takes the `option`-th pending event and runs it (an explored run's step).
  void take_and_dispatch(size_t option);
  bool explore_stop_ = false;
  bool recording_ = false;
  // ExploreControl::log_events.
  EventLog log_;
  bool in_event_ = false;
  int64_t current_event_ = -1;  // the event running now (in_event_)
  int64_t story_event_ = -1;    // the last story point: what a job scheduled outside events follows
  int64_t next_event_choice_ = -1;  // the choice that took the event about to run
  std::vector<uint64_t> event_touches_;
  std::vector<Fingerprint> enabled_now_;  // the event choice being made: each option's job
  int64_t alone_now_ = -1;
  std::vector<int64_t> born_now_;
};

}  // namespace inboxsim
