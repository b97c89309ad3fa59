// The DPOR search's race analysis (fuzz/dpor_state.h): happens-before over a run's events, the
// summaries of the states' subtrees, source-DPOR's races in each execution, and the races of a
// cached subtree with the order that reached it again.
#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "fuzz/dpor_state.h"
#include "kernel/assert.h"
#include "kernel/fingerprint.h"
#include "kernel/footprint.h"

namespace inboxsim::dpor {

namespace {

// Two events of a run that do not commute (the dependence relation): they share a resource,
// or one of them is ordered with every event.
bool dependent(const LoggedEvent& a, const LoggedEvent& b) {
  return everything(a) || everything(b) || footprints_meet(a.footprint, b.footprint);
}

// A race in words, for the report of what the search spends its states on: the two events and
// what they meet on, a table's resources with the table's name ("resume account-service /
// resume account-service on next rowid of account-service.ledger, row").
std::string race_words(const LoggedEvent& first, const LoggedEvent& second) {
  std::string words = std::string(first.kind) + " " + std::string(first.who) + " / " +
                      std::string(second.kind) + " " + std::string(second.who) + " on ";
  if (everything(first) || everything(second)) return words + "everything";
  std::vector<std::string> parts;
  for (const uint64_t resource : meeting_resources(first.footprint, second.footprint)) {
    std::string part(resource_class_name(static_cast<ResourceClass>(resource >> 56)));
    if (const std::string name = resource_name(resource); !name.empty()) part += " of " + name;
    if (std::find(parts.begin(), parts.end(), part) == parts.end()) parts.push_back(part);
  }
  std::sort(parts.begin(), parts.end());
  const char* separator = "";
  for (const std::string& part : parts) {
    words += separator;
    words += part;
    separator = ", ";
  }
  return words;
}

}  // namespace

uint32_t Search::intern(const SummaryEntry& entry) {
  Hasher hasher;
  hasher.add(entry.job).add(entry.everything).add(entry.pending_story).add(entry.story);
  hasher.add(entry.past_everything);
  // Equal sets have equal ids (SetPool).
  hasher.add(static_cast<uint64_t>(entry.footprint)).add(static_cast<uint64_t>(entry.past));
  hasher.add(static_cast<uint64_t>(entry.roots));
  return entries_.intern(entry, hasher.finish());
}

// The summary entries of the events from `first_new` on, for every state of the stack before
// each of them.
void Search::summarise(const EventLog& log, const std::vector<Bits>& before, size_t first_new) {
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
    entry.footprint = sets_.intern(event.footprint);
    entry.everything = event.violated;
    entry.story = event.story;
    entry.pending_story = event.story && event.pending;
    std::vector<Fingerprint> roots;
    std::vector<Fingerprint> interned_roots;
    std::vector<uint64_t> past;  // entry.past's resources
    SetPrint past_print;
    uint32_t id = 0;
    bool fresh = true;    // the entry differs from the one interned as `id`
    size_t cone = index;  // events of the cone from here on are in past and roots
    std::vector<size_t> members;  // the cone's events from `cone` on, story steps left out
    for (size_t at = nodes.size(); at-- > 0;) {
      const size_t start = starts[at];
      if (start > index) continue;
      // Widen the cone down to this state's event.
      while (cone > start) {
        --cone;
        if (!before[index].test(cone)) continue;
        const LoggedEvent& ancestor = log.events[cone];
        if (everything(ancestor) && !entry.past_everything) {
          entry.past_everything = true;
          fresh = true;
        }
        if (widen(past, ancestor.footprint, past_print)) fresh = true;
        if (!ancestor.story) members.push_back(cone);
      }
      // Its roots here: the cone's jobs (itself included) made before this state.
      roots.clear();
      if (!event.story && event.creator < static_cast<int64_t>(start)) roots.push_back(event.job);
      for (const size_t member : members) {
        const LoggedEvent& ancestor = log.events[member];
        if (ancestor.creator < static_cast<int64_t>(start)) roots.push_back(ancestor.job);
      }
      std::sort(roots.begin(), roots.end());
      roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
      // Most states of the stack see the same cone and roots as the one above them: the
      // entry interned for that one is theirs too.
      if (fresh || roots != interned_roots) {
        if (fresh) entry.past = sets_.intern(past, past_print.finish());
        SummaryEntry here = entry;
        here.roots = roots_.intern(roots);
        id = intern(here);
        interned_roots = roots;
        fresh = false;
      }
      add_to_summary(*nodes[at], id);
    }
  }
}

namespace {

// What follows an event e of this order, as replay_races reads it: the resources of what
// follows it, and whether anything after it does not.
struct WhatFollows {
  std::vector<uint64_t> after_with;     // resources of e and what follows it
  std::vector<uint64_t> after_without;  // of what strictly follows it
  bool barrier = false;          // e, or a story step that follows it, is ordered with every event
  bool unordered_after = false;  // some event after e does not follow it
};

// What follows event `earlier` (e) of `log`. `after_with` holds e's own resources only:
// replay_races adds `after_without` to it unless a barrier orders all that follows e.
WhatFollows what_follows(const EventLog& log, const std::vector<Bits>& before,
                         const std::vector<bool>& free, size_t earlier) {
  const LoggedEvent& taken = log.events[earlier];
  WhatFollows after;
  after.barrier = everything(taken);
  after.after_with = taken.footprint;
  for (size_t event = earlier + 1; event < log.events.size(); ++event) {
    if (!before[event].test(earlier)) {
      after.unordered_after = true;
      continue;
    }
    const LoggedEvent& follower = log.events[event];
    if (follower.story) after.barrier = true;
    if (free[event]) continue;  // taken alone: it orders nothing after it
    std::vector<uint64_t> merged;
    std::set_union(after.after_without.begin(), after.after_without.end(),
                   follower.footprint.begin(), follower.footprint.end(),
                   std::back_inserter(merged));
    after.after_without = std::move(merged);
  }
  return after;
}

// The jobs waiting now (at `here`) that something following event `earlier` made, sorted.
std::vector<Fingerprint> made_by_followers(const LoggedChoice& here,
                                           const std::vector<Bits>& before, size_t earlier) {
  std::vector<Fingerprint> made_after;
  for (size_t option = 0; option < here.enabled.size(); ++option) {
    const int64_t born = option < here.born.size() ? here.born[option] : -1;
    if (born >= 0 && (static_cast<size_t>(born) == earlier ||
                      before[static_cast<size_t>(born)].test(earlier))) {
      made_after.push_back(here.enabled[option]);
    }
  }
  std::sort(made_after.begin(), made_after.end());
  return made_after;
}

// Whether an event of a cached subtree (`entry`) races with this order's event `taken` (see
// replay_races): they do not commute, and nothing orders them through the subtree, through
// what follows `taken` (`after`), or through the entry's roots (none is in `made_after`).
bool races(const SummaryEntry& entry, const EntrySets& sets, const LoggedEvent& taken,
           const WhatFollows& after, const std::vector<Fingerprint>& made_after) {
  if (entry.story) return false;
  if (!entry.everything && !everything(taken) &&
      !footprints_meet(sets.footprint, taken.footprint)) {
    return false;  // they commute
  }
  if (entry.past_everything || footprints_meet(after.after_with, sets.past) ||
      footprints_meet(after.after_without, sets.footprint)) {
    return false;  // ordered through the subtree or through this order
  }
  if (std::any_of(sets.roots.begin(), sets.roots.end(), [&](const Fingerprint& root) {
        return std::binary_search(made_after.begin(), made_after.end(), root);
      })) {
    return false;  // made, or its cone made, by what follows e
  }
  return true;
}

// Asks `node` for `job` if it is enabled there within a preemption bound (`bound` >= 0; an
// option past it is as if not enabled). Returns whether it is.
bool ask_for_job(Node& node, const Fingerprint& job, int64_t bound) {
  const auto named = std::find(node.enabled.begin(), node.enabled.end(), job);
  if (named == node.enabled.end()) return false;
  const auto option = static_cast<uint32_t>(named - node.enabled.begin());
  if (!within_bound(node, option, bound)) return false;
  if (!contains(node.backtrack, option)) node.backtrack.push_back(option);
  return true;
}

// Asks `node` (the state before e) for every job enabled there that still waits now (at
// `here`), e's left out: when every event after e follows it, an event that does not follow e
// in what comes next has its cone's roots among them (one taken since follows e). Returns
// whether it asked for one.
bool ask_for_waiting(Node& node, const LoggedChoice& here, int64_t bound) {
  bool found = false;
  for (const Fingerprint& job : here.enabled) {
    if (job != node.current.job && ask_for_job(node, job, bound)) found = true;
  }
  return found;
}

// Asks `node` (the state before e) for the initials of a race with `entry` when everything
// after e follows it: those of the entry's job and roots that are enabled there, or, if none
// is, the jobs that still wait (ask_for_waiting). Returns whether it asked for one.
bool ask_for_roots(Node& node, const SummaryEntry& entry, const EntrySets& sets,
                   const LoggedChoice& here, int64_t bound) {
  bool found = ask_for_job(node, entry.job, bound);
  for (const Fingerprint& root : sets.roots) {
    if (ask_for_job(node, root, bound)) found = true;
  }
  // Its roots are another state's (handed up from a hit below).
  return found || ask_for_waiting(node, here, bound);
}

}  // namespace

// A state explored before, reached again by another order: its subtree is not explored
// again, but each event taken in it may race with an event of this order before it. It races
// with event e when they do not commute and nothing else orders them: nothing that follows e
// here (e included) meets the resources of its cone in the subtree, nothing that strictly
// follows e meets it, and none of its roots was made by something that follows e. For each
// race it asks what source-DPOR asks for, as if the event were taken next.
void Search::replay_races(const EventLog& log, const std::vector<Bits>& before,
                          const LoggedChoice& here, const std::vector<uint32_t>& summary) {
  for (const uint32_t id : summary) {
    if (entries_[id].pending_story) {
      for (Node& node : stack_) every(node);
    }
  }
  const size_t count = log.events.size();
  const std::vector<bool> free = taken_alone(count);
  for (Node& node : stack_) {
    if (!node.event || node.alone || node.frozen) continue;
    // Under a bound a node that explores every event may still ask at its last switch.
    if (node.every && !bounded()) continue;
    const auto earlier = static_cast<size_t>(node.logged);
    const LoggedEvent& taken = log.events[earlier];
    // What follows the node's event in this order, and whether anything after it does not.
    WhatFollows after = what_follows(log, before, free, earlier);
    // A story step after it orders all that follows.
    if (after.barrier && !taken.violated) continue;
    {
      std::vector<uint64_t> merged;
      std::set_union(after.after_with.begin(), after.after_with.end(), after.after_without.begin(),
                     after.after_without.end(), std::back_inserter(merged));
      after.after_with = std::move(merged);
    }
    // The jobs waiting now that something following e made.
    const std::vector<Fingerprint> made_after = made_by_followers(here, before, earlier);
    bool asked = false;
    SwitchPoint point;
    bool point_known = !bounded();
    for (const uint32_t id : summary) {
      const SummaryEntry& entry = entries_[id];
      const EntrySets sets = sets_of(entry);
      if (!races(entry, sets, taken, after, made_after)) continue;
      ++result_.races;
      if (!point_known) {
        // Under a bound each race is also reversed at the last switch before it (unless that
        // is this node, where it is reversed anyway). Found at the node's first race only, so
        // that a node with none marks nothing as wanting a switch above it.
        point = last_switch_for(static_cast<size_t>(&node - stack_.data()) + 1, log, before);
        if (point.last == &node) point.last = nullptr;
        point_known = true;
      }
      if (point.last != nullptr) ask_at_switch_point(point, &entry, here, log, before);
      if (node.every) continue;
      if (after.unordered_after) {
        // An initial of the events after e that do not follow it starts the other order,
        // whatever the later event is: asked once.
        if (!asked) ask_for_initial(node, log, before, earlier, std::nullopt);
        asked = true;
        continue;
      }
      // Everything after e follows it: the initials are among the event's roots (the jobs of
      // its cone waiting before e), or the event itself.
      if (!ask_for_roots(node, entry, sets, here, settings_.preemptions) && bounded()) {
        every(node);
      }
    }
  }
}

Node* Search::node_of(const LoggedEvent& event) {
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
std::vector<bool> Search::taken_alone(size_t count) const {
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
std::vector<Bits> Search::happens_before(const EventLog& log) const {
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
void Search::analyse(const EventLog& log, const std::vector<Bits>& before, size_t first_new) {
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
      if (node == nullptr || node->alone) continue;
      // Under a bound, the order that reverses the race may need a preemption here that an
      // order switching earlier does not: also asked at the last switch (whether or not this
      // node explores every event already).
      if (bounded()) ask_at_last_switch(*node, log, before, later);
      if (node->every) continue;
      ++result_.races;
      const LoggedEvent& first = log.events[earlier];
      ++result_.races_by_pair[race_words(first, event)];
      ask_for_initial(*node, log, before, earlier, later);
    }
  }
}

// Makes sure the state before event `earlier` tries an initial of the events after it that do
// not follow it (then `later`, if given): one that starts an order where those come first.
void Search::ask_for_initial(Node& node, const EventLog& log, const std::vector<Bits>& before,
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
    if (!within_bound(node, option)) continue;  // past the bound: as if not enabled
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

// Bounded partial-order reduction's conservative backtrack point (Coons, Musuvathi and
// McKinley, OOPSLA 2013): a race of `node`'s event with event `later` is also reversed at the
// last state at or before it where the runner switched, where the instance the race wants
// first may take over without a preemption. Nothing is asked when no switch came before (no
// runner yet: nothing preempts). A race with an event of a cached subtree: ask_at_switch_point.
void Search::ask_at_last_switch(const Node& node, const EventLog& log,
                                const std::vector<Bits>& before, size_t later) {
  Node* last = want_last_switch(static_cast<size_t>(&node - stack_.data()) + 1);
  if (last == nullptr || last == &node || last->every || last->alone) return;
  ask_for_initial(*last, log, before, static_cast<size_t>(last->logged), later);
}

// Where a race of `node`'s event with an event of a cached subtree is also reversed under a
// bound (see ask_at_last_switch): the last switch at or before `node`, and whether some event
// after the switch's own does not follow it.
Search::SwitchPoint Search::last_switch_for(size_t below, const EventLog& log,
                                            const std::vector<Bits>& before) {
  SwitchPoint point;
  Node* last = want_last_switch(below);
  if (last == nullptr || last->alone) return point;
  point.last = last;
  const auto switched = static_cast<size_t>(last->logged);
  for (size_t event = switched + 1; event < log.events.size(); ++event) {
    if (!before[event].test(switched)) {
      point.unordered_after = true;
      break;
    }
  }
  return point;
}

// Reverses a race with a cached subtree's `entry` at the switch point too: the reordered events
// are those after the switch's event that do not follow it, then the entry's cone. An initial of
// the first is one of the whole (asked once); when every event after the switch follows it, the
// initials are among the entry's job and roots (ask_for_roots), or, if none is within the bound
// there, every event. Without an entry (a cached subtree whose race wanted a switch above its
// state), they are among the jobs that waited at the switch and still wait at `here`.
void Search::ask_at_switch_point(SwitchPoint& point, const SummaryEntry* entry,
                                 const LoggedChoice& here, const EventLog& log,
                                 const std::vector<Bits>& before) {
  Node& last = *point.last;
  if (last.every) return;
  if (point.unordered_after) {
    if (!point.asked) {
      ask_for_initial(last, log, before, static_cast<size_t>(last.logged), std::nullopt);
    }
    point.asked = true;
    return;
  }
  const bool asked = entry != nullptr
                         ? ask_for_roots(last, *entry, sets_of(*entry), here, settings_.preemptions)
                         : ask_for_waiting(last, here, settings_.preemptions);
  if (!asked) every(last);
}

// The last switch among the stack's first `below` nodes; each state after it (among them) is
// marked as wanting a switch above it (Node::switch_wanted_above).
Node* Search::want_last_switch(size_t below) {
  for (size_t at = below; at-- > 0;) {
    Node& candidate = stack_[at];
    if (!candidate.event || candidate.frozen) continue;
    if (switches(candidate)) return &candidate;
    candidate.switch_wanted_above = true;
  }
  return nullptr;
}

}  // namespace inboxsim::dpor
