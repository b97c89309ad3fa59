#include "app/course.h"

#include "kernel/assert.h"

namespace inboxsim {

namespace {

// Lesson 50's two explore runs, as its description runs them: 96 states, a few milliseconds.
std::vector<ExploreRun> explores_of_50() {
  return {ExploreRun{0,
                     "",
                     {},
                     1,
                     false,
                     "PROVEN: every order of the two copies on two instances, and none breaks"},
          ExploreRun{0,
                     "",
                     {"account.ledger_unique=false"},
                     2,
                     true,
                     "BROKEN without the key: the shortest order that debits alice twice, "
                     "written as a scenario `inboxsim run` replays"}};
}

// Lesson 52's two explore runs: the proof with two duplicates placed anywhere (1,793 states,
// under a second) and its description's counterexample with two, without the key.
std::vector<ExploreRun> explores_of_52() {
  return {ExploreRun{2,
                     "duplicate",
                     {},
                     1,
                     false,
                     "PROVEN with two duplicates placed anywhere: every order of every "
                     "placement; a proof of this story and these faults, not of another story "
                     "or a crash"},
          ExploreRun{2,
                     "duplicate",
                     {"account.ledger_unique=false"},
                     1,
                     true,
                     "BROKEN without the key: the broker delivers Transfer.Requested twice and "
                     "both copies debit, in 3 choices"}};
}

// Lesson 77's three explore runs: two transfers proven for every order (433 states, a tenth of
// a second), then with a duplicate anywhere (3,375 states, about a second), then the double
// debit without account-service's inbox and the ledger key. The proof with a crash anywhere
// takes minutes: the guide's to run before class.
std::vector<ExploreRun> explores_of_77() {
  return {ExploreRun{0,
                     "",
                     {},
                     1,
                     false,
                     "PROVEN: every order of the two transfers' chains, one order per class of "
                     "orders that differ only in steps that commute"},
          ExploreRun{1,
                     "duplicate",
                     {},
                     2,
                     false,
                     "PROVEN with a duplicate at any delivery or publish of either transfer: a "
                     "proof of this story, on instances that take one message at a time"},
          ExploreRun{1,
                     "duplicate",
                     {"account.inbox=none", "account.ledger_unique=false"},
                     1,
                     true,
                     "BROKEN without account-service's inbox and the ledger key: one duplicate "
                     "of Transfer.Requested debits twice, in 1 choice"}};
}

// The teacher's guide's order (docs/scenarios.md, "Suggested order for a lesson"), each
// scenario with its minutes in class: 2 for a contrast with the story before it, 3 for a
// story, 4 for one whose narration needs reading together.
std::vector<LessonBlock> make_blocks() {
  return {
      {"The mechanics: the pattern before anything fails, and the business outcomes",
       {{"01", 4}, {"02", 2}, {"03", 3}}},
      {"Duplicates are normal: a lost ack, a lost confirm, a relay that dies, two relays, "
       "exercises 1 and 2",
       {{"08", 3}, {"16", 3}, {"43", 3}, {"78", 2}, {"04", 3}, {"05", 2}, {"68", 2}}},
      {"Break it: delete a unique index, and ask why nothing broke", {{"06", 3}, {"07", 3}}},
      {"Crashes at every point, and why the dedupe record shares the transaction",
       {{"09", 3}, {"10", 3}, {"11", 3}, {"60", 3}, {"28", 2}, {"45", 3}, {"66", 3}, {"67", 2}}},
      {"Why not something simpler: Redis, short windows, unstable ids, forgotten decisions",
       {{"12", 3}, {"13", 3}, {"14", 3}, {"15", 2}, {"63", 2}, {"17", 3}, {"29", 3}, {"51", 4}}},
      {"Natural idempotency, order, compensations", {{"18", 3}, {"19", 2}, {"44", 3}, {"46", 2}}},
      {"A real-world bug: one dedupe key for two consumers", {{"20", 3}, {"21", 2}}},
      {"Defence in depth, and what to do when the last line catches a duplicate",
       {{"22", 2}, {"23", 2}, {"24", 2}, {"25", 2}, {"26", 2}, {"27", 3}, {"49", 2}}},
      {"Fault paths: retry, the send transport's retry, error queue, replay, poison messages",
       {{"39", 2},
        {"55", 3},
        {"56", 3},
        {"57", 3},
        {"37", 3},
        {"38", 2},
        {"47", 3},
        {"61", 3},
        {"62", 2},
        {"40", 3},
        {"53", 2},
        {"41", 2},
        {"42", 3}}},
      {"Two instances at once, where the unique keys earn their place, and a proof of it",
       {{"33", 3},
        {"34", 2},
        {"32", 4},
        {"59", 2},
        {"30", 3},
        {"31", 2},
        {"64", 3},
        {"65", 2},
        {"35", 3},
        {"54", 2},
        {"58", 2},
        {"36", 3},
        {"69", 2},
        {"70", 2},
        {"50", 3, explores_of_50()},
        {"52", 2, explores_of_52()},
        {"77", 3, explores_of_77()}}},
      {"Beyond RabbitMQ: Kafka's exactly-once and the offset-commit window", {{"48", 3}}},
      {"Store, then ack: Wolverine's durable inbox and its durability agent",
       {{"71", 3}, {"72", 3}, {"73", 2}}},
      {"Redelivery by timer: NATS JetStream's ack wait and its dedupe window",
       {{"74", 3}, {"76", 2}, {"75", 3}}},
  };
}

// The plans a teacher picks from. Each block of a hand-made plan is the guide's story in fewer
// scenarios; a test checks that every plan's minutes fit its name.
std::vector<DemoPlan> make_plans() {
  std::vector<DemoPlan> plans = {
      {"50min",
       "one class: the pattern, duplicates as normal operation, a deleted index, crashes, why "
       "Redis and short windows fail, the error queue and its replay, and a proof by the "
       "explorer, run live",
       {{"The pattern, and why duplicates are normal", {"01", "08", "04", "05"}},
        {"Break it, and crash at every point", {"06", "07", "09", "10"}},
        {"Why not something simpler", {"12", "13", "17"}},
        {"A fault path: the error queue, and its replay", {"37", "38"}},
        {"Two instances, and a proof for every order", {"50", "52"}}}},
  };
  DemoPlan full{"full", "the whole library in the guide's order, every block", {}};
  for (const LessonBlock& block : lesson_blocks()) {
    PlanBlock plan_block{block.title, {}};
    for (const Lesson& lesson : block.lessons) plan_block.numbers.push_back(lesson.number);
    full.blocks.push_back(std::move(plan_block));
  }
  plans.push_back(std::move(full));
  return plans;
}

}  // namespace

const std::vector<LessonBlock>& lesson_blocks() {
  static const std::vector<LessonBlock> blocks = make_blocks();
  return blocks;
}

const Lesson* find_lesson(std::string_view number) {
  for (const LessonBlock& block : lesson_blocks()) {
    for (const Lesson& lesson : block.lessons) {
      if (lesson.number == number) return &lesson;
    }
  }
  return nullptr;
}

int64_t lesson_minutes(const Lesson& lesson) {
  int64_t minutes = lesson.minutes;
  for (const ExploreRun& run : lesson.explores) minutes += run.minutes;
  return minutes;
}

int64_t block_minutes(const LessonBlock& block) {
  int64_t minutes = 0;
  for (const Lesson& lesson : block.lessons) minutes += lesson_minutes(lesson);
  return minutes;
}

const std::vector<DemoPlan>& demo_plans() {
  static const std::vector<DemoPlan> plans = make_plans();
  return plans;
}

const DemoPlan* find_plan(std::string_view name) {
  for (const DemoPlan& plan : demo_plans()) {
    if (plan.name == name) return &plan;
  }
  return nullptr;
}

namespace {

int64_t plan_block_minutes(const PlanBlock& block) {
  int64_t minutes = 0;
  for (const std::string_view number : block.numbers) {
    const Lesson* lesson = find_lesson(number);
    INBOXSIM_ASSERT(lesson != nullptr);
    minutes += lesson_minutes(*lesson);
  }
  return minutes;
}

}  // namespace

int64_t plan_minutes(const DemoPlan& plan) {
  int64_t minutes = 0;
  for (const PlanBlock& block : plan.blocks) minutes += plan_block_minutes(block);
  return minutes;
}

std::string plan_names_text() {
  std::string text;
  for (const DemoPlan& plan : demo_plans()) {
    text += (text.empty() ? "" : ", ") + std::string(plan.name);
  }
  return text;
}

std::string plan_list_text() {
  std::string text;
  for (const DemoPlan& plan : demo_plans()) {
    text += std::string(plan.name) + "  " + std::to_string(plan_minutes(plan)) + " min  " +
            std::string(plan.covers) + "\n";
    for (size_t b = 0; b < plan.blocks.size(); ++b) {
      const PlanBlock& block = plan.blocks[b];
      text += "  " + std::to_string(b + 1) + ". " + std::string(block.title) + " (" +
              std::to_string(plan_block_minutes(block)) + " min):";
      for (const std::string_view number : block.numbers) {
        const Lesson* lesson = find_lesson(number);
        text += " " + std::string(number) + " (" + std::to_string(lesson_minutes(*lesson)) +
                " min" + (lesson->explores.empty() ? "" : ", with explore") + ")";
      }
      text += "\n";
    }
  }
  return text;
}

std::string explore_flags_text(const ExploreRun& run) {
  std::string text = "--faults " + std::to_string(run.faults);
  if (!run.fault_kinds.empty()) text += " --fault-kinds " + std::string(run.fault_kinds);
  for (const std::string_view set : run.sets) text += " --set " + std::string(set);
  return text;
}

}  // namespace inboxsim
