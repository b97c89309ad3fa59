#include "world/explore_driver.h"

#include <algorithm>
#include <utility>

#include "kernel/assert.h"

namespace inboxsim {

namespace {

// Adds what the broker says it touched to `footprint`, then sorts it without repeats.
void close_footprint(std::vector<uint64_t>& footprint, const BrokerTouches& touched) {
  for (uint64_t index = 0; index < 64; ++index) {
    const uint64_t bit = uint64_t{1} << index;
    if ((touched.queues & bit) != 0) {
      footprint.push_back(footprint_entry(resource_id(ResourceClass::queue, index), Access::write));
    }
    if (((touched.channels_read | touched.channels_written) & bit) != 0) {
      const Access access = (touched.channels_written & bit) != 0 ? Access::write : Access::read;
      footprint.push_back(footprint_entry(resource_id(ResourceClass::channels, index), access));
    }
  }
  std::sort(footprint.begin(), footprint.end());
  footprint.erase(std::unique(footprint.begin(), footprint.end()), footprint.end());
}

}  // namespace

void ExploreDriver::start_recording(Fingerprint transition) {
  outcome_.recorded = true;
  outcome_.transition = transition;
  recording_ = true;
}

void ExploreDriver::begin_event(LoggedEvent event) {
  event.choice = std::exchange(next_event_choice_, -1);
  current_event_ = static_cast<int64_t>(log_.events.size());
  log_.events.push_back(std::move(event));
  in_event_ = true;
  event_touches_.clear();
}

void ExploreDriver::end_event(const BrokerTouches& touched) {
  INBOXSIM_ASSERT(in_event_);
  std::vector<uint64_t>& footprint = event_touches_;
  close_footprint(footprint, touched);
  log_.events[static_cast<size_t>(current_event_)].footprint = std::move(footprint);
  footprint.clear();
  in_event_ = false;
}

void ExploreDriver::story_point(bool events_pending) {
  if (!control_.log_events) return;
  LoggedEvent event;
  event.kind = "story step";
  event.story = true;
  event.pending = events_pending;
  story_event_ = static_cast<int64_t>(log_.events.size());
  log_.events.push_back(std::move(event));
}

void ExploreDriver::violation(const Coverage& coverage) {
  // The explorer branches no further from a broken state: this order is a counterexample.
  if (control_.stop_at_frontier) stop_ = true;
  if (!control_.log_events) return;
  if (log_.violation_events.empty()) {
    log_.choices_at_violation = log_.choices.size();
    log_.coverage_at_violation = coverage;
  }
  log_.violation_events.push_back(in_event_ ? current_event_ : -1);
  if (in_event_) log_.events[static_cast<size_t>(current_event_)].violated = true;
}

bool ExploreDriver::at_playground_stop() const {
  const size_t scheduled = control_.schedule.choices.size();
  return (control_.stop_at_schedule_end && outcome_.consumed >= scheduled) ||
         (control_.choices_max > 0 && outcome_.consumed >= scheduled &&
          outcome_.consumed + outcome_.defaulted >= control_.choices_max);
}

void ExploreDriver::mark_frontier(size_t enabled, Fingerprint state) {
  outcome_.at_frontier = true;
  outcome_.enabled = enabled;
  outcome_.state = state;
}

void ExploreDriver::add_frontier_option(Fingerprint job, bool commutes, bool preempts) {
  if (control_.count_preemptions) outcome_.preempts.push_back(preempts);
  outcome_.enabled_jobs.push_back(job);
  // Of several, the one with the least fingerprint: a state picks the same one however it was
  // reached.
  const size_t option = outcome_.enabled_jobs.size() - 1;
  const int64_t alone = outcome_.alone;
  if (commutes && (alone < 0 || outcome_.enabled_jobs[option] <
                                    outcome_.enabled_jobs[static_cast<size_t>(alone)])) {
    outcome_.alone = static_cast<int64_t>(option);
  }
}

void ExploreDriver::finish_frontier_footprint(const BrokerTouches& touched) {
  if (recording_) close_footprint(outcome_.footprint, touched);
}

// Where the explorer would take one event alone, the run takes it now, and keeps what stopping
// would have said; the next stretch starts from it, as that child's node would. (Going on with
// a guess where it would take several, the first of them, was measured: two guesses in five
// were used, and the fingerprints of the rest cost what the replays saved.)
bool ExploreDriver::continues_alone() const {
  return control_.continue_alone && outcome_.alone >= 0 &&
         !(control_.explored && control_.explored(outcome_.state));
}

size_t ExploreDriver::continue_alone(const Coverage& coverage, bool assumptions_held) {
  INBOXSIM_ASSERT(outcome_.alone >= 0);
  const auto option = static_cast<size_t>(outcome_.alone);
  passed_.push_back(PassedState{outcome_, coverage, assumptions_held});
  ExploreOutcome next;
  next.consumed = outcome_.consumed;
  next.faults_injected = outcome_.faults_injected;
  next.recorded = true;
  next.transition = outcome_.enabled_jobs[option];
  outcome_ = std::move(next);
  recording_ = true;
  return option;
}

void ExploreDriver::begin_chooser_options() {
  enabled_now_.clear();
  born_now_.clear();
  step_of_now_.clear();
  alone_now_ = -1;
  runner_now_ = -1;
  runner_ready_now_ = false;
}

void ExploreDriver::add_chooser_option(Fingerprint job, int64_t born, bool commutes,
                                       int32_t step_of) {
  enabled_now_.push_back(job);
  born_now_.push_back(born);
  if (control_.count_preemptions) step_of_now_.push_back(step_of);
  const size_t option = enabled_now_.size() - 1;
  if (commutes &&
      (alone_now_ < 0 || enabled_now_[option] < enabled_now_[static_cast<size_t>(alone_now_)])) {
    alone_now_ = static_cast<int64_t>(option);
  }
}

uint32_t ExploreDriver::choose(size_t options, bool event, size_t trace_events, World& world,
                               std::string& halted_reason) {
  INBOXSIM_ASSERT(options >= 1);
  const auto log = [&](uint32_t taken) {
    if (!control_.log_choices) return;
    ChoiceRecord record;
    record.position = outcome_.consumed + outcome_.defaulted;
    record.options = static_cast<uint32_t>(options);
    record.taken = taken;
    record.event = event;
    if (!event) {
      record.fault_kind = pending_kind_;
      record.label = pending_label_;
    }
    record.trace_events = trace_events;
    outcome_.log.push_back(std::move(record));
  };
  if (options == 1 && !(event && stepwise_now())) {
    if (event && control_.log_every_point) {
      log(0);
      outcome_.log.back().counted = false;
    }
    return 0;
  }
  std::vector<uint32_t>& choices = control_.schedule.choices;
  if (control_.log_events) {
    LoggedChoice logged;
    logged.event = event;
    logged.options = static_cast<uint32_t>(options);
    if (event && outcome_.consumed >= choices.size()) {
      logged.enabled = std::move(enabled_now_);
      logged.born = std::move(born_now_);
      logged.alone = std::exchange(alone_now_, -1);
      logged.step_of = std::move(step_of_now_);
      logged.runner = runner_now_;
      logged.runner_ready = runner_ready_now_;
    }
    log_.choices.push_back(std::move(logged));
  }
  if (outcome_.consumed < choices.size()) {
    const uint32_t choice = choices[outcome_.consumed];
    log(choice);
    ++outcome_.consumed;
    if (control_.log_events) log_.choices.back().taken = choice;
    if (choice < options) return choice;
    outcome_.misfit = true;
    stop_ = true;
    halted_reason = "the schedule does not fit this story: choice " +
                    std::to_string(outcome_.consumed) + " is " + std::to_string(choice) +
                    ", but only " + std::to_string(options) + " options were there";
    return 0;
  }
  if (control_.stop_at_frontier) outcome_.defaults.push_back(static_cast<uint32_t>(options));
  if (control_.log_events && control_.chooser) {
    const int64_t pick = control_.chooser(world);
    if (pick < 0) {
      stop_ = true;
      return 0;
    }
    INBOXSIM_ASSERT(static_cast<size_t>(pick) < options);
    log_.choices.back().taken = static_cast<uint32_t>(pick);
    log(static_cast<uint32_t>(pick));
    ++outcome_.defaulted;
    return static_cast<uint32_t>(pick);
  }
  log(0);
  ++outcome_.defaulted;
  return 0;
}

bool ExploreDriver::stepwise_now() const {
  const size_t consumed = outcome_.consumed;
  return consumed < control_.schedule.stepwise ||
         (control_.stepwise_beyond && consumed >= control_.schedule.choices.size());
}

bool ExploreDriver::may_inject(FaultKind kind) const {
  if (!control_.enabled || stop_) return false;
  // Step by step, every fault that needs no clock may strike anywhere (the playground).
  if (stepwise_now()) return explorable_fault_kind(kind);
  return control_.schedule.fault_kinds[static_cast<size_t>(kind)] &&
         outcome_.faults_injected < control_.schedule.faults;
}

void ExploreDriver::fault_choice_words(FaultKind kind, std::string label) {
  pending_kind_ = fault_kind_name(kind);
  pending_label_ = std::move(label);
}

void ExploreDriver::uncounted_fault_point(FaultKind kind, size_t trace_events) {
  if (!control_.log_every_point) return;
  ChoiceRecord record;
  record.position = outcome_.consumed + outcome_.defaulted;
  record.options = 2;
  record.fault_kind = fault_kind_name(kind);
  record.counted = false;
  record.trace_events = trace_events;
  outcome_.log.push_back(std::move(record));
}

const Step& ExploreDriver::take_action(size_t at, size_t trace_events) {
  INBOXSIM_ASSERT(action_due(at));
  if (control_.log_choices) {
    ChoiceRecord record;
    record.position = at;
    record.counted = false;
    record.action = static_cast<int64_t>(next_action_);
    record.trace_events = trace_events;
    outcome_.log.push_back(std::move(record));
  }
  return control_.schedule.actions[next_action_++].step;
}

}  // namespace inboxsim
