// The explorer's driver of one run (docs/contract.md §8.3): it owns what the explorer asked of
// the run (ExploreControl) and everything the run tells it back (ExploreOutcome, the states it
// passed through, the event log), makes every choice (which pending event, whether a fault
// strikes), and writes down what each event read or changed (its footprint).
//
// It knows nothing of jobs, instances or the broker: World computes what a choice is among (a
// job's fingerprint, whether it commutes with the rest) and hands it in, then takes the option
// the driver returns and dispatches it. Outside an exploration every query here is one branch
// on a flag, and nothing is allocated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "domain/coverage.h"
#include "domain/scenario.h"
#include "kernel/assert.h"
#include "kernel/footprint.h"
#include "kernel/fingerprint.h"
#include "world/explore_control.h"

namespace inboxsim {

class World;

class ExploreDriver {
 public:
  explicit ExploreDriver(ExploreControl control) : control_(std::move(control)) {}

  const ExploreControl& control() const { return control_; }
  bool enabled() const { return control_.enabled; }
  // A run with a clock whose events are still chosen (Schedule::clocked), and one without.
  bool clocked() const { return control_.enabled && control_.schedule.clocked; }
  bool clockless() const { return control_.enabled && !control_.schedule.clocked; }
  // Whether the run stopped for the explorer (or the playground).
  bool stopped() const { return stop_; }
  void stop() { stop_ = true; }

  const ExploreOutcome& outcome() const { return outcome_; }
  const std::vector<PassedState>& passed() const { return passed_; }
  const EventLog& log() const { return log_; }

  // ---- footprints ----
  // Writes down that the event running now reads or changes `resource` (kernel/footprint.h).
  void touch(uint64_t resource, Access access = Access::write) {
    const uint64_t entry = footprint_entry(resource, access);
    if (recording_) outcome_.footprint.push_back(entry);
    if (in_event_) event_touches_.push_back(entry);
  }
  // Whether what an event reads or changes is being written down.
  bool footprinting() const { return recording_ || in_event_; }
  // Whether the footprint of the explorer's node (ExploreOutcome::footprint) is being recorded.
  bool recording() const { return recording_; }
  // The node's own event, `transition`, is about to run: from here on, everything read or
  // changed is its footprint (World clears the broker's record of touched queues with it).
  void start_recording(Fingerprint transition);
  // A logged event (ExploreControl::log_events) begins; it takes the choice that picked it.
  void begin_event(LoggedEvent event);
  // The logged event ended, having touched in the broker what `touched` says.
  void end_event(const BrokerTouches& touched);
  bool in_event() const { return in_event_; }
  // ExploreControl::check_void_events: a void event was run and changed nothing.
  void void_event_checked() { ++outcome_.void_events_checked; }
  // The logged event that a job scheduled now follows (LoggedEvent::creator).
  int64_t born() const { return in_event_ ? current_event_ : story_event_; }
  // ExploreControl::log_events: a story step or hand action, ordered with every other event.
  void story_point(bool events_pending);
  // An invariant broke: an explorer branches no further, a logged run notes where.
  void violation(const Coverage& coverage);

  // ---- the frontier ----
  // The playground's moment (the schedule is spent, or the bound on choices is reached): what
  // happens next is the page's to choose.
  bool at_playground_stop() const;
  // The explorer's frontier: the schedule is spent and `enabled` events may happen next.
  bool at_frontier(size_t enabled) const {
    return control_.stop_at_frontier && enabled > 1 &&
           outcome_.consumed == control_.schedule.choices.size();
  }
  // The next choice is the schedule's last one, and chooses among `enabled` events.
  bool last_choice(size_t enabled) const {
    return enabled > 1 && outcome_.consumed + 1 == control_.schedule.choices.size();
  }
  bool counts_preemptions() const { return control_.count_preemptions; }
  // Stops at the frontier: `enabled` options, the state there is `state`.
  void mark_frontier(size_t enabled, Fingerprint state);
  // One option of the frontier, in option order: its job's fingerprint, whether it commutes with
  // every event still possible, and (counts_preemptions) whether taking it is a preemption.
  void add_frontier_option(Fingerprint job, bool commutes, bool preempts);
  // counts_preemptions: the frontier's runner (ExploreOutcome::running).
  void mark_running(int64_t instance) { outcome_.running = instance; }
  // counts_preemptions: an event of the recorded stretch was not inert (ExploreOutcome::inert).
  void not_inert() {
    if (recording_) outcome_.inert = false;
  }
  // log_events, counting preemptions: the event running now is inert (LoggedEvent::inert).
  void event_inert() {
    if (in_event_) log_.events[static_cast<size_t>(current_event_)].inert = true;
  }
  // The frontier's footprint is complete: adds what the broker says it touched, sorted.
  void finish_frontier_footprint(const BrokerTouches& touched);
  // ExploreControl::continue_alone: whether the run takes the frontier's one commuting option
  // and goes on instead of stopping.
  bool continues_alone() const;
  // Keeps what stopping here would have said and starts the next stretch; returns the option
  // to take.
  size_t continue_alone(const Coverage& coverage, bool assumptions_held);

  // ---- choices ----
  // Whether a chooser picks the next event (past the schedule, with log_events): it is then
  // told each option first (add_chooser_option, in option order, after begin_chooser_options).
  bool chooser_picks() const {
    return control_.log_events && control_.chooser &&
           outcome_.consumed >= control_.schedule.choices.size();
  }
  void begin_chooser_options();
  // `step_of`: the instance whose live step the option is, -1 if none (counts_preemptions).
  void add_chooser_option(Fingerprint job, int64_t born, bool commutes, int32_t step_of);
  // counts_preemptions: who took the last live step, and whether it has a step ready now.
  void mark_chooser_runner(int64_t runner, bool ready) {
    runner_now_ = runner;
    runner_ready_now_ = ready;
  }
  // The next choice among `options` (docs/contract.md §8.3); `event` when it chooses which
  // pending event happens next. `trace_events` is the trace's length (for the log), `world` is
  // what the chooser reads; a schedule entry that does not fit stops the run and says why in
  // `halted_reason`.
  uint32_t choose(size_t options, bool event, size_t trace_events, World& world,
                  std::string& halted_reason);
  size_t choices_logged() const { return log_.choices.size(); }
  // The event about to run was taken by the choice logged at `choices_before`, if one was.
  void taken_by_choice_since(size_t choices_before) {
    next_event_choice_ = log_.choices.size() > choices_before
                             ? static_cast<int64_t>(choices_before)
                             : -1;
  }
  // ExploreControl::log_choices: the event choice just made, in words.
  bool wants_event_label(size_t option, size_t options) const {
    return control_.log_choices && !outcome_.log.empty() && outcome_.log.back().event &&
           option < options;
  }
  void label_event_choice(std::string label) { outcome_.log.back().label = std::move(label); }

  // ---- faults ----
  // Whether the next choice is made step by step (Schedule::stepwise, the playground's moves).
  bool stepwise_now() const;
  // Whether the explorer may inject a fault of `kind` at this point.
  bool may_inject(FaultKind kind) const;
  // Whether a fault of `kind` the explorer injects may still strike in this run.
  bool budget_may_strike(FaultKind kind) const {
    return outcome_.faults_injected < control_.schedule.faults &&
           control_.schedule.fault_kinds[static_cast<size_t>(kind)];
  }
  // A fault was injected (the playground's step-by-step ones are its moves, not the budget).
  void injected(bool stepwise) {
    if (!stepwise) ++outcome_.faults_injected;
  }
  // ExploreControl::log_choices: a place where a fault of `kind` could strike. With the kind
  // injectable here, what striking does (`label`) is kept for the choice the injection makes;
  // otherwise, with log_every_point, the place is logged as a choice not counted.
  bool logs_fault_points() const { return control_.log_choices; }
  void fault_choice_words(FaultKind kind, std::string label);
  void uncounted_fault_point(FaultKind kind, size_t trace_events);

  // ---- ack wait expiries ----
  // Whether an ack wait may still run out as a choice: a run without a clock whose budget of
  // them (Schedule::ack_wait_expiries) is not spent.
  bool ack_wait_may_expire() const {
    return clockless() && outcome_.ack_wait_expiries < control_.schedule.ack_wait_expiries;
  }
  // REQUIRES: ack_wait_may_expire().
  void ack_wait_expired() {
    INBOXSIM_ASSERT(ack_wait_may_expire());
    ++outcome_.ack_wait_expiries;
  }

  // ---- the playground's hand actions ----
  // How many choices the run has made, past the schedule too (where a hand action is due).
  size_t position() const { return outcome_.consumed + outcome_.defaulted; }
  // Whether the schedule's next hand action is due at `position`.
  bool action_due(size_t at) const {
    return next_action_ < control_.schedule.actions.size() &&
           control_.schedule.actions[next_action_].at <= at;
  }
  // Takes the hand action due (logging it, ExploreControl::log_choices) and returns its step.
  // REQUIRES: action_due(at).
  const Step& take_action(size_t at, size_t trace_events);
  size_t actions_taken() const { return next_action_; }

 private:
  ExploreControl control_;
  ExploreOutcome outcome_;
  std::vector<PassedState> passed_;
  bool stop_ = false;
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
  std::vector<int32_t> step_of_now_;
  int64_t runner_now_ = -1;
  bool runner_ready_now_ = false;
  std::string pending_label_;  // the fault choice being made, for the log
  std::string pending_kind_;
  size_t next_action_ = 0;  // the schedule's hand actions taken so far
};

}  // namespace inboxsim
