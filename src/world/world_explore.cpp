// World's side of an explored run: which pending events a choice is among, what each of them
// is (a job's fingerprint, whether it commutes with the rest), taking the option the explorer's
// driver (world/explore_driver.h) returns, and the footprint of what an event touched.
#include <algorithm>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

#include "kernel/assert.h"
#include "world/world.h"

namespace inboxsim {

// One step of an explored run (World::step_once outside the fast path of a plain run).
bool World::explored_step() {
  // With a clock, a consumer timeout due first closes its channel before any choice (as in a
  // run), so that the moment shown and its replays agree on what is pending.
  if (clocked() && consumer_timeout_due(scheduler_.next_time_ms())) return true;
  if (explorer_.at_playground_stop()) {
    // The playground's moment: what can happen next is the page's to choose.
    explorer_.stop();
    return false;
  }
  const size_t enabled = choosable();
  if (explorer_.at_frontier(enabled)) return at_frontier(enabled);
  const bool last_choice = explorer_.last_choice(enabled);
  const size_t choices_before = explorer_.choices_logged();
  if (explorer_.chooser_picks()) {
    explorer_.begin_chooser_options();
    if (explorer_.counts_preemptions()) explorer_.mark_chooser_runner(runner_, runner_ready());
    for (const Job& job : scheduler_.pending()) {
      const int32_t step_of = explorer_.counts_preemptions() && live_step(job)
                                  ? static_cast<int32_t>(job.instance)
                                  : -1;
      explorer_.add_chooser_option(fingerprint_job(job), job.born, commutes_with_the_rest(job),
                                   step_of);
    }
  }
  const size_t option = choose(enabled, true);
  explorer_.taken_by_choice_since(choices_before);
  if (explorer_.wants_event_label(option, enabled)) {
    explorer_.label_event_choice(describe_job(scheduler_.pending()[option]).label);
  }
  if (explorer_.stopped()) return false;  // the schedule did not fit
  if (last_choice && explorer_.control().stop_at_frontier) {
    // The node's own event: from here on, everything read or changed is its footprint.
    explorer_.start_recording(fingerprint_job(scheduler_.pending()[option]));
    broker_->take_touched();
  }
  take_and_dispatch(option);
  return true;
}

// The explorer's frontier: several events may happen next and the schedule is spent. The run
// stops here for the explorer to branch, or takes the one event that commutes with the rest.
bool World::at_frontier(size_t enabled) {
  explorer_.mark_frontier(enabled, fingerprint());
  // Preemptions (ExploreSettings::preemptions): a step of another instance's handler while the
  // runner has its next step ready switches away from it.
  int64_t runner = -1;
  if (explorer_.counts_preemptions()) {
    if (runner_ready()) runner = runner_;
    explorer_.mark_running(runner_);
  }
  bool some_step_does_not_preempt = false;
  for (const Job& job : scheduler_.pending()) {
    const bool preempts =
        runner >= 0 && job.instance != static_cast<size_t>(runner) && live_step(job);
    some_step_does_not_preempt = some_step_does_not_preempt || !preempts;
    explorer_.add_frontier_option(fingerprint_job(job), commutes_with_the_rest(job), preempts);
  }
  // No order is stranded with only preemptions left: the runner's own step never is one.
  INBOXSIM_ASSERT(some_step_does_not_preempt);
  if (explorer_.recording()) explorer_.finish_frontier_footprint(broker_->take_touched());
  if (explorer_.continues_alone()) {
    const size_t option =
        explorer_.continue_alone(coverage(), persistent_sets_assumptions_held());
    broker_->take_touched();
    take_and_dispatch(option);
    return true;
  }
  explorer_.stop();
  return false;
}

void World::take_and_dispatch(size_t option) {
  const Job job = clocked() ? scheduler_.take_due(option) : scheduler_.take(option);
  // A bounded search: the runner, and whether the event is inert (ExploreOutcome::inert).
  std::vector<ReadyStep> ready_before;
  const bool live = explorer_.counts_preemptions() && live_step(job);
  const bool compare_ready = explorer_.counts_preemptions() &&
                             (explorer_.recording() || (explorer_.control().log_events && !live));
  if (explorer_.counts_preemptions()) {
    if (live) {
      runner_ = static_cast<int64_t>(job.instance);
      explorer_.not_inert();
    }
    if (compare_ready) ready_before = steps_ready();
  }
  if (clocked()) maybe_cleanup();
  if (explorer_.control().log_events) {
    LoggedEvent event;
    event.job = fingerprint_job(job);
    event.kind = job_kind_word(job.kind());
    const std::optional<size_t> consumer = job.on_consumer();
    event.who = consumer ? processes_.consumer(*consumer).participant
                         : std::string_view(processes_.at(job.instance).names.service);
    event.creator = job.born;
    explorer_.begin_event(std::move(event));
    broker_->take_touched();
  }
  if (explorer_.control().check_void_events && void_forever(job)) {
    // void_forever mirrors the early return of each job's handler; this is where the two are
    // held to each other. (A fingerprint only reads: it adds nothing to the footprint.)
    const Fingerprint before = fingerprint();
    dispatch(job);
    INBOXSIM_ASSERT(fingerprint() == before);
    explorer_.void_event_checked();
  } else {
    dispatch(job);
  }
  // The footprint leaves out the queues a pump did not dispatch from; that is sound only
  // because nothing is ever left dispatchable after an event.
  INBOXSIM_ASSERT(!broker_->dispatchable());
  if (compare_ready) {
    if (steps_ready() != ready_before) {
      explorer_.not_inert();
    } else if (!live) {
      explorer_.event_inert();
    }
  }
  if (explorer_.in_event()) explorer_.end_event(broker_->take_touched());
}

void World::story_point() { explorer_.story_point(!scheduler_.empty()); }

// Persistent sets of one event (docs/model.md, "Exploration", where the argument is): an ack
// or a confirm that no event still possible in this run can race. Past the story's armed faults
// and the explorer's fault budget (or outside the kinds it injects), nothing closes the channel
// an ack travels on, so an ack only takes its delivery off the consumer's unacked list; no
// consumer is ever full (checked: persistent_sets_assumptions_held), so that never decides who
// gets a message. A confirm marks its outbox row sent; with one transfer-service instance its
// relay is the only reader of that row, it skips a row it awaits a confirm for, and it never
// reads a full batch (checked), so it does the same before the confirm as after it.
bool World::commutes_with_the_rest(const Job& job) const {
  const auto may_strike = [&](FaultKind kind) {
    return faults_.armed(kind) || explorer_.budget_may_strike(kind);
  };
  if (void_forever(job)) return true;
  // On JetStream an ack races an ack wait running out (which of the two comes first decides
  // whether the message goes again), and any consumer may be full: nothing commutes.
  if (broker_->leases_end_by_timer()) return false;
  switch (job.kind()) {
    case JobKind::ack:
      return !may_strike(FaultKind::crash) && !may_strike(FaultKind::drop_connection) &&
             !may_strike(FaultKind::drop_ack) && !may_strike(FaultKind::pause);
    case JobKind::confirm:
      return config_.transfer_instances == 1 && !may_strike(FaultKind::crash) &&
             !may_strike(FaultKind::lose_confirm) && !may_strike(FaultKind::pause);
    default: return false;
  }
}

// A job whose target is gone, for good: it will do nothing when it runs, whatever happens
// first. Channels never reopen (a reconnect opens a new one), handler ids and incarnations are
// never reused. Each case mirrors the early return of the job's handler (on_ack, on_confirm,
// on_publish_nack, on_deliver, run_handler's caller, on_retry, on_relay_poll, on_account_sweep).
bool World::void_forever(const Job& job) const {
  const Process& instance = processes_.at(job.instance);
  const bool crashed_since = instance.incarnation != job.incarnation;
  return std::visit(
      job::Overloaded{
          [&](const job::Ack& ack) {
            return !broker_->channel_still_open(ack.consumer, ack.channel);
          },
          [&](const job::Nack& nack) {
            return !broker_->channel_still_open(nack.consumer, nack.channel);
          },
          [&](const job::Confirm& confirm) { return confirm.channel != instance.publish_channel; },
          [&](const job::PublishNack& nack) {
            return crashed_since || instance.publish_channel != nack.channel;
          },
          [&](const job::Deliver& deliver) {
            const Delivery& delivery = wire_.at(deliver.delivery_id);
            return !broker_->channel_still_open(delivery.consumer, delivery.channel);
          },
          [&](const job::Resume& resume) { return !handlers_.contains(resume.handler); },
          [&](const job::Retry& retry) { return !handlers_.contains(retry.handler); },
          [&](const job::RelayPoll&) { return crashed_since; },
          [&](const job::AccountSweep&) { return crashed_since; },
          [&](const job::DurabilityPoll&) { return crashed_since; },
          [](const auto&) { return false; },
      },
      job.payload);
}

// The next step of a handler that is still alive: what a preemption switches away from.
bool World::live_step(const Job& job) const {
  return job.kind() == JobKind::resume && !void_forever(job);
}

bool World::runner_ready() const {
  const std::vector<ReadyStep> ready = steps_ready();
  return std::any_of(ready.begin(), ready.end(), [&](const ReadyStep& step) {
    return static_cast<int64_t>(step.instance) == runner_;
  });
}

std::vector<World::ReadyStep> World::steps_ready() const {
  std::vector<ReadyStep> ready;
  for (const Job& job : scheduler_.pending()) {
    if (live_step(job)) ready.push_back({std::get<job::Resume>(job.payload).handler, job.instance});
  }
  std::sort(ready.begin(), ready.end(),
            [](const ReadyStep& a, const ReadyStep& b) { return a.handler < b.handler; });
  return ready;
}

bool World::persistent_sets_assumptions_held() const {
  return !broker_->a_consumer_could_have_filled() &&
         confirms_.largest_relayed_seq() < TransferService::kRelayBatchRows;
}

void World::touch_instance(size_t instance, Access access) {
  touch(resource_id(ResourceClass::instance, instance), access);
}

void World::touch_database(ServiceId service) {
  touch(resource_id(ResourceClass::database, static_cast<uint64_t>(service)));
}

void World::touch_loop(size_t instance, Loop loop, Access access) {
  touch(resource_id(ResourceClass::loop, instance << 2 | static_cast<uint64_t>(loop)), access);
}

void World::touch_publish_channel(size_t instance, Access access) {
  touch(resource_of(ResourceClass::loop, instance, "publish channel"), access);
}

void World::touch_incarnation(size_t instance, Access access) {
  touch(resource_of(ResourceClass::instance, instance, "incarnation"), access);
}

// A job void for good (void_forever) changes nothing wherever it comes from now on; of the
// state it reads only what made it void, which only the events that void it write (a crash,
// the relay's channel closing): that is its footprint. The footprint it has when it acts would
// race it with events it commutes with once void: a restart, the next poll that publishes the
// row its confirm was for, the new channel's confirm of that row.
// Asked of every event an explorer footprints: the kind first, so that the jobs it never
// covers do not pay for void_forever's look-ups.
bool World::touch_voidness(const Job& job) {
  const JobKind kind = job.kind();
  const bool channel = kind == JobKind::confirm || kind == JobKind::publish_nack;
  const bool incarnation = kind == JobKind::publish_nack || kind == JobKind::relay_poll ||
                           kind == JobKind::account_sweep || kind == JobKind::durability_poll;
  // An ack's, a nack's or a delivery's closed channel is the broker's to tell (a restart opens
  // new ones); a handler's end, its instance's: they keep the footprint they would act with.
  if (!channel && !incarnation) return false;
  if (!explorer_.control().void_footprints || !void_forever(job)) return false;
  if (channel) touch_publish_channel(job.instance, Access::read);
  if (incarnation) touch_incarnation(job.instance, Access::read);
  return true;
}

void World::touch_awaited(size_t instance, int64_t outbox_seq) {
  touch(resource_of(ResourceClass::loop, instance, "awaits a confirm", std::to_string(outbox_seq)));
}

void World::touch_row_lock(ServiceId service, const std::string& key) {
  if (footprinting()) {
    touch(resource_of(ResourceClass::row_lock, static_cast<uint64_t>(service), key));
  }
}

void World::touch_row_locks_of(ServiceId service, uint64_t handler) {
  if (!footprinting()) return;
  for (const std::string& key : locks_of(service).keys_of(handler)) touch_row_lock(service, key);
}

size_t World::choosable() const { return clocked() ? scheduler_.due_count() : scheduler_.size(); }

uint32_t World::choose(size_t options, bool event) {
  return explorer_.choose(options, event, trace_.events().size(), *this, halted_reason_);
}

}  // namespace inboxsim
