// The DPOR search's parts (fuzz/dpor.h), shared by the files that make it up: dpor.cpp (the
// search: its executions, the explorer's choices, backtracking and the visited-state cache) and
// dpor_races.cpp (happens-before, the states' summaries and the races). Not an interface: only
// those files include it; the search's interface is fuzz/dpor.h.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "domain/result.h"
#include "fuzz/explore.h"
#include "fuzz/goals.h"
#include "kernel/fingerprint.h"
#include "kernel/footprint.h"
#include "world/explore_control.h"

namespace inboxsim {

class World;

namespace dpor {

using Clock = std::chrono::steady_clock;

inline bool everything(const LoggedEvent& event) { return event.story || event.violated; }

// An event explored at a state, which sleeps in the states after it until an event it does
// not commute with is taken (Godefroid's sleep sets).
struct Sleeper {
  Fingerprint job;
  std::vector<uint64_t> footprint;  // merged over every execution that took it there
  bool everything = false;
  // Under a preemption bound only an inert event sleeps (LoggedEvent::inert, of every
  // execution that took it there).
  bool inert = true;
};

inline bool wakes(const Sleeper& sleeper, const LoggedEvent& event) {
  return sleeper.everything || everything(event) ||
         footprints_meet(sleeper.footprint, event.footprint);
}

inline void merge_into(Sleeper& sleeper, const LoggedEvent& event) {
  if (everything(event)) sleeper.everything = true;
  if (!event.inert) sleeper.inert = false;
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
  // A preemption-bounded search (ExploreSettings::preemptions): the preemptions of the order
  // up to this state, and what LoggedChoice says of its options' live steps and runner.
  int64_t preemptions = 0;
  std::vector<int32_t> step_of;
  int64_t runner = -1;
  bool runner_ready = false;
  // A race in this state's subtree asked for a conservative backtrack point above it (no
  // switch between the state and the race): an order that reaches the state again from the
  // visited-state cache asks at its own last switch.
  bool switch_wanted_above = false;
};

// Taking `option` at event choice `node` is a preemption: a live step of an instance other
// than the runner, while the runner has a step ready.
inline bool preempts(const Node& node, uint32_t option) {
  if (option >= node.step_of.size()) return false;
  const int32_t step = node.step_of[option];
  return step >= 0 && node.runner_ready && step != node.runner;
}

// Taking `option` at `node` keeps an order within a preemption bound (-1: no bound).
inline bool within_bound(const Node& node, uint32_t option, int64_t bound) {
  return bound < 0 || !node.event || node.preemptions + (preempts(node, option) ? 1 : 0) <= bound;
}

// The event `node` took switched the runner: a live step of an instance other than the one
// that took the last live step (preempting it or not).
inline bool switches(const Node& node) {
  if (node.taken >= node.step_of.size()) return false;
  const int32_t step = node.step_of[node.taken];
  return step >= 0 && step != node.runner;
}

// What a state's subtree did, kept once it is explored (the visited-state cache): what slept
// there, and every event taken in it.
struct Visited {
  std::vector<Fingerprint> sleep;  // sorted jobs
  std::vector<uint32_t> summary;   // sorted, unique
  bool switch_wanted_above = false;  // Node::switch_wanted_above, of any visit
};

// An event of some state's subtree, as the state's summary holds it: the event, and what in
// the subtree (from the state on) ordered it: the resources of its happens-before cone there,
// and its roots, the jobs of that cone (itself included) that were already pending at the
// state. A later order that reaches the state finds through these whether one of its own events
// is ordered before this one by something other than their own conflict.
struct SummaryEntry {
  Fingerprint job;
  // Its sets, as ids in the search's pools (Search::sets_, Search::roots_; 0: empty):
  uint32_t footprint = 0;
  uint32_t past = 0;  // the sorted resources of its cone in the subtree, itself left out
  // Sorted. Handed up from a cache hit to the states above it, they are the hit state's: a
  // job made between the two is not waiting at the upper one, so no order is read into it.
  uint32_t roots = 0;
  bool everything = false;      // it broke an invariant: ordered with every event
  bool past_everything = false;  // its cone holds a story step or a violation
  bool pending_story = false;   // a story step with events pending across it
  bool story = false;
  bool operator==(const SummaryEntry& other) const = default;
};

// A summary entry's sets, looked up in the search's pools.
struct EntrySets {
  const std::vector<uint64_t>& footprint;
  const std::vector<uint64_t>& past;
  const std::vector<Fingerprint>& roots;
};

inline void tidy(std::vector<uint32_t>& ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}

inline bool contains(const std::vector<uint32_t>& options, uint32_t option) {
  return std::find(options.begin(), options.end(), option) != options.end();
}

struct FingerprintHash {
  size_t operator()(const Fingerprint& print) const { return static_cast<size_t>(print.low); }
};

// Fingerprint -> dense id, open addressing with linear probing: one probe is one cache line,
// where std::unordered_map follows a bucket and then a node (the summaries' table is looked up
// for every event of every replay, and is too large for the cache).
class FingerprintIds {
 public:
  // The id of `print`, or `next` stored as its id when it has none; `.second` says which.
  std::pair<uint32_t, bool> try_emplace(const Fingerprint& print, uint32_t next) {
    if ((count_ + 1) * 4 > slots_.size() * 3) grow();
    const size_t mask = slots_.size() - 1;
    for (size_t at = static_cast<size_t>(print.low) & mask;; at = (at + 1) & mask) {
      Slot& slot = slots_[at];
      if (slot.id == kEmpty) {
        slot = Slot{print, next};
        ++count_;
        return {next, true};
      }
      if (slot.print == print) return {slot.id, false};
    }
  }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  struct Slot {
    Fingerprint print;
    uint32_t id = kEmpty;
  };
  void grow() {
    std::vector<Slot> old = std::exchange(slots_, std::vector<Slot>(std::max<size_t>(
                                                      1024, slots_.size() * 2)));
    count_ = 0;
    for (const Slot& slot : old) {
      if (slot.id != kEmpty) try_emplace(slot.print, slot.id);
    }
  }
  std::vector<Slot> slots_;
  size_t count_ = 0;
};

// Values kept once: the id of a value equal to one kept before is that one's. A value whose
// fingerprint is another's but which differs from it is kept apart, under no fingerprint.
template <typename T>
class Interned {
 public:
  uint32_t intern(const T& value, const Fingerprint& print) {
    const auto next = static_cast<uint32_t>(values_.size());
    const auto [id, fresh] = ids_.try_emplace(print, next);
    if (!fresh && values_[id] == value) return id;
    values_.push_back(value);  // a copy: a vector's without spare capacity
    return next;
  }
  const T& operator[](uint32_t id) const { return values_[id]; }

 private:
  FingerprintIds ids_;
  std::vector<T> values_;
};

// The fingerprint of a set: each member's mix summed in two lanes, so it does not depend on
// the order the members came in, and a set widened by a few members is fingerprinted by adding
// theirs (Search::summarise widens a cone one event at a time). Two sets that share it are
// still kept apart (Interned compares them).
class SetPrint {
 public:
  void add(uint64_t member) {
    low_ += mix64(member ^ 0x9e3779b97f4a7c15ULL);
    high_ += mix64(member * 0xd6e8feb86659fd93ULL + 1);
    ++size_;
  }
  void add(const Fingerprint& member) { add(member.high ^ mix64(member.low)); }
  Fingerprint finish() const { return Fingerprint{high_ ^ mix64(size_), low_ + size_}; }

 private:
  uint64_t low_ = 0;
  uint64_t high_ = 0;
  uint64_t size_ = 0;
};

// Widens the sorted set `set` by the sorted `more`, adding the members it gains to `print`;
// false (and nothing allocated) when it gains none.
inline bool widen(std::vector<uint64_t>& set, const std::vector<uint64_t>& more, SetPrint& print) {
  if (std::includes(set.begin(), set.end(), more.begin(), more.end())) return false;
  std::vector<uint64_t> merged;
  merged.reserve(set.size() + more.size());
  auto from = set.begin();
  for (const uint64_t member : more) {
    while (from != set.end() && *from < member) merged.push_back(*from++);
    if (from != set.end() && *from == member) {
      merged.push_back(*from++);
    } else {
      merged.push_back(member);
      print.add(member);
    }
  }
  merged.insert(merged.end(), from, set.end());
  set = std::move(merged);
  return true;
}

// Sorted sets, each kept once. The summary entries' sets (footprints, cones, roots) are most of
// a search's memory, and most of them equal another entry's (a search of 200,000 states of the
// claiming 2+2 story with one fault held 51 million resources in its entries' cones, 6.5
// million of them in distinct sets).
template <typename T>
class SetPool {
 public:
  SetPool() { intern({}); }  // id 0: the empty set
  uint32_t intern(const std::vector<T>& set) {
    SetPrint print;
    for (const T& member : set) print.add(member);
    return sets_.intern(set, print.finish());
  }
  // `print` is `set`'s SetPrint.
  uint32_t intern(const std::vector<T>& set, const Fingerprint& print) {
    return sets_.intern(set, print);
  }
  const std::vector<T>& operator[](uint32_t id) const { return sets_[id]; }

 private:
  Interned<std::vector<T>> sets_;
};

// The depth-first search: one execution (a replay) at a time, its stack of choices, and what
// it keeps across executions. Its methods are defined in dpor.cpp and dpor_races.cpp, as
// marked below.
class Search {
 public:
  Search(const Scenario& scenario, const ExploreSettings& settings);

  ExploreResult run();

  bool persistent_unsound() const { return persistent_unsound_; }

 private:
  // dpor.cpp: the executions, the explorer's choices, backtracking and the visited-state cache.
  bool late() const;
  void count_coverage(const Coverage& coverage);
  void execute(size_t first_new);
  static std::vector<Violation> first_broken(const std::vector<Violation>& violations,
                                             const EventLog& log);
  std::vector<uint16_t> order_of(const EventLog& log, size_t made) const;
  void note_goals(const World& world, const EventLog& log,
                  const std::optional<RunResult>& finished);
  void record_counterexamples(const std::vector<Violation>& violations, const EventLog& log);
  int64_t choose(World& world);
  void place(Node& node, World& world, const LoggedChoice& choice) const;
  int64_t choose_past_violation(const World& world, Node node);
  std::vector<Sleeper> asleep_on_arrival(const EventLog& log) const;
  bool covered_by_cache(const EventLog& log, const LoggedChoice& choice, const Node& node);
  int64_t take(Node node, uint32_t option);
  static bool asleep(const Node& node, const Fingerprint& job);
  bool bounded() const { return settings_.preemptions >= 0; }
  bool within_bound(const Node& node, uint32_t option) const {
    return inboxsim::dpor::within_bound(node, option, settings_.preemptions);
  }
  int64_t preemptions_so_far() const;
  bool next_execution(size_t& first_new);
  void remember(Node& node);

  void every(Node& node) {
    if (!node.event || node.every || node.alone || node.frozen) return;
    node.every = true;
    ++result_.full_expansions;
  }

  static void add_to_summary(Node& node, uint32_t id) {
    node.summary.push_back(id);
    if (node.summary.size() > 2 * node.summary_sorted + 64) {
      tidy(node.summary);
      node.summary_sorted = node.summary.size();
    }
  }

  // dpor_races.cpp: happens-before, the states' summaries and the races.
  uint32_t intern(const SummaryEntry& entry);
  EntrySets sets_of(const SummaryEntry& entry) const {
    return EntrySets{sets_[entry.footprint], sets_[entry.past], roots_[entry.roots]};
  }
  void summarise(const EventLog& log, const std::vector<Bits>& before, size_t first_new);
  void replay_races(const EventLog& log, const std::vector<Bits>& before, const LoggedChoice& here,
                    const std::vector<uint32_t>& summary);
  Node* node_of(const LoggedEvent& event);
  std::vector<bool> taken_alone(size_t count) const;
  std::vector<Bits> happens_before(const EventLog& log) const;
  void analyse(const EventLog& log, const std::vector<Bits>& before, size_t first_new);
  void ask_for_initial(Node& node, const EventLog& log, const std::vector<Bits>& before,
                       size_t earlier, std::optional<size_t> later);
  void ask_at_last_switch(const Node& node, const EventLog& log, const std::vector<Bits>& before,
                          size_t later);
  Node* want_last_switch(size_t below);
  struct SwitchPoint {
    Node* last = nullptr;
    bool unordered_after = false;
    bool asked = false;
  };
  SwitchPoint last_switch_for(size_t below, const EventLog& log, const std::vector<Bits>& before);
  void ask_at_switch_point(SwitchPoint& point, const SummaryEntry* entry, const LoggedChoice& here,
                           const EventLog& log, const std::vector<Bits>& before);

  const Scenario& scenario_;
  const ExploreSettings& settings_;
  Clock::time_point start_;
  std::vector<uint16_t> root_;
  std::vector<Node> stack_;
  std::unordered_set<Fingerprint, FingerprintHash> states_;
  std::unordered_set<Fingerprint, FingerprintHash> leaves_;
  std::unordered_map<Fingerprint, Visited, FingerprintHash> visited_;
  std::unordered_map<Fingerprint, int64_t, FingerprintHash> on_stack_;
  Interned<SummaryEntry> entries_;
  SetPool<uint64_t> sets_;      // the entries' footprints and cones
  SetPool<Fingerprint> roots_;  // the entries' roots
  GoalTracker goals_;
  ExploreResult result_;
  bool stopped_ = false;
  bool persistent_unsound_ = false;
};

}  // namespace dpor

}  // namespace inboxsim
