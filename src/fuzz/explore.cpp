#include "fuzz/explore.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <iterator>
#include <unordered_map>

#include "fuzz/dpor.h"
#include "fuzz/generator.h"
#include "fuzz/goals.h"
#include "fuzz/parallel.h"
#include "kernel/assert.h"
#include "scenario/runner.h"
#include "world/world.h"

namespace inboxsim {

namespace {

using Clock = std::chrono::steady_clock;

// A node of the search: the choices that reach it from the story's start. Choices are small
// (an index among the events pending, or a fault's yes/no); 16 bits keep a million nodes
// cheap.
using Choices = std::vector<uint16_t>;

constexpr int64_t kNoParent = -1;

// A node: the choices that reach it, and the state its last choice was taken at (an index
// into the parents table), or kNoParent when its last choice injected a fault.
struct Node {
  Choices choices;
  int64_t parent = kNoParent;
  int64_t preemptions = 0;  // in the order its choices make (ExploreSettings::preemptions)
};

// An event taken at some state, with everything it read or changed until the next choice.
// `unknown`: it ended the story or broke an invariant before a footprint was closed, so it
// is taken to touch everything.
struct Sleeper {
  Fingerprint job;
  std::vector<uint64_t> footprint;
  bool unknown = false;
  bool inert = true;  // ExploreOutcome::inert: a bounded search may put it to sleep
};

bool independent(const Sleeper& a, const Sleeper& b) {
  return !a.unknown && !b.unknown && !footprints_meet(a.footprint, b.footprint);
}

// A state whose events are being explored: what was asleep there, and the events already
// taken from it (each puts to sleep, in the later siblings, what it is independent of).
struct Parent {
  std::vector<Sleeper> sleep;
  std::vector<Sleeper> done;
};

struct FingerprintHash {
  size_t operator()(const Fingerprint& print) const { return static_cast<size_t>(print.low); }
};

// What replaying one node found.
struct NodeRun {
  ExploreOutcome outcome;
  bool ended = false;  // the story ended with nothing pending (a leaf)
  Fingerprint leaf_state;
  std::vector<Violation> violations;
  Coverage coverage;  // what the order reached on its way
  bool assumptions_held = true;  // World::persistent_sets_assumptions_held at its end
  uint64_t goals = 0;  // the reachability goals the order reached (GoalTracker::reached)
};

Schedule schedule_of(const Choices& choices, const ExploreSettings& settings) {
  return explore_schedule(choices, settings);
}

// Builds a world, plays the story along `choices` and stops at the first choice past them
// where several events may happen next, or at a violation, or at the story's end. With
// persistent sets it goes on through each state where it would take one event alone: the
// result is then that state's run, then its one child's, and so on; the last is where it
// stopped.
std::vector<NodeRun> run_node(const Scenario& scenario, const Choices& choices,
                              const ExploreSettings& settings, const GoalTracker& goals,
                              const std::function<bool(const Fingerprint&)>& explored) {
  WorldOptions options;
  options.seed = scenario.seed;
  options.keep_trace = false;
  options.hash_trace = false;  // a node is known by its fingerprint, not its trace
  options.explore.enabled = true;
  options.explore.stop_at_frontier = true;
  // Only sleep sets read a node's footprint.
  options.explore.footprints_by_row = settings.sleep_sets;
  options.explore.check_void_events = settings.check_void_events;
  options.explore.fuse_lock_steps = settings.fuse_lock_steps;
  options.explore.names_commute = settings.names_commute;
  options.explore.void_footprints = settings.void_footprints;
  options.explore.count_preemptions = settings.preemptions >= 0;
  options.explore.continue_alone = settings.persistent_sets && settings.continue_alone;
  options.explore.explored = explored;
  options.explore.schedule = schedule_of(choices, settings);
  World world(scenario, scenario.config, options);
  play_explored(world, scenario, settings);
  NodeRun run;
  if (!world.exploration_stopped()) {
    // The story ended: the state is final. Its fingerprint first (finish() reads on).
    run.ended = true;
    run.leaf_state = world.final_fingerprint();
    const RunResult result = world.finish();
    run.violations = result.violations;
    run.goals = goals.reached(world.coverage(), &result);
  } else {
    run.violations = world.violations();
    run.goals = goals.reached(world.coverage(), nullptr);
  }
  run.outcome = world.explore_outcome();
  run.coverage = world.coverage();
  run.assumptions_held = world.persistent_sets_assumptions_held();
  INBOXSIM_ASSERT(!run.outcome.misfit);
  std::vector<NodeRun> chain;
  for (const PassedState& passed : world.passed()) {
    NodeRun stop;
    stop.outcome = passed.outcome;
    stop.coverage = passed.coverage;
    stop.assumptions_held = passed.assumptions_held;
    stop.goals = goals.reached(passed.coverage, nullptr);
    chain.push_back(std::move(stop));
  }
  chain.push_back(std::move(run));
  return chain;
}

// The choices past `node` to the state its run stopped at: each fault choice made on the way
// took option 0.
Choices stop_path(const Choices& node, const NodeRun& run) {
  Choices path = node;
  path.insert(path.end(), run.outcome.defaults.size(), 0);
  return path;
}

// `path` without its trailing default choices past the first `root_length`: the same order,
// as a schedule writes it.
Choices trimmed(Choices path, size_t root_length) {
  while (path.size() > root_length && path.back() == 0) path.pop_back();
  return path;
}

// The breadth-first search (explore's default): the search's state, and a method for each part
// of taking a level. By schedule length: a level's nodes are replayed in parallel and their
// results taken in node order, so the search (and which counterexample is found first) is the
// same with any number of jobs.
class BreadthFirstSearch {
 public:
  BreadthFirstSearch(const Scenario& scenario, const ExploreSettings& settings)
      : scenario_(scenario),
        settings_(settings),
        start_(Clock::now()),
        deadline_(start_ + std::chrono::milliseconds(settings.max_wall_ms)),
        found_(kInvariantCount, false),
        goals_(scenario, settings),
        explored_([this](const Fingerprint& state) { return visited_.count(state) > 0; }) {
    result_.file = scenario.file;
    result_.name = scenario.name;
    result_.faults = settings.faults;
    result_.fault_kinds = settings.fault_kinds;
    result_.ack_wait_expiries = ack_wait_bound(scenario, settings);
    result_.persistent_sets = settings.persistent_sets;
    result_.sleep_sets = settings.sleep_sets;
    Choices root;
    if (settings.from) root.assign(settings.from->choices.begin(), settings.from->choices.end());
    root_length_ = root.size();
    levels_[root_length_].push_back(Node{std::move(root), kNoParent, 0});
  }

  ExploreResult run() {
    while (!levels_.empty() && !stopped_) take_level();
    return finish();
  }

 private:
  // Whether a node's run says to go on with the batch, or to stop it.
  enum class Next : uint8_t { go_on, stop_batch };

  bool late() const { return settings_.max_wall_ms > 0 && Clock::now() >= deadline_; }

  // An invariant broken that no reachable goal expects ends the search (unless --continue).
  bool broke_unexpectedly() const {
    return std::any_of(
        result_.counterexamples.begin(), result_.counterexamples.end(),
        [&](const ExploreCounterexample& cx) { return !goals_.expected(cx.invariant); });
  }

  // Queues the events of state `at` (reached by `path`) that are not asleep, as children that
  // share one Parent entry holding the state's sleep set; with `only`, just those events.
  void expand(const Choices& path, const NodeRun& at, int64_t preemptions,
              std::vector<Sleeper> sleep, const std::vector<Fingerprint>* only) {
    const auto parent = static_cast<int64_t>(parents_.size());
    parents_.push_back(Parent{std::move(sleep), {}});
    const int64_t alone = settings_.persistent_sets ? at.outcome.alone : -1;
    for (size_t option = 0; option < at.outcome.enabled; ++option) {
      if (alone >= 0 && option != static_cast<size_t>(alone)) continue;
      const Fingerprint& job = at.outcome.enabled_jobs[option];
      if (only != nullptr && std::find(only->begin(), only->end(), job) == only->end()) continue;
      const std::vector<Sleeper>& asleep = parents_[static_cast<size_t>(parent)].sleep;
      if (std::any_of(asleep.begin(), asleep.end(),
                      [&](const Sleeper& sleeper) { return sleeper.job == job; })) {
        continue;
      }
      const bool preempts = option < at.outcome.preempts.size() && at.outcome.preempts[option];
      const int64_t count = preemptions + (preempts ? 1 : 0);
      if (settings_.preemptions >= 0 && count > settings_.preemptions) continue;
      Choices next = path;
      next.push_back(static_cast<uint16_t>(option));
      levels_[next.size()].push_back(Node{std::move(next), parent, count});
    }
  }

  // Takes the shortest level, in batches: large levels go in batches, so progress is visible
  // and --max-states stops early.
  void take_level() {
    constexpr size_t kBatch = 4096;
    auto level = levels_.begin();
    const size_t length = level->first;
    std::vector<Node> nodes = std::move(level->second);
    levels_.erase(level);
    result_.max_depth = std::max<int64_t>(result_.max_depth, static_cast<int64_t>(length));
    // The runs of this level's nodes that an earlier replay already made on its way
    // (ExploreControl::continue_alone), by the node's choices.
    std::map<Choices, NodeRun> made = std::move(ahead_[length]);
    ahead_.erase(length);
    for (size_t first = 0; first < nodes.size() && !stopped_; first += kBatch) {
      const size_t count = std::min(kBatch, nodes.size() - first);
      std::vector<std::vector<NodeRun>> runs = replay(nodes, first, count, made);
      for (size_t i = 0; i < count; ++i) {
        keep_ahead(nodes[first + i], runs[i]);
        if (runs[i].empty()) {  // not replayed: the wall time ran out
          stopped_ = true;
          continue;
        }
        if (take(nodes[first + i], runs[i].front()) == Next::stop_batch) break;
      }
      if (!settings_.keep_going && !settings_.stop_at_good_leaf && broke_unexpectedly()) {
        stopped_ = true;
      }
      if (late()) stopped_ = true;
      report_progress(nodes.size() - first - count, length);
    }
  }

  // The runs of nodes [first, first + count): those made ahead, and the others replayed.
  std::vector<std::vector<NodeRun>> replay(const std::vector<Node>& nodes, size_t first,
                                           size_t count, std::map<Choices, NodeRun>& made) {
    std::vector<std::vector<NodeRun>> runs(count);
    std::vector<size_t> to_replay;
    for (size_t i = 0; i < count; ++i) {
      const auto early = made.find(nodes[first + i].choices);
      if (early == made.end()) {
        to_replay.push_back(i);
      } else {
        runs[i].push_back(std::move(early->second));
        made.erase(early);
      }
    }
    parallel_for(
        to_replay.size(), settings_.jobs,
        [&](size_t k) {
          const size_t i = to_replay[k];
          runs[i] = run_node(scenario_, nodes[first + i].choices, settings_, goals_, explored_);
        },
        [&](size_t) { return late(); });
    result_.replays += static_cast<int64_t>(to_replay.size());
    return runs;
  }

  // What the replay went on to: each state it passed through took `alone`, and the run after
  // it is that one child's, kept for when its level comes (the search takes nodes in the same
  // order as without them, so it is the same search).
  void keep_ahead(const Node& node, std::vector<NodeRun>& runs) {
    std::vector<Choices> children;
    for (size_t k = 0; k + 1 < runs.size(); ++k) {
      Choices child = stop_path(k == 0 ? node.choices : children.back(), runs[k]);
      child.push_back(static_cast<uint16_t>(runs[k].outcome.alone));
      children.push_back(std::move(child));
    }
    for (size_t k = 0; k < children.size(); ++k) {
      ahead_[children[k].size()].emplace(std::move(children[k]), std::move(runs[k + 1]));
    }
  }

  // Takes one node's run: its fault branches, its goals, then its state (a counterexample, a
  // state seen before, a final state, or one to expand).
  Next take(const Node& node, const NodeRun& run) {
    ++result_.transitions;
    result_.void_events_checked += run.outcome.void_events_checked;
    if (!run.assumptions_held && settings_.persistent_sets) {
      result_.persistent_sets_unsound = true;
      stopped_ = true;
      return Next::stop_batch;
    }
    const Choices path = queue_fault_branches(node, run);
    result_.max_depth = std::max<int64_t>(result_.max_depth, static_cast<int64_t>(path.size()));
    if (run.goals != 0) goals_.note(run.goals, trimmed(path, root_length_));
    std::vector<Sleeper> sleep = sleep_after(node, run);
    if (!run.violations.empty()) {
      count_coverage(run);
      record_counterexamples(run, path);
      return Next::go_on;  // a broken state is a counterexample, not a place to go on from
    }
    return visit(node, run, path, std::move(sleep));
  }

  // The choices this replay made past the node, each option 0: their other options (a fault
  // injected) are nodes of their own, with nothing asleep. Returns the node's path through them.
  Choices queue_fault_branches(const Node& node, const NodeRun& run) {
    Choices path = node.choices;
    for (const uint32_t options : run.outcome.defaults) {
      INBOXSIM_ASSERT(options <= 0xffff);
      for (uint32_t option = 1; option < options; ++option) {
        Choices branch = path;
        branch.push_back(static_cast<uint16_t>(option));
        levels_[branch.size()].push_back(Node{std::move(branch), kNoParent, node.preemptions});
      }
      path.push_back(0);
    }
    return path;
  }

  // This node's event, taken at its parent's state after the siblings before it: what stays
  // asleep after it (every sleeper whose footprint its own does not meet).
  std::vector<Sleeper> sleep_after(const Node& node, const NodeRun& run) {
    std::vector<Sleeper> sleep;
    if (!settings_.sleep_sets || node.parent == kNoParent || !run.outcome.recorded) return sleep;
    Parent& parent = parents_[static_cast<size_t>(node.parent)];
    const Sleeper self{run.outcome.transition, run.outcome.footprint, !run.outcome.at_frontier,
                       run.outcome.inert};
    // Under a preemption bound only an inert event sleeps: moving it earlier, past the events
    // independent of it, changes no order's preemptions (docs/model.md, "A preemption bound").
    const bool bounded = settings_.preemptions >= 0;
    for (const std::vector<Sleeper>* list : {&parent.sleep, &parent.done}) {
      for (const Sleeper& sleeper : *list) {
        if ((!bounded || sleeper.inert) && independent(sleeper, self)) sleep.push_back(sleeper);
      }
    }
    parent.done.push_back(self);
    return sleep;
  }

  void count_coverage(const NodeRun& run) {
    for (size_t probe = 0; probe < kProbeCount; ++probe) {
      if (run.coverage.counts[probe] > 0) ++result_.coverage.counts[probe];
    }
  }

  // The first order found to break each invariant, as a scenario that replays it.
  void record_counterexamples(const NodeRun& run, const Choices& path) {
    for (const Violation& violation : run.violations) {
      const auto invariant = static_cast<size_t>(violation.invariant);
      if (found_[invariant]) continue;
      found_[invariant] = true;
      ExploreCounterexample cx;
      cx.invariant = violation.invariant;
      cx.detail = violation.detail;
      cx.scenario = scenario_;
      const Choices order = trimmed(path, root_length_);
      cx.scenario.schedule = schedule_of(order, settings_);
      cx.choices = order.size();
      cx.scenario.expect = Expect{};
      result_.counterexamples.push_back(std::move(cx));
    }
  }

  // The state a node's run reached with every invariant holding: new (counted, and a final
  // state or one to expand) or seen before (explored again only for what slept there then).
  Next visit(const Node& node, const NodeRun& run, const Choices& path,
             std::vector<Sleeper> sleep) {
    const Fingerprint reached = run.ended ? run.leaf_state : run.outcome.state;
    // Under a preemption bound, a state reached with fewer preemptions left, or with another
    // runner (ExploreOutcome::running), has another future: both are part of what was explored.
    const Fingerprint state = settings_.preemptions < 0 ? reached
                                                        : Hasher()
                                                              .add(reached)
                                                              .add_signed(node.preemptions)
                                                              .add_signed(run.outcome.running)
                                                              .finish();
    std::vector<Fingerprint> asleep;
    for (const Sleeper& sleeper : sleep) asleep.push_back(sleeper.job);
    std::sort(asleep.begin(), asleep.end());
    const auto [entry, fresh] = visited_.try_emplace(state, asleep);
    if (!fresh) {
      ++result_.revisits;
      // Reached again with fewer events asleep: those asleep the first time but awake now were
      // never explored from here. Explore them, and remember only what slept both times
      // (Godefroid's state caching with sleep sets).
      std::vector<Fingerprint> missed;
      std::set_difference(entry->second.begin(), entry->second.end(), asleep.begin(),
                          asleep.end(), std::back_inserter(missed));
      if (missed.empty() || run.ended) return Next::go_on;
      std::vector<Fingerprint> both;
      std::set_intersection(entry->second.begin(), entry->second.end(), asleep.begin(),
                            asleep.end(), std::back_inserter(both));
      entry->second = std::move(both);
      expand(path, run, node.preemptions, std::move(sleep), &missed);
      return Next::go_on;
    }
    ++result_.states;
    count_coverage(run);
    if (run.ended) {
      ++result_.leaves;
      ++result_.good_leaves;  // a leaf that broke an invariant is a counterexample above
      if (settings_.stop_at_good_leaf) stopped_ = true;
      result_.leaf_states.push_back(reached);
    } else {
      INBOXSIM_ASSERT(run.outcome.at_frontier);
      INBOXSIM_ASSERT(run.outcome.enabled <= 0xffff);
      expand(path, run, node.preemptions, std::move(sleep), nullptr);
    }
    if (result_.states >= settings_.max_states) {
      stopped_ = true;
      return Next::stop_batch;
    }
    return Next::go_on;
  }

  // `left_in_level`: the nodes of the level being taken that are still to come.
  void report_progress(size_t left_in_level, size_t length) const {
    if (!settings_.progress) return;
    auto frontier = static_cast<int64_t>(left_in_level);
    for (const auto& [depth, waiting] : levels_) frontier += static_cast<int64_t>(waiting.size());
    settings_.progress(result_.states, result_.transitions, frontier,
                       static_cast<int64_t>(length),
                       static_cast<int64_t>(result_.counterexamples.size()));
  }

  ExploreResult finish() {
    result_.complete = !stopped_ && levels_.empty();
    std::sort(result_.leaf_states.begin(), result_.leaf_states.end());
    // Under a bound one final state may be counted once per preemption count it was reached
    // with.
    result_.leaf_states.erase(std::unique(result_.leaf_states.begin(), result_.leaf_states.end()),
                              result_.leaf_states.end());
    result_.leaves = static_cast<int64_t>(result_.leaf_states.size());
    result_.good_leaves = result_.leaves;
    result_.preemption_bound = settings_.preemptions;
    name_counterexamples(result_, scenario_);
    result_.goals = goals_.outcomes(result_.complete, result_.counterexamples);
    result_.wall_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_).count();
    return std::move(result_);
  }

  const Scenario& scenario_;
  const ExploreSettings& settings_;
  const Clock::time_point start_;
  const Clock::time_point deadline_;
  ExploreResult result_;
  std::map<size_t, std::vector<Node>> levels_;  // the nodes still to take, by choice count
  size_t root_length_ = 0;                      // the choices of the moment explored from
  std::map<size_t, std::map<Choices, NodeRun>> ahead_;
  std::vector<Parent> parents_;
  // Each state explored, with the events asleep at it (sleep sets, docs/model.md).
  std::unordered_map<Fingerprint, std::vector<Fingerprint>, FingerprintHash> visited_;
  std::vector<bool> found_;  // by invariant: a counterexample is recorded
  GoalTracker goals_;
  // Replays read the visited set while a batch runs, and nothing writes it until all are done.
  const std::function<bool(const Fingerprint&)> explored_;
  bool stopped_ = false;
};

ExploreResult explore_once(const Scenario& scenario, const ExploreSettings& settings) {
  INBOXSIM_ASSERT(!clockless_refusal(scenario));
  return BreadthFirstSearch(scenario, settings).run();
}

int64_t redrive_rounds(const Scenario& scenario, const ExploreSettings& settings) {
  const bool injects = (settings.faults > 0 &&
                        std::any_of(settings.fault_kinds.begin(), settings.fault_kinds.end(),
                                    [](bool kind) { return kind; })) ||
                       settings.prefix_faults > 0;
  if (!settings.operator_redrives || !injects) return 0;
  // A redriven message parks again only when another fault strikes it, so K + the story's own
  // faults + 1 rounds leave nothing parked that faults alone parked (as the fuzzer's
  // generator counts its rounds: the most parking faults of one transfer, plus one).
  const auto own = std::count_if(scenario.steps.begin(), scenario.steps.end(),
                                 [](const Step& step) { return step.kind == StepKind::fault; });
  return settings.faults + settings.prefix_faults + static_cast<int64_t>(own) + 1;
}

Scenario with_rounds(const Scenario& scenario, int64_t rounds) {
  Scenario story = scenario;
  for (int64_t round = 0; round < rounds; ++round) {
    for (Step& step : operator_round()) story.steps.push_back(std::move(step));
  }
  return story;
}

}  // namespace

Scenario explored_story(const Scenario& scenario, const ExploreSettings& settings) {
  return with_rounds(scenario, redrive_rounds(scenario, settings));
}

ExploreResult explore(const Scenario& scenario_in, const ExploreSettings& settings_in) {
  ExploreSettings settings = settings_in;
  settings.story_steps = scenario_in.steps.size();
  if (scenario_in.config.broker_kind == BrokerKind::jetstream) {
    // An ack races an ack wait running out, and a JetStream consumer may always have filled
    // its prefetch (JetStreamBroker): no event is ever taken alone.
    settings.persistent_sets = false;
  } else {
    settings.ack_wait_expiries = 0;  // no lease ends by timer
  }
  const int64_t rounds = redrive_rounds(scenario_in, settings);
  const Scenario scenario = with_rounds(scenario_in, rounds);
  if (settings.dpor) {
    ExploreResult result = explore_dpor(scenario, settings);
    result.redrive_rounds = rounds;
    return result;
  }
  ExploreResult result = explore_once(scenario, settings);
  result.redrive_rounds = rounds;
  if (settings.persistent_sets && result.persistent_sets_unsound) {
    // A run went where persistent sets of one event are not known to lose nothing (a consumer's
    // prefetch or a relay's batch could fill up): the whole search again without them.
    ExploreSettings plain = settings;
    plain.persistent_sets = false;
    ExploreResult again = explore_once(scenario, plain);
    again.redrive_rounds = rounds;
    again.persistent_sets_unsound = true;
    again.wall_ms += result.wall_ms;
    return again;
  }
  return result;
}

}  // namespace inboxsim
