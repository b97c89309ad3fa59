// What the explorer and the playground ask of a world run, and what the run tells them back:
// the schedule of choices to follow and what to record (ExploreControl), where the run stopped
// (ExploreOutcome), the choices and events it logged (ChoiceRecord, EventLog), the states it
// passed through taking one event alone (PassedState). world/explore_driver.h keeps them for
// one run; World only asks it and tells it what happened.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "domain/coverage.h"
#include "domain/message.h"
#include "domain/scenario.h"
#include "kernel/fingerprint.h"

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
  // With stop_at_frontier or log_events: footprints know a service database's rows
  // (world/sql_footprint.h), which costs each statement a look; off, a search that reads no
  // footprint (no sleep sets) pays nothing for them, and the database is one resource.
  bool footprints_by_row = true;
  // Keep the event log (World::event_log): every event taken with its footprint and creator,
  // every choice with its options.
  bool log_events = false;
  // Fill ExploreOutcome::preempts at each frontier (a preemption-bounded search).
  bool count_preemptions = false;
  // Without a clock, the step right after a row lock's grant is no event of its own
  // (World::between_steps, docs/model.md "a row lock's grant and the step after it are one
  // event"). Tests turn it off to compare; a run made so replays only with it off.
  bool fuse_lock_steps = true;
  // Where MessageNames::commute_in holds, the mints and unordered inserts of two messages
  // commute (docs/model.md, "Names whose order nothing reads"). Tests turn it off to compare.
  bool names_commute = true;
  // A job void for good touches only what voided it (World::touch_voidness); off, it touches
  // what it would if it acted. Tests turn it off to compare.
  bool void_footprints = true;
  // Tests: the broker's counters (channel numbers, next delivery tags, the next position) in the
  // state's fingerprint, which leaves them out (World::fingerprint_channel);
  // World::canonical_fingerprint leaves them out either way, to show that the two searches
  // reach the same final states.
  bool keep_broker_counters = false;
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
  int64_t ack_wait_expiries = 0;  // ack wait choices taken (Schedule::ack_wait_expiries)
  // The last schedule entry chose an event (not a fault): that event (`transition`) and what
  // it and every event after it read or changed (`footprint`, sorted resource ids: each
  // service's database, each instance, each broker queue, each message id's publication
  // record, the fault book). Two events whose footprints are disjoint commute.
  bool recorded = false;
  Fingerprint transition;
  // count_preemptions: no event of the recorded stretch was a handler's live step, started a
  // handler, gave one a step ready, or ended one that had a step ready. Moving such an event
  // earlier past events independent of it leaves every order's preemptions as they were, so a
  // bounded search may put it to sleep (docs/model.md, "A preemption bound").
  bool inert = true;
  std::vector<uint64_t> footprint;
  // ExploreControl::log_choices: every choice made, in order.
  std::vector<ChoiceRecord> log;
  // Choices made past the schedule (option 0 each): its end plus these is where the run is.
  size_t defaulted = 0;
  // At the frontier, per option: taking it is a preemption (a step of a handler of one
  // instance while the instance that took the last handler step has its next step ready).
  std::vector<uint8_t> preempts;
  // At the frontier (count_preemptions): the instance that took the last handler step (-1:
  // none yet), whether or not it has a step ready now. Part of what a bounded search has
  // explored from a state: the same state with another runner has another set of orders within
  // the bound, even when neither has a step ready (a delivery may start a handler on one).
  int64_t running = -1;
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
  // Counting preemptions: not a live handler step, and the handler steps ready are the same
  // after it as before (ExploreOutcome::inert, for one event).
  bool inert = false;
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
  // Past the schedule, counting preemptions (ExploreControl::count_preemptions): per option,
  // the instance whose handler's live step it is (-1: not a live step); the instance that took
  // the last live step (-1: none yet); and whether that instance has a step ready now, so that
  // a step of another instance preempts it.
  std::vector<int32_t> step_of;
  int64_t runner = -1;
  bool runner_ready = false;
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

}  // namespace inboxsim
