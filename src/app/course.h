// The course as data, in one table: the teacher's guide's lesson blocks, each scenario's minute
// estimate in class, the explore runs a lesson shows live (50 and 52), and the demo plans (a
// class of a given length) that pick from them. `demo`, `demo --plan`, `list` and the demo's
// index page read it; docs/scenarios.md ("Suggested order for a lesson", "Plans") says the
// same, and a test keeps the two in step.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace inboxsim {

// One `inboxsim explore` run a lesson shows live, after its scenario's narrated run.
struct ExploreRun {
  int64_t faults = 0;                  // --faults K
  std::string_view fault_kinds;        // --fault-kinds; empty: every explorable kind
  std::vector<std::string_view> sets;  // --set KEY=VALUE, in order
  int64_t minutes = 0;                 // in class, with the talk about its verdict
  bool broken = false;                 // the verdict the lesson expects: BROKEN, else PROVEN
  std::string_view watch_for;          // what the class should see in the verdict
};

// One scenario of the library in the course: its number ("08" names 08-….json), the minutes
// it takes in class (the run and the talk about it), and its live explore runs.
struct Lesson {
  std::string_view number;
  int64_t minutes = 0;
  std::vector<ExploreRun> explores = {};
};

// One block of a lesson: a title and its scenarios, in the order to show them.
struct LessonBlock {
  std::string_view title;
  std::vector<Lesson> lessons;
};

// Returns the blocks of the teacher's guide, in class order: every scenario of the library once.
const std::vector<LessonBlock>& lesson_blocks();

// Returns the lesson of scenario `number`, or nullptr when no block names it.
const Lesson* find_lesson(std::string_view number);

// Returns a lesson's minutes with its explore runs'.
int64_t lesson_minutes(const Lesson& lesson);

// Returns the minutes of a block: the sum of its lessons'.
int64_t block_minutes(const LessonBlock& block);

// A block of a plan: a title and the scenario numbers it shows (their minutes are the lessons').
struct PlanBlock {
  std::string_view title;
  std::vector<std::string_view> numbers;
};

// A demo plan: a class of a given length, the scenarios in order, grouped in blocks.
struct DemoPlan {
  std::string_view name;    // `demo --plan NAME`
  std::string_view covers;  // one sentence: what the class sees
  std::vector<PlanBlock> blocks;
};

// Returns the plans: the hand-made ones ("50min") and "full", the whole guide in its blocks.
const std::vector<DemoPlan>& demo_plans();

// Returns the plan named `name`, or nullptr.
const DemoPlan* find_plan(std::string_view name);

// Returns a plan's minutes: its lessons' with their explore runs.
// REQUIRES: every number the plan names is a lesson.
int64_t plan_minutes(const DemoPlan& plan);

// Returns the plans' names, comma-separated (what an unknown plan is answered with).
std::string plan_names_text();

// Returns `demo --plan list`: one line per plan, its name, its minutes and what it covers, then
// its blocks with their scenarios and minutes.
std::string plan_list_text();

// Returns "--faults 0", "--faults 2 --fault-kinds duplicate --set account.ledger_unique=false":
// an explore run's flags as a user types them.
std::string explore_flags_text(const ExploreRun& run);

}  // namespace inboxsim
