#include "fuzz/dpor.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "fuzz/goals.h"
#include "kernel/assert.h"
#include "kernel/fingerprint.h"
#include "scenario/runner.h"
#include "world/world.h"

namespace inboxsim {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

namespace {

bool everything(const LoggedEvent& event) { return event.story || event.violated; }

// Two events of a run that do not commute (the dependence relation): they share a resource,
// or one of them is ordered with every event.
bool dependent(const LoggedEvent& a, const LoggedEvent& b) {
  return everything(a) || everything(b) || footprints_meet(a.footprint, b.footprint);
}

// A race in words, for the report of what the search spends its states on: the two events and
// what they meet on ("resume account-service / resume account-service on row, next rowid").
std::string race_words(const LoggedEvent& first, const LoggedEvent& second) {
  std::string words = std::string(first.kind) + " " + std::string(first.who) + " / " +
                      std::string(second.kind) + " " + std::string(second.who) + " on ";
  if (everything(first) || everything(second)) return words + "everything";
  const char* separator = "";
  for (const ResourceClass kind : meeting_classes(first.footprint, second.footprint)) {
    words += separator;
    words += resource_class_name(kind);
    separator = ", ";
  }
  return words;
}

// An event explored at a state, which sleeps in the states after it until an event it does
// not commute with is taken (Godefroid's sleep sets).
struct Sleeper {
  Fingerprint job;
  std::vector<uint64_t> footprint;  // merged over every execution that took it there
  bool everything = false;
};

bool wakes(const Sleeper& sleeper, const LoggedEvent& event) {
  return sleeper.everything || everything(event) ||
         footprints_meet(sleeper.footprint, event.footprint);
}

void merge_into(Sleeper& sleeper, const LoggedEvent& event) {
  if (everything(event)) sleeper.everything = true;
  std::vector<uint64_t> merged;
  std::set_union(sleeper.footprint.begin(), sleeper.footprint.end(), event.footprint.begin(),
                 event.footprint.end(), std::back_inserter(merged));
  sleeper.footprint = std::move(merged);
}

// A set of event indexes of one run.
class Bits {
 public:
  explicit Bits(size_t size) : words_((size + 63) / 64, 0) {}
  void set(size_t index) { words_[index >> 6] |= uint64_t{1} << (index & 63); }
  bool test(size_t index) const { return (words_[index >> 6] >> (index & 63) & 1) != 0; }
  void merge(const Bits& other) {
    for (size_t word = 0; word < words_.size(); ++word) words_[word] |= other.words_[word];
  }
  bool meets(const Bits& other) const {
    for (size_t word = 0; word < words_.size(); ++word) {
      if ((words_[word] & other.words_[word]) != 0) return true;
    }
    return false;
  }

 private:
  std::vector<uint64_t> words_;
};

// One choice of the execution being explored, past the search's root: an event choice (a
// state of the search) or a fault's yes or no inside an event.
struct Node {
  bool event = false;
  uint32_t options = 0;
  std::vector<Fingerprint> enabled;  // an event choice: each option's job
  // An event choice: the index in the event log of the event its option takes. A fault: the
  // event it strikes in (run again with the other answer, that event is new).
  int64_t logged = -1;
  std::vector<uint32_t> backtrack;  // the options the races found so far ask for
  std::vector<uint32_t> done;       // the options explored before `taken`
  uint32_t taken = 0;
  bool every = false;               // every option (a fault's; or where the search fell back)
  // A persistent set of one (ExploreSettings::persistent_sets): only this option is taken,
  // whatever the races ask for.
  bool alone = false;
  // Past a violation: the run goes on only so that the races of the events before it with
  // those after it are seen; nothing is explored from here.
  bool frozen = false;
  std::vector<Sleeper> sleep;       // asleep on arrival
  std::vector<Sleeper> explored;    // the events explored here before `taken`'s
  Sleeper current;                  // `taken`'s event
  // An event choice: its state, and every event taken from it on in its subtree so far (as
  // Search::entries_ ids), which a later visit of the state replays the races of.
  Fingerprint state;
  std::vector<uint32_t> summary;
  size_t summary_sorted = 0;
};

// What a state's subtree did, kept once it is explored (the visited-state cache): what slept
// there, and every event taken in it.
struct Visited {
  std::vector<Fingerprint> sleep;  // sorted jobs
  std::vector<uint32_t> summary;   // sorted, unique
};

// An event of some state's subtree, as the state's summary holds it: the event, and what in
// the subtree (from the state on) ordered it: the resources of its happens-before cone there,
// and its roots, the jobs of that cone (itself included) that were already pending at the
// state. A later order that reaches the state finds through these whether one of its own events
// is ordered before this one by something other than their own conflict.
struct SummaryEntry {
  Fingerprint job;
  std::vector<uint64_t> footprint;
  std::vector<uint64_t> past;   // sorted resources of its cone in the subtree, itself left out
  // Sorted. Handed up from a cache hit to the states above it, they are the hit state's: a
  // job made between the two is not waiting at the upper one, so no order is read into it.
  std::vector<Fingerprint> roots;
  bool everything = false;      // it broke an invariant: ordered with every event
  bool past_everything = false;  // its cone holds a story step or a violation
  bool pending_story = false;   // a story step with events pending across it
  bool story = false;
};

void tidy(std::vector<uint32_t>& ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}

bool contains(const std::vector<uint32_t>& options, uint32_t option) {
  return std::find(options.begin(), options.end(), option) != options.end();
}

struct FingerprintHash {
  size_t operator()(const Fingerprint& print) const { return static_cast<size_t>(print.low); }
};

class Search {
 public:
  Search(const Scenario& scenario, const ExploreSettings& settings)
      : scenario_(scenario), settings_(settings), start_(Clock::now()), goals_(scenario, settings) {
    if (settings.from) root_.assign(settings.from->choices.begin(), settings.from->choices.end());
    result_.file = scenario.file;
    result_.name = scenario.name;
    result_.faults = settings.faults;
    result_.fault_kinds = settings.fault_kinds;
    result_.ack_wait_expiries = ack_wait_bound(scenario, settings);
    result_.dpor = true;
    result_.sleep_sets = true;
  }

  ExploreResult run() {
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

 private:
  bool late() const {
    return settings_.max_wall_ms > 0 &&
           Clock::now() >= start_ + std::chrono::milliseconds(settings_.max_wall_ms);
  }

  void count_coverage(const Coverage& coverage) {
    for (size_t probe = 0; probe < kProbeCount; ++probe) {
      if (coverage.counts[probe] > 0) ++result_.coverage.counts[probe];
    }
  }

  // One replay: the root, the stack's choices, then the search's own (choose) to the end.
  void execute(size_t first_new) {
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
      const Fingerprint leaf = world.fingerprint();
      finished = world.finish();
      violations = finished->violations;
      if (violations.empty() && leaves_.insert(leaf).second) {
        ++result_.states;
        ++result_.leaves;
        ++result_.good_leaves;
        count_coverage(world.coverage());
        result_.leaf_states.push_back(leaf);
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
  static std::vector<Violation> first_broken(const std::vector<Violation>& violations,
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
  std::vector<uint16_t> order_of(const EventLog& log, size_t made) const {
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
  void note_goals(const World& world, const EventLog& log,
                  const std::optional<RunResult>& finished) {
    const bool cut = !log.violation_events.empty();
    const Coverage& coverage = cut ? log.coverage_at_violation : world.coverage();
    const uint64_t bits = goals_.reached(coverage, finished ? &*finished : nullptr);
    goals_.note(bits, order_of(log, cut ? log.choices_at_violation : log.choices.size()));
  }

  void record_counterexamples(const std::vector<Violation>& violations, const EventLog& log) {
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

  uint32_t intern(SummaryEntry entry) {
    Hasher hasher;
    hasher.add(entry.job).add(entry.everything).add(entry.pending_story).add(entry.story);
    hasher.add(entry.past_everything);
    hasher.add(static_cast<uint64_t>(entry.footprint.size()));
    for (const uint64_t resource : entry.footprint) hasher.add(resource);
    hasher.add(static_cast<uint64_t>(entry.past.size()));
    for (const uint64_t resource : entry.past) hasher.add(resource);
    for (const Fingerprint& root : entry.roots) hasher.add(root);
    const auto [at, fresh] =
        entry_ids_.try_emplace(hasher.finish(), static_cast<uint32_t>(entries_.size()));
    if (fresh) {
      entries_.push_back(std::move(entry));
    }
    return at->second;
  }

  // The summary entries of the events from `first_new` on, for every state of the stack before
  // each of them.
  void summarise(const EventLog& log, const std::vector<Bits>& before, size_t first_new) {
    std::vector<size_t> starts;  // the stack's event states, by where their event is
    for (const Node& node : stack_) {
      if (node.event && !node.frozen) starts.push_back(static_cast<size_t>(node.logged));
    }
    std::vector<Node*> nodes;
    for (Node& node : stack_) {
      if (node.event && !node.frozen) nodes.push_back(&node);
    }
    for (size_t index = first_new; index < log.events.size(); ++index) {
      const LoggedEvent& event = log.events[index];
      SummaryEntry entry;
      entry.job = event.job;
      entry.footprint = event.footprint;
      entry.everything = event.violated;
      entry.story = event.story;
      entry.pending_story = event.story && event.pending;
      std::vector<Fingerprint> roots;
      std::vector<Fingerprint> interned_roots;
      uint32_t id = 0;
      bool fresh = true;    // the entry differs from the one interned as `id`
      size_t cone = index;  // events of the cone from here on are in entry.past and roots
      for (size_t at = nodes.size(); at-- > 0;) {
        const size_t start = starts[at];
        if (start > index) continue;
        // Widen the cone down to this state's event.
        while (cone > start) {
          --cone;
          if (!before[index].test(cone)) continue;
          const LoggedEvent& ancestor = log.events[cone];
          if (everything(ancestor)) entry.past_everything = true;
          std::vector<uint64_t> merged;
          std::set_union(entry.past.begin(), entry.past.end(), ancestor.footprint.begin(),
                         ancestor.footprint.end(), std::back_inserter(merged));
          entry.past = std::move(merged);
          fresh = true;
        }
        // Its roots here: the cone's jobs (itself included) made before this state.
        roots.clear();
        if (!event.story && event.creator < static_cast<int64_t>(start)) roots.push_back(event.job);
        for (size_t member = start; member < index; ++member) {
          const LoggedEvent& ancestor = log.events[member];
          if (before[index].test(member) && !ancestor.story &&
              ancestor.creator < static_cast<int64_t>(start)) {
            roots.push_back(ancestor.job);
          }
        }
        std::sort(roots.begin(), roots.end());
        roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
        // Most states of the stack see the same cone and roots as the one above them: the
        // entry interned for that one is theirs too.
        if (fresh || roots != interned_roots) {
          SummaryEntry here = entry;
          here.roots = roots;
          id = intern(std::move(here));
          interned_roots = roots;
          fresh = false;
        }
        add_to_summary(*nodes[at], id);
      }
    }
  }

  static void add_to_summary(Node& node, uint32_t id) {
    node.summary.push_back(id);
    if (node.summary.size() > 2 * node.summary_sorted + 64) {
      tidy(node.summary);
      node.summary_sorted = node.summary.size();
    }
  }

  // A state explored before, reached again by another order: its subtree is not explored
  // again, but each event taken in it may race with an event of this order before it. It races
  // with event e when they do not commute and nothing else orders them: nothing that follows e
  // here (e included) meets the resources of its cone in the subtree, nothing that strictly
  // follows e meets it, and none of its roots was made by something that follows e. For each
  // race it asks what source-DPOR asks for, as if the event were taken next.
  void replay_races(const EventLog& log, const LoggedChoice& here,
                    const std::vector<uint32_t>& summary) {
    const std::vector<Bits> before = happens_before(log);
    for (const uint32_t id : summary) {
      if (entries_[id].pending_story) {
        for (Node& node : stack_) every(node);
      }
    }
    const size_t count = log.events.size();
    const std::vector<bool> free = taken_alone(count);
    for (Node& node : stack_) {
      if (!node.event || node.every || node.alone || node.frozen) continue;
      const auto earlier = static_cast<size_t>(node.logged);
      const LoggedEvent& taken = log.events[earlier];
      // What follows the node's event in this order, and whether anything after it does not.
      std::vector<uint64_t> after_with;     // resources of e and what follows it
      std::vector<uint64_t> after_without;  // of what strictly follows it
      bool barrier = everything(taken);
      bool unordered_after = false;
      after_with = taken.footprint;
      for (size_t event = earlier + 1; event < count; ++event) {
        if (!before[event].test(earlier)) {
          unordered_after = true;
          continue;
        }
        const LoggedEvent& follower = log.events[event];
        if (follower.story) barrier = true;
        if (free[event]) continue;  // taken alone: it orders nothing after it
        std::vector<uint64_t> merged;
        std::set_union(after_without.begin(), after_without.end(), follower.footprint.begin(),
                       follower.footprint.end(), std::back_inserter(merged));
        after_without = std::move(merged);
      }
      if (barrier && !taken.violated) continue;  // a story step after it orders all that follows
      {
        std::vector<uint64_t> merged;
        std::set_union(after_with.begin(), after_with.end(), after_without.begin(),
                       after_without.end(), std::back_inserter(merged));
        after_with = std::move(merged);
      }
      // The jobs waiting now that something following e made.
      std::vector<Fingerprint> made_after;
      for (size_t option = 0; option < here.enabled.size(); ++option) {
        const int64_t born = option < here.born.size() ? here.born[option] : -1;
        if (born >= 0 && (static_cast<size_t>(born) == earlier ||
                          before[static_cast<size_t>(born)].test(earlier))) {
          made_after.push_back(here.enabled[option]);
        }
      }
      std::sort(made_after.begin(), made_after.end());
      bool asked = false;
      for (const uint32_t id : summary) {
        const SummaryEntry& entry = entries_[id];
        if (entry.story) continue;
        if (!entry.everything && !everything(taken) &&
            !footprints_meet(entry.footprint, taken.footprint)) {
          continue;  // they commute
        }
        if (entry.past_everything || footprints_meet(after_with, entry.past) ||
            footprints_meet(after_without, entry.footprint)) {
          continue;  // ordered through the subtree or through this order
        }
        if (std::any_of(entry.roots.begin(), entry.roots.end(),
                                           [&](const Fingerprint& root) {
                                             return std::binary_search(made_after.begin(),
                                                                       made_after.end(), root);
                                           })) {
          continue;  // made, or its cone made, by what follows e
        }
        ++result_.races;
        if (unordered_after) {
          // An initial of the events after e that do not follow it starts the other order,
          // whatever the later event is: asked once.
          if (!asked) ask_for_initial(node, log, before, earlier, std::nullopt);
          asked = true;
          continue;
        }
        // Everything after e follows it: the initials are among the event's roots (the jobs of
        // its cone waiting before e), or the event itself.
        bool found = false;
        const auto ask = [&](const Fingerprint& job) {
          const auto named = std::find(node.enabled.begin(), node.enabled.end(), job);
          if (named == node.enabled.end()) return;
          found = true;
          const auto option = static_cast<uint32_t>(named - node.enabled.begin());
          if (!contains(node.backtrack, option)) node.backtrack.push_back(option);
        };
        ask(entry.job);
        for (const Fingerprint& root : entry.roots) ask(root);
        if (!found) {
          // Its roots are another state's (handed up from a hit below): the initials are among
          // the jobs waiting before e that still wait now (one taken since follows e).
          for (const Fingerprint& job : here.enabled) {
            if (job != node.current.job) ask(job);
          }
        }
      }
    }
  }

  void every(Node& node) {
    if (!node.event || node.every || node.alone || node.frozen) return;
    node.every = true;
    ++result_.full_expansions;
  }

  // The explorer's choice at a point past the schedule.
  int64_t choose(World& world) {
    const EventLog& log = world.event_log();
    const LoggedChoice& choice = log.choices.back();
    INBOXSIM_ASSERT(log.choices.size() == root_.size() + stack_.size() + 1);
    Node node;
    node.event = choice.event;
    node.options = choice.options;
    if (!world.violations().empty()) {
      // This order is a counterexample already. Going on is only for the races of the events
      // before the violation with those after it, which another order may break first.
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
    const Fingerprint state = world.fingerprint();
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
    node.state = state;
    node.enabled = choice.enabled;
    node.logged = static_cast<int64_t>(log.events.size());
    // Asleep here: what slept at the last event choice, or was explored there, and commutes
    // with every event taken since.
    for (auto at = stack_.rbegin(); at != stack_.rend(); ++at) {
      if (!at->event) continue;
      for (const std::vector<Sleeper>* list : {&at->sleep, &at->explored}) {
        for (const Sleeper& sleeper : *list) {
          bool awake = false;
          for (size_t event = static_cast<size_t>(at->logged); event < log.events.size() && !awake;
               ++event) {
            awake = wakes(sleeper, log.events[event]);
          }
          if (!awake) node.sleep.push_back(sleeper);
        }
      }
      break;
    }
    if (on_stack_.count(state) > 0) {
      // A cycle: this order came back to a state it passed. Nothing new is past it; what it
      // could race with is unknown, so every state before it explores every event.
      for (Node& earlier : stack_) every(earlier);
      ++result_.revisits;
      return -1;
    }
    const auto cached = visited_.find(state);
    if (cached != visited_.end()) {
      std::vector<Fingerprint> sleeping;
      for (const Sleeper& sleeper : node.sleep) sleeping.push_back(sleeper.job);
      std::sort(sleeping.begin(), sleeping.end());
      if (std::includes(sleeping.begin(), sleeping.end(), cached->second.sleep.begin(),
                        cached->second.sleep.end())) {
        // Explored before with no more asleep than now: its subtree holds every order from
        // here. Only its races with this order's events are new.
        replay_races(log, choice, cached->second.summary);
        for (Node& earlier : stack_) {
          if (!earlier.event || earlier.frozen) continue;
          for (const uint32_t id : cached->second.summary) add_to_summary(earlier, id);
        }
        ++result_.cache_hits;
        return -1;
      }
    }
    if (settings_.persistent_sets && choice.alone >= 0) {
      node.alone = true;
      const auto option = static_cast<uint32_t>(choice.alone);
      if (!asleep(node, node.enabled[option])) return take(std::move(node), option);
      ++result_.sleep_blocked;
      return -1;
    }
    for (uint32_t option = 0; option < node.options; ++option) {
      if (!asleep(node, node.enabled[option])) return take(std::move(node), option);
    }
    ++result_.sleep_blocked;  // every event left is asleep: this order adds nothing
    return -1;
  }

  // Pushes a new state's node with `option` taken first.
  int64_t take(Node node, uint32_t option) {
    node.taken = option;
    node.backtrack.push_back(option);
    node.current.job = node.enabled[option];
    ++on_stack_[node.state];
    stack_.push_back(std::move(node));
    return option;
  }

  static bool asleep(const Node& node, const Fingerprint& job) {
    for (const std::vector<Sleeper>* list : {&node.sleep, &node.explored}) {
      for (const Sleeper& sleeper : *list) {
        if (sleeper.job == job) return true;
      }
    }
    return false;
  }

  Node* node_of(const LoggedEvent& event) {
    if (event.choice < 0 || static_cast<size_t>(event.choice) < root_.size()) return nullptr;
    const size_t index = static_cast<size_t>(event.choice) - root_.size();
    INBOXSIM_ASSERT(index < stack_.size() && stack_[index].event);
    if (stack_[index].frozen) return nullptr;
    return &stack_[index];
  }

  // The events taken alone (persistent sets of one): each commutes with every event that can
  // still happen after it, so nothing later is ordered after it by what it touched (only by
  // what it made). Left in, the order it seems to impose would hide the races of the events
  // around it.
  std::vector<bool> taken_alone(size_t count) const {
    std::vector<bool> free(count, false);
    for (const Node& node : stack_) {
      if (node.alone && node.logged < static_cast<int64_t>(count)) {
        free[static_cast<size_t>(node.logged)] = true;
      }
    }
    return free;
  }

  // For each event of the run, the events it follows: a creator, or an earlier event it does
  // not commute with, and what those follow (happens-before).
  std::vector<Bits> happens_before(const EventLog& log) const {
    const size_t count = log.events.size();
    const std::vector<bool> free = taken_alone(count);
    std::vector<Bits> before;
    before.reserve(count);
    for (size_t event = 0; event < count; ++event) before.emplace_back(count);
    for (size_t later = 0; later < count; ++later) {
      const LoggedEvent& event = log.events[later];
      Bits& follows = before[later];
      if (event.creator >= 0) {
        const auto creator = static_cast<size_t>(event.creator);
        follows.merge(before[creator]);
        follows.set(creator);
      }
      for (size_t earlier = 0; earlier < later; ++earlier) {
        if (!follows.test(earlier) && !free[earlier] &&
            dependent(log.events[earlier], event)) {
          follows.merge(before[earlier]);
          follows.set(earlier);
        }
      }
    }
    return before;
  }

  // Source-DPOR's race detection over the events from `first_new` on: for each race of an
  // earlier event e with a later one e' (they do not commute and nothing orders them but
  // themselves), the state before e must also try an event that starts the order where e'
  // comes first: an initial of the events after e that do not follow it, then e'.
  void analyse(const EventLog& log, const std::vector<Bits>& before, size_t first_new) {
    const size_t count = log.events.size();
    const std::vector<bool> free = taken_alone(count);
    std::vector<size_t> direct;
    for (size_t later = first_new; later < count; ++later) {
      const LoggedEvent& event = log.events[later];
      if (event.story) {
        if (event.pending) {
          // A story step with events pending across it comes where the run is, not after a
          // quiescent moment: every order before it is explored in full.
          for (Node& node : stack_) {
            if (node.logged < static_cast<int64_t>(later)) every(node);
          }
        }
        continue;
      }
      // The direct predecessors of `later`, and whether something else orders each of them
      // before it (then the pair is no race).
      direct.clear();
      for (size_t earlier = 0; earlier < later; ++earlier) {
        if (!free[earlier] && dependent(log.events[earlier], event)) direct.push_back(earlier);
      }
      Bits through(count);
      if (event.creator >= 0) {
        through.merge(before[static_cast<size_t>(event.creator)]);
        through.set(static_cast<size_t>(event.creator));
      }
      for (const size_t earlier : direct) through.merge(before[earlier]);
      for (const size_t earlier : direct) {
        if (through.test(earlier) || log.events[earlier].story) continue;
        Node* node = node_of(log.events[earlier]);
        if (node == nullptr || node->every || node->alone) continue;
        ++result_.races;
        const LoggedEvent& first = log.events[earlier];
        ++result_.races_by_pair[race_words(first, event)];
        ask_for_initial(*node, log, before, earlier, later);
      }
    }
  }

  // Makes sure the state before event `earlier` tries an initial of the events after it that do
  // not follow it (then `later`, if given): one that starts an order where those come first.
  void ask_for_initial(Node& node, const EventLog& log, const std::vector<Bits>& before,
                       size_t earlier, std::optional<size_t> later) {
    const size_t end = later ? *later + 1 : log.events.size();
    Bits reordered(log.events.size());
    std::optional<uint32_t> pick;
    for (size_t event = earlier + 1; event < end; ++event) {
      if (event != later && before[event].test(earlier)) continue;
      const bool initial = !before[event].meets(reordered);
      reordered.set(event);
      if (!initial) continue;
      const auto named =
          std::find(node.enabled.begin(), node.enabled.end(), log.events[event].job);
      if (named == node.enabled.end()) continue;
      const auto option = static_cast<uint32_t>(named - node.enabled.begin());
      if (contains(node.backtrack, option)) return;
      if (!pick) pick = option;
    }
    if (pick) {
      node.backtrack.push_back(*pick);
    } else {
      // No initial is among the events enabled there: every one of them, to be safe.
      every(node);
    }
  }

  // Moves to the deepest node with an option left; false when there is none.
  bool next_execution(size_t& first_new) {
    while (!stack_.empty()) {
      Node& node = stack_.back();
      for (uint32_t option = 0; option < node.options; ++option) {
        if (option == node.taken || contains(node.done, option)) continue;
        if (!node.every && !contains(node.backtrack, option)) continue;
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
  void remember(Node& node) {
    const auto on = on_stack_.find(node.state);
    if (--on->second == 0) on_stack_.erase(on);
    tidy(node.summary);
    std::vector<Fingerprint> sleeping;
    for (const Sleeper& sleeper : node.sleep) sleeping.push_back(sleeper.job);
    std::sort(sleeping.begin(), sleeping.end());
    const auto [at, fresh] = visited_.try_emplace(node.state);
    if (fresh) {
      at->second.sleep = std::move(sleeping);
      at->second.summary = std::move(node.summary);
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
    at->second.summary = std::move(merged);
  }

  const Scenario& scenario_;
  const ExploreSettings& settings_;
  Clock::time_point start_;
  std::vector<uint16_t> root_;
  std::vector<Node> stack_;
  std::unordered_set<Fingerprint, FingerprintHash> states_;
  std::unordered_set<Fingerprint, FingerprintHash> leaves_;
  std::unordered_map<Fingerprint, Visited, FingerprintHash> visited_;
  std::unordered_map<Fingerprint, int64_t, FingerprintHash> on_stack_;
  std::unordered_map<Fingerprint, uint32_t, FingerprintHash> entry_ids_;
  std::vector<SummaryEntry> entries_;
  GoalTracker goals_;
  ExploreResult result_;
  bool stopped_ = false;
  bool persistent_unsound_ = false;

 public:
  bool persistent_unsound() const { return persistent_unsound_; }
};

}  // namespace

ExploreResult explore_dpor(const Scenario& scenario, const ExploreSettings& settings) {
  INBOXSIM_ASSERT(!clockless_refusal(scenario));
  Search search(scenario, settings);
  ExploreResult result = search.run();
  result.persistent_sets = settings.persistent_sets;
  if (!search.persistent_unsound()) return result;
  // A run went where persistent sets of one are not known to lose nothing (a consumer's
  // prefetch or a relay's batch could fill up): the whole search again without them.
  ExploreSettings plain = settings;
  plain.persistent_sets = false;
  ExploreResult again = Search(scenario, plain).run();
  again.persistent_sets_unsound = true;
  again.wall_ms += result.wall_ms;
  return again;
}

}  // namespace inboxsim
