#include "fuzz/dpor.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <optional>

#include "fuzz/dpor_state.h"
#include "fuzz/goals.h"
#include "kernel/assert.h"
#include "kernel/fingerprint.h"
#include "scenario/runner.h"
#include "world/world.h"

namespace inboxsim {

namespace dpor {

Search::Search(const Scenario& scenario, const ExploreSettings& settings)
    : scenario_(scenario), settings_(settings), start_(Clock::now()), goals_(scenario, settings) {
  if (settings.from) root_.assign(settings.from->choices.begin(), settings.from->choices.end());
  result_.file = scenario.file;
  result_.name = scenario.name;
  result_.faults = settings.faults;
  result_.fault_kinds = settings.fault_kinds;
  result_.ack_wait_expiries = ack_wait_bound(scenario, settings);
  result_.dpor = true;
  // Under a bound, of inert events only (asleep_on_arrival).
  result_.sleep_sets = settings.dpor_sleep_sets;
  result_.preemption_bound = settings.preemptions;
}

ExploreResult Search::run() {
  size_t first_new = 0;
  for (;;) {
    execute(first_new);
    if (stopped_) break;
    if (late()) {
      stopped_ = true;
      break;
    }
    if (!next_execution(first_new)) break;
  }
  result_.complete = !stopped_;
  std::sort(result_.leaf_states.begin(), result_.leaf_states.end());
  name_counterexamples(result_, scenario_);
  result_.goals = goals_.outcomes(result_.complete, result_.counterexamples);
  result_.wall_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_).count();
  return std::move(result_);
}

bool Search::late() const {
  return settings_.max_wall_ms > 0 &&
         Clock::now() >= start_ + std::chrono::milliseconds(settings_.max_wall_ms);
}

void Search::count_coverage(const Coverage& coverage) {
  for (size_t probe = 0; probe < kProbeCount; ++probe) {
    if (coverage.counts[probe] > 0) ++result_.coverage.counts[probe];
  }
}

// One replay: the root, the stack's choices, then the search's own (choose) to the end.
void Search::execute(size_t first_new) {
  std::vector<uint16_t> prefix = root_;
  for (const Node& node : stack_) prefix.push_back(static_cast<uint16_t>(node.taken));
  WorldOptions options;
  options.seed = scenario_.seed;
  options.keep_trace = false;
  options.hash_trace = false;
  options.explore.enabled = true;
  options.explore.log_events = true;
  options.explore.check_void_events = settings_.check_void_events;
  options.explore.fuse_lock_steps = settings_.fuse_lock_steps;
  options.explore.names_commute = settings_.names_commute;
  options.explore.void_footprints = settings_.void_footprints;
  options.explore.keep_broker_counters = settings_.keep_broker_counters;
  options.explore.count_preemptions = bounded();
  options.explore.schedule = explore_schedule(prefix, settings_);
  options.explore.chooser = [this](World& world) { return choose(world); };
  World world(scenario_, scenario_.config, options);
  play_explored(world, scenario_, settings_);
  ++result_.replays;
  const EventLog& log = world.event_log();
  result_.void_events_checked += world.explore_outcome().void_events_checked;
  INBOXSIM_ASSERT(!world.explore_outcome().misfit);
  result_.transitions += static_cast<int64_t>(log.events.size() - first_new);
  result_.max_depth = std::max<int64_t>(result_.max_depth,
                                        static_cast<int64_t>(log.choices.size()));
  // What each node's event read or changed in this execution, and the events its subtree
  // took.
  for (Node& node : stack_) {
    if (!node.event) continue;
    if (node.logged < static_cast<int64_t>(log.events.size())) {
      merge_into(node.current, log.events[static_cast<size_t>(node.logged)]);
    }
  }
  if (settings_.persistent_sets && !world.persistent_sets_assumptions_held() &&
      std::any_of(stack_.begin(), stack_.end(), [](const Node& node) { return node.alone; })) {
    persistent_unsound_ = true;
    stopped_ = true;
    return;
  }
  std::vector<Violation> violations = world.violations();
  std::optional<RunResult> finished;
  if (!world.exploration_stopped() && violations.empty()) {
    const Fingerprint leaf = world.final_fingerprint();
    finished = world.finish();
    violations = finished->violations;
    if (violations.empty() && leaves_.insert(leaf).second) {
      ++result_.states;
      ++result_.leaves;
      ++result_.good_leaves;
      count_coverage(world.coverage());
      result_.leaf_states.push_back(settings_.keep_broker_counters ? world.canonical_fingerprint()
                                                                   : leaf);
      if (settings_.stop_at_good_leaf) stopped_ = true;
    }
  }
  if (!violations.empty()) {
    count_coverage(world.coverage());
    record_counterexamples(first_broken(violations, log), log);
  }
  if (!goals_.empty()) note_goals(world, log, finished);
  const std::vector<Bits> before = happens_before(log);
  summarise(log, before, first_new);
  analyse(log, before, first_new);
  if (settings_.progress && (result_.replays == 1 || result_.replays % 64 == 0)) {
    settings_.progress(result_.states, result_.transitions, static_cast<int64_t>(stack_.size()),
                       static_cast<int64_t>(log.choices.size()),
                       static_cast<int64_t>(result_.counterexamples.size()));
  }
}

// The violations of the event that broke first (an order ends at its first violation, as in
// the breadth-first search; the run went on only for the races past it).
std::vector<Violation> Search::first_broken(const std::vector<Violation>& violations,
                                            const EventLog& log) {
  if (log.violation_events.empty()) return violations;  // at the story's end (finish)
  std::vector<Violation> first;
  for (size_t index = 0; index < violations.size() && index < log.violation_events.size();
       ++index) {
    if (log.violation_events[index] == log.violation_events.front()) {
      first.push_back(violations[index]);
    }
  }
  return first;
}

// The choices of the execution's first `made`, trailing default choices left out.
std::vector<uint16_t> Search::order_of(const EventLog& log, size_t made) const {
  std::vector<uint16_t> path;
  for (size_t index = 0; index < made; ++index) {
    path.push_back(static_cast<uint16_t>(log.choices[index].taken));
  }
  while (path.size() > root_.size() && path.back() == 0) path.pop_back();
  return path;
}

// The goals this execution reached. Past its first violation the execution went on only for
// its races (as the breadth-first search, an order ends at its first violation): a probe
// counts if reached before it, and the order is cut there.
void Search::note_goals(const World& world, const EventLog& log,
                        const std::optional<RunResult>& finished) {
  const bool cut = !log.violation_events.empty();
  const Coverage& coverage = cut ? log.coverage_at_violation : world.coverage();
  const uint64_t bits = goals_.reached(coverage, finished ? &*finished : nullptr);
  goals_.note(bits, order_of(log, cut ? log.choices_at_violation : log.choices.size()));
}

void Search::record_counterexamples(const std::vector<Violation>& violations, const EventLog& log) {
  const std::vector<uint16_t> path = order_of(
      log, log.violation_events.empty() ? log.choices.size() : log.choices_at_violation);
  for (const Violation& violation : violations) {
    auto found = std::find_if(result_.counterexamples.begin(), result_.counterexamples.end(),
                              [&](const ExploreCounterexample& cx) {
                                return cx.invariant == violation.invariant;
                              });
    if (found != result_.counterexamples.end() && found->choices <= path.size()) continue;
    ExploreCounterexample cx;
    cx.invariant = violation.invariant;
    cx.detail = violation.detail;
    cx.scenario = scenario_;
    cx.scenario.schedule = explore_schedule(path, settings_);
    cx.scenario.expect = Expect{};
    cx.choices = path.size();
    if (found != result_.counterexamples.end()) {
      *found = std::move(cx);
    } else {
      result_.counterexamples.push_back(std::move(cx));
    }
  }
  if (!settings_.keep_going && !settings_.stop_at_good_leaf && !goals_.all_expected(violations)) {
    stopped_ = true;
  }
}

// The explorer's choice at a point past the schedule.
int64_t Search::choose(World& world) {
  const EventLog& log = world.event_log();
  const LoggedChoice& choice = log.choices.back();
  INBOXSIM_ASSERT(log.choices.size() == root_.size() + stack_.size() + 1);
  Node node;
  node.event = choice.event;
  node.options = choice.options;
  if (!world.violations().empty()) {
    // This order is a counterexample already. Going on is only for the races of the events
    // before the violation with those after it, which another order may break first.
    return choose_past_violation(world, std::move(node));
  }
  if (!choice.event) {
    // A fault strikes here or not: both are explored, whatever the races say. Striking first:
    // the first orders place their faults as early as they can, which is where a defence
    // that is missing shows, so the first counterexample found is a short one.
    node.every = true;
    node.logged = static_cast<int64_t>(log.events.size()) - 1;
    node.taken = 1;
    stack_.push_back(std::move(node));
    return 1;
  }
  place(node, world, choice);
  const Fingerprint state = node.state;
  if (states_.insert(state).second) {
    ++result_.states;
    count_coverage(world.coverage());
  } else {
    ++result_.revisits;
  }
  if (result_.states >= settings_.max_states) {
    stopped_ = true;
    return -1;
  }
  node.enabled = choice.enabled;
  node.logged = static_cast<int64_t>(log.events.size());
  node.sleep = asleep_on_arrival(log);
  if (on_stack_.count(state) > 0) {
    // A cycle: this order came back to a state it passed. Nothing new is past it; what it
    // could race with is unknown, so every state before it explores every event.
    for (Node& earlier : stack_) every(earlier);
    ++result_.revisits;
    return -1;
  }
  if (covered_by_cache(log, choice, node)) return -1;
  if (settings_.persistent_sets && choice.alone >= 0) {
    node.alone = true;
    const auto option = static_cast<uint32_t>(choice.alone);
    INBOXSIM_ASSERT(!preempts(node, option));  // an ack, a confirm or a void event
    if (!asleep(node, node.enabled[option])) return take(std::move(node), option);
    ++result_.sleep_blocked;
    return -1;
  }
  for (uint32_t option = 0; option < node.options; ++option) {
    if (within_bound(node, option) && !asleep(node, node.enabled[option])) {
      return take(std::move(node), option);
    }
  }
  ++result_.sleep_blocked;  // every event left is asleep: this order adds nothing
  return -1;
}

// The state a new event choice stands for, and what a bound reads of it. Under a bound, a
// state reached with fewer preemptions left, or with another runner (with a step ready or not:
// a delivery may give it one), has another future: each is a state of the search.
void Search::place(Node& node, World& world, const LoggedChoice& choice) const {
  if (!bounded()) {
    node.state = world.fingerprint();
    return;
  }
  node.preemptions = preemptions_so_far();
  node.step_of = choice.step_of;
  node.runner = choice.runner;
  node.runner_ready = choice.runner_ready;
  node.state = Hasher()
                   .add(world.fingerprint())
                   .add_signed(node.preemptions)
                   .add_signed(choice.runner)
                   .finish();
}

// The choice at a point past a violation: the search stops there (-1) unless violations do not
// end it (ExploreSettings::keep_going, stop_at_good_leaf, or a goal expects each of them); then
// `node` goes on the stack frozen and takes option 0, so that the run goes on for its races.
int64_t Search::choose_past_violation(const World& world, Node node) {
  const EventLog& log = world.event_log();
  const LoggedChoice& choice = log.choices.back();
  if (!settings_.keep_going && !settings_.stop_at_good_leaf &&
      !goals_.all_expected(world.violations())) {
    return -1;
  }
  node.frozen = true;
  node.enabled = choice.enabled;
  node.logged = static_cast<int64_t>(log.events.size()) - (choice.event ? 0 : 1);
  node.backtrack.push_back(0);
  stack_.push_back(std::move(node));
  return 0;
}

// Asleep at a new state: what slept at the last event choice, or was explored there, and
// commutes with every event taken since.
std::vector<Sleeper> Search::asleep_on_arrival(const EventLog& log) const {
  std::vector<Sleeper> sleep;
  if (!settings_.dpor_sleep_sets) return sleep;
  for (auto at = stack_.rbegin(); at != stack_.rend(); ++at) {
    if (!at->event) continue;
    for (const std::vector<Sleeper>* list : {&at->sleep, &at->explored}) {
      for (const Sleeper& sleeper : *list) {
        bool awake = false;
        for (size_t event = static_cast<size_t>(at->logged); event < log.events.size() && !awake;
             ++event) {
          awake = wakes(sleeper, log.events[event]);
        }
        // Under a bound only an inert event sleeps: moving it earlier, past the events
        // independent of it, changes no order's preemptions (docs/model.md).
        if (!awake && (!bounded() || sleeper.inert)) sleep.push_back(sleeper);
      }
    }
    break;
  }
  return sleep;
}

// Whether the visited-state cache covers `node`'s state: explored before with no more asleep
// than now. Then its subtree is not explored again: its races with this order's events are
// replayed, and its summary goes to the states above.
bool Search::covered_by_cache(const EventLog& log, const LoggedChoice& choice, const Node& node) {
  const auto cached = visited_.find(node.state);
  if (cached == visited_.end()) return false;
  std::vector<Fingerprint> sleeping;
  for (const Sleeper& sleeper : node.sleep) sleeping.push_back(sleeper.job);
  std::sort(sleeping.begin(), sleeping.end());
  if (!std::includes(sleeping.begin(), sleeping.end(), cached->second.sleep.begin(),
                     cached->second.sleep.end())) {
    return false;
  }
  // Explored before with no more asleep than now: its subtree holds every order from
  // here. Only its races with this order's events are new.
  const std::vector<Bits> before = happens_before(log);
  replay_races(log, before, choice, cached->second.summary);
  // A race in the subtree wanted a switch before its state: here, the last switch above.
  if (bounded() && cached->second.switch_wanted_above) {
    SwitchPoint point = last_switch_for(stack_.size(), log, before);
    if (point.last != nullptr) ask_at_switch_point(point, nullptr, choice, log, before);
  }
  for (Node& earlier : stack_) {
    if (!earlier.event || earlier.frozen) continue;
    for (const uint32_t id : cached->second.summary) add_to_summary(earlier, id);
  }
  ++result_.cache_hits;
  return true;
}

// Pushes a new state's node with `option` taken first.
int64_t Search::take(Node node, uint32_t option) {
  node.taken = option;
  node.backtrack.push_back(option);
  node.current.job = node.enabled[option];
  ++on_stack_[node.state];
  stack_.push_back(std::move(node));
  return option;
}

// The preemptions of the order so far: the last event choice's, and its event's.
int64_t Search::preemptions_so_far() const {
  for (auto at = stack_.rbegin(); at != stack_.rend(); ++at) {
    if (at->event) return at->preemptions + (preempts(*at, at->taken) ? 1 : 0);
  }
  return 0;
}

bool Search::asleep(const Node& node, const Fingerprint& job) {
  for (const std::vector<Sleeper>* list : {&node.sleep, &node.explored}) {
    for (const Sleeper& sleeper : *list) {
      if (sleeper.job == job) return true;
    }
  }
  return false;
}

// Moves to the deepest node with an option left; false when there is none.
bool Search::next_execution(size_t& first_new) {
  while (!stack_.empty()) {
    Node& node = stack_.back();
    for (uint32_t option = 0; option < node.options; ++option) {
      if (option == node.taken || contains(node.done, option)) continue;
      if (!node.every && !contains(node.backtrack, option)) continue;
      if (!within_bound(node, option)) continue;
      if (node.event &&
          (asleep(node, node.enabled[option]) || node.enabled[option] == node.current.job)) {
        continue;
      }
      node.done.push_back(node.taken);
      if (node.event) {
        node.explored.push_back(std::move(node.current));
        node.current = Sleeper{};
        node.current.job = node.enabled[option];
      }
      node.taken = option;
      first_new = static_cast<size_t>(node.logged);
      return true;
    }
    if (node.event && !node.frozen) remember(node);
    stack_.pop_back();
  }
  return false;
}

// A state whose subtree is explored: into the visited-state cache.
void Search::remember(Node& node) {
  const auto on = on_stack_.find(node.state);
  if (--on->second == 0) on_stack_.erase(on);
  tidy(node.summary);
  std::vector<Fingerprint> sleeping;
  for (const Sleeper& sleeper : node.sleep) sleeping.push_back(sleeper.job);
  std::sort(sleeping.begin(), sleeping.end());
  const auto [at, fresh] = visited_.try_emplace(node.state);
  at->second.switch_wanted_above = at->second.switch_wanted_above || node.switch_wanted_above;
  if (fresh) {
    at->second.sleep = std::move(sleeping);
    at->second.summary = std::move(node.summary);
    at->second.summary.shrink_to_fit();  // kept for the rest of the search
    return;
  }
  // Explored again with other events asleep: what slept both times, and both subtrees.
  std::vector<Fingerprint> both;
  std::set_intersection(at->second.sleep.begin(), at->second.sleep.end(), sleeping.begin(),
                        sleeping.end(), std::back_inserter(both));
  at->second.sleep = std::move(both);
  std::vector<uint32_t> merged;
  std::set_union(at->second.summary.begin(), at->second.summary.end(), node.summary.begin(),
                 node.summary.end(), std::back_inserter(merged));
  merged.shrink_to_fit();
  at->second.summary = std::move(merged);
}

}  // namespace dpor

ExploreResult explore_dpor(const Scenario& scenario, const ExploreSettings& settings) {
  INBOXSIM_ASSERT(!clockless_refusal(scenario));
  dpor::Search search(scenario, settings);
  ExploreResult result = search.run();
  result.persistent_sets = settings.persistent_sets;
  if (!search.persistent_unsound()) return result;
  // A run went where persistent sets of one are not known to lose nothing (a consumer's
  // prefetch or a relay's batch could fill up): the whole search again without them.
  ExploreSettings plain = settings;
  plain.persistent_sets = false;
  ExploreResult again = dpor::Search(scenario, plain).run();
  again.persistent_sets_unsound = true;
  again.wall_ms += result.wall_ms;
  return again;
}

}  // namespace inboxsim
