#include "app/explore_verb.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "app/cli_common.h"
#include "fuzz/explore.h"
#include "fuzz/goals.h"
#include "fuzz/matrix.h"
#include "fuzz/progress.h"
#include "kernel/assert.h"
#include "kernel/file_names.h"
#include "kernel/text.h"
#include "report/explore_view.h"
#include "scenario/parse.h"
#include "scenario/runner.h"
#include "scenario/write.h"

namespace inboxsim {

namespace {

constexpr int64_t kFaultsMax = 16;
constexpr int64_t kAckWaitExpiriesMax = 16;  // as a schedule's (scenario/parse.cpp)
constexpr const char* kAckWaitExpiriesHelp =
    "N: on broker.kind = jetstream, how many times in one order an ack wait may run out, each "
    "a choice among the pending events (the oldest unacked delivery of a consumer goes again to "
    "the next client that pulls; default 1); the verdict is then PROVEN up to N";

// The exhaustive matrix's fault kinds when --faults is above 0: the two that make a duplicate
// (a crash between the commit and the ack redelivers; the broker delivers twice), which is what
// the five defences are about. Every kind at once multiplies the orders past what 32 rows can
// finish.
constexpr std::string_view kExhaustiveMatrixKinds = "crash,duplicate";

// "crash,duplicate" → the kinds; nothing on a name that is not an explorable kind.
std::optional<std::array<bool, kFaultKindCount>> parse_kinds(const std::string& text) {
  if (text.empty()) return explorable_fault_kinds();
  std::array<bool, kFaultKindCount> kinds{};
  if (text == "none") return kinds;
  for (const std::string_view name : split_commas(text)) {
    const std::optional<FaultKind> kind = parse_fault_kind(name);
    if (!kind || !explorable_fault_kind(*kind)) return std::nullopt;
    kinds[static_cast<size_t>(*kind)] = true;
  }
  return kinds;
}

// "sleep,persistent" → those reductions on in `settings`; false on a name that is not one.
bool parse_reduction(const std::string& text, ExploreSettings& settings) {
  settings.sleep_sets = false;
  settings.persistent_sets = false;
  settings.dpor = false;
  if (text == "none") return true;
  for (const std::string_view name : split_commas(text)) {
    if (name == "dpor") {
      settings.dpor = true;
    } else if (name == "sleep") {
      settings.sleep_sets = true;
    } else if (name == "persistent") {
      settings.persistent_sets = true;
    } else {
      return false;
    }
  }
  return true;
}

// A progress line on a terminal. How many states a search will reach is not known before it
// ends, so the time left is an upper bound: the time to reach --max-states at the rate so far.
class Progress {
 public:
  Progress(const std::string& name, int64_t max_states)
      : line_(std::cerr, "explore " + printable(name)), max_states_(max_states) {}
  void update(int64_t states, int64_t transitions, int64_t frontier, int64_t depth,
              int64_t violations) {
    const double seconds = std::max(line_.elapsed_seconds(), 1e-3);
    const double rate = static_cast<double>(states) / seconds;
    std::string counters = std::to_string(states) + " states, " + std::to_string(transitions) +
                           " transitions, " + std::to_string(frontier) + " waiting, depth " +
                           std::to_string(depth) + ", " + std::to_string(violations) +
                           " violation(s), " + std::to_string(static_cast<int64_t>(rate)) +
                           " states/s";
    if (rate > 0 && states < max_states_) {
      counters += ", at most " +
                  duration_text(static_cast<double>(max_states_ - states) / rate) +
                  " to --max-states";
    }
    line_.update(counters, -1);
  }

 private:
  ProgressLine line_;
  int64_t max_states_;
};

// Writes `scenario` into `dir` as NAME.json (its path into `path`) and runs the file as a user
// meets it: parsed back and replayed. Nothing when it cannot be written. A file that does not
// parse back is a bug of ours.
std::optional<RunResult> write_and_replay(const std::string& dir, const Scenario& scenario,
                                          std::string& path) {
  const std::string text = scenario_to_json(scenario).dump(2) + "\n";
  const std::filesystem::path file =
      std::filesystem::path(dir) / (safe_file_stem(scenario.name) + ".json");
  if (!write_file(file.string(), text)) return std::nullopt;
  path = file.string();
  const ParseResult parsed = parse_scenario_text(text, path);
  INBOXSIM_ASSERT(parsed.scenario.has_value());
  RunOptions options;
  options.keep_trace = false;
  return run_scenario(*parsed.scenario, options);
}

// Writes each reached goal's witness and checks that `inboxsim run` replays it to the goal (a
// broken invariant's witness is its counterexample, written already). Returns false when one
// cannot be written.
bool write_goal_witnesses(const std::string& dir, ExploreResult& result) {
  bool ok = true;
  for (ExploreGoal& goal : result.goals) {
    if (goal.status != ExploreGoal::Status::reached) continue;
    if (goal.goal.kind == Goal::Kind::broken) {  // its witness is the counterexample
      for (const ExploreCounterexample& cx : result.counterexamples) {
        if (cx.invariant == goal.goal.invariant) goal.path = cx.path;
      }
      continue;
    }
    const std::optional<RunResult> replay = write_and_replay(dir, goal.witness, goal.path);
    if (!replay) {
      ok = false;
      continue;
    }
    INBOXSIM_ASSERT(goal_reached(goal.goal, replay->violations, replay->coverage, &*replay));
  }
  return ok;
}

// Parses `file` (or takes the built-in story) with `sets` applied; an exit code on bad input.
std::optional<int> load_story(const std::string& file, const std::vector<std::string>& sets,
                              Scenario& out) {
  if (file.empty()) {
    out = exhaustive_matrix_story();
  } else {
    ParseResult parsed = parse_scenario_file(file);
    if (parsed.error) return bad_input(parsed.error->message());
    out = std::move(*parsed.scenario);
  }
  const std::string name = file.empty() ? "the built-in story" : file;
  if (auto failed = apply_sets(sets, out.config)) return failed;
  if (const std::optional<Refusal> refusal = clockless_refusal(out)) {
    return bad_input(name + ": pointer: " + refusal->pointer + ": expected " + refusal->expected +
                     " (explore)");
  }
  if (out.schedule) {
    return bad_input(name + ": pointer: /schedule: expected no schedule: this file is one "
                            "explored order already (replay it with inboxsim run)");
  }
  return std::nullopt;
}

}  // namespace

bool write_counterexamples(const std::string& dir, ExploreResult& result) {
  bool ok = true;
  for (ExploreCounterexample& cx : result.counterexamples) {
    const std::optional<RunResult> replay = write_and_replay(dir, cx.scenario, cx.path);
    if (!replay) {
      ok = false;
      continue;
    }
    const bool reproduced =
        std::any_of(replay->violations.begin(), replay->violations.end(),
                    [&](const Violation& violation) { return violation.invariant == cx.invariant; });
    INBOXSIM_ASSERT(reproduced);
  }
  return ok;
}

CLI::App* add_explore_verb(CLI::App& app, ExploreCommand& command) {
  CLI::App* verb = app.add_subcommand(
      "explore",
      "Prove a small story: every order of its events and every placement of up to K faults.");
  verb->add_option("FILE", command.files, "Scenario files: the stories to explore")->required();
  verb->add_option("--faults", command.faults,
                   "K: faults injected in one order, beyond the story's own (default 2)")
      ->check(CLI::Range(int64_t{0}, kFaultsMax));
  verb->add_option("--fault-kinds", command.fault_kinds,
                   "Comma-separated kinds to inject, or none (default: every kind that needs "
                   "no clock: crash, drop_ack, drop_connection, nack, duplicate, lose_confirm, "
                   "publish_nack)");
  verb->add_option("--ack-wait-expiries", command.ack_wait_expiries, kAckWaitExpiriesHelp)
      ->check(CLI::Range(int64_t{0}, kAckWaitExpiriesMax));
  verb->add_option("--max-states", command.max_states,
                   "Stop after this many distinct states (default 2000000)")
      ->check(CLI::Range(int64_t{1}, int64_t{1'000'000'000}));
  verb->add_option("--jobs", command.jobs,
                   "Worker threads of a breadth-first search (--reduction without dpor); dynamic "
                   "partial-order reduction is one depth-first walk")
      ->check(CLI::Range(int64_t{1}, int64_t{256}));
  verb->add_option("--set", command.sets, kSetOptionHelp);
  verb->add_flag("--continue", command.keep_going,
                 "Go on after the first violation: the shortest order for every invariant that "
                 "breaks");
  verb->add_option("--reduction", command.reduction,
                   "Comma-separated reductions to use: dpor (dynamic partial-order reduction, "
                   "depth-first: source-DPOR with sleep sets), sleep (sleep sets, breadth-first), "
                   "persistent (an ack or a confirm nothing can race is taken alone), or none "
                   "(every event of every state, breadth-first: slower, the same verdict; "
                   "default dpor,persistent)");
  verb->add_option("--operator", command.operator_mode,
                   "redrive: when faults are injected, end the story with rounds of 'run until "
                   "quiescent, redrive every error and dead-letter queue', as the fuzzer's "
                   "operator does (default); none: nobody redrives, a parked message stays")
      ->check(CLI::IsMember({"redrive", "none"}));
  verb->add_option("--preemptions", command.preemptions,
                   "Only orders with at most P preemptions (a step of a handler of one instance "
                   "taken while the instance that took the last handler step has its next step "
                   "ready); the verdict is then PROVEN up to P preemptions, never PROVEN. With "
                   "dpor, bounded partial-order reduction: only inert events sleep, and each race "
                   "is also reversed at the last switch of instance before it")
      ->check(CLI::Range(int64_t{0}, int64_t{10'000}));
  verb->add_flag("--json", command.json, "Print one JSON object (an array for several files)");
  verb->add_option("--out", command.out_dir,
                   "Where counterexamples go (default ./counterexamples)");
  return verb;
}

namespace {

// The settings every story of the command shares, read from its flags. Returns the exit code
// of a bad flag, having said why, instead.
std::optional<int> shared_settings(const ExploreCommand& command, ExploreSettings& settings) {
  const auto kinds = parse_kinds(command.fault_kinds);
  if (!kinds) {
    return bad_input("--fault-kinds " + command.fault_kinds +
                     ": expected a comma-separated list of " + fault_kinds_text(explorable_fault_kinds(), ",") +
                     ", or none (delay and pause need a clock, which an exploration has not)");
  }
  ExploreSettings reductions;
  const std::string reduction = !command.reduction.empty() ? command.reduction : "dpor,persistent";
  if (!parse_reduction(reduction, reductions)) {
    return bad_input("--reduction " + command.reduction +
                     ": expected a comma-separated list of sleep,persistent,dpor, or none");
  }
  settings.faults = command.faults;
  settings.fault_kinds = *kinds;
  settings.ack_wait_expiries = command.ack_wait_expiries;
  settings.max_states = command.max_states;
  settings.jobs = command.jobs;
  settings.keep_going = command.keep_going;
  settings.sleep_sets = reductions.sleep_sets;
  settings.persistent_sets = reductions.persistent_sets;
  settings.dpor = reductions.dpor;
  settings.preemptions = command.preemptions;
  settings.operator_redrives = command.operator_mode == "redrive";
  return std::nullopt;
}

}  // namespace

int explore_command(const ExploreCommand& command) {
  ExploreSettings shared;
  if (const std::optional<int> failed = shared_settings(command, shared)) return *failed;
  std::vector<Scenario> scenarios;
  for (const std::string& file : command.files) {
    Scenario scenario;
    if (auto failed = load_story(file, command.sets, scenario)) return *failed;
    scenarios.push_back(std::move(scenario));
  }
  if (!command.out_dir.empty()) {
    if (auto failed = prepare_output_dir("--out", command.out_dir)) return *failed;
  }
  const bool tty = isatty(STDERR_FILENO) != 0;
  nlohmann::ordered_json json_results = nlohmann::ordered_json::array();
  bool violated = false;
  bool written = true;
  for (const Scenario& scenario : scenarios) {
    ExploreSettings settings = shared;
    settings.goals = scenario.expect.goals;
    std::optional<Progress> progress;
    if (tty) {
      progress.emplace(scenario.name, command.max_states);
      settings.progress = [&](int64_t states, int64_t transitions, int64_t frontier,
                              int64_t depth, int64_t violations) {
        progress->update(states, transitions, frontier, depth, violations);
      };
    }
    ExploreResult result = explore(scenario, settings);
    progress.reset();
    if (!command.out_dir.empty()) {
      written &= write_counterexamples(command.out_dir, result);
      written &= write_goal_witnesses(command.out_dir, result);
    }
    violated |= explore_failed(result);
    if (command.json) {
      json_results.push_back(explore_json(result));
    } else {
      print_explore(std::cout, result);
    }
  }
  if (command.json) {
    std::cout << (json_results.size() > 1 ? json_results.dump(2) : json_results[0].dump(2))
              << "\n";
  }
  if (!written) return kExitBadInput;
  return violated ? kExitFailed : kExitOk;
}

void add_exhaustive_matrix_options(CLI::App& matrix, ExhaustiveMatrixCommand& command) {
  matrix.add_flag("--exhaustive", command.exhaustive,
                  "Explore every order of one small story per row (a proof up to K faults) "
                  "instead of fuzzing seeds");
  matrix.add_option("--story", command.story,
                    "With --exhaustive: the story to explore (default: one transfer, run to "
                    "quiescence)");
  matrix.add_option("--faults", command.faults,
                    "With --exhaustive: K, faults injected in one order (default 0: the races of the "
                    "concurrent instances alone; each fault multiplies a row's states about 100x)")
      ->check(CLI::Range(int64_t{0}, kFaultsMax));
  matrix.add_option("--fault-kinds", command.fault_kinds,
                    "With --exhaustive: comma-separated kinds to inject, or none (default " +
                        std::string(kExhaustiveMatrixKinds) + ")");
  matrix.add_option("--ack-wait-expiries", command.ack_wait_expiries,
                    std::string("With --exhaustive: ") + kAckWaitExpiriesHelp)
      ->check(CLI::Range(int64_t{0}, kAckWaitExpiriesMax));
  matrix.add_option("--max-states", command.max_states,
                    "With --exhaustive: distinct states per row before the row is left "
                    "unfinished (default 300000)")
      ->check(CLI::Range(int64_t{1}, int64_t{1'000'000'000}));
  matrix.add_option("--operator", command.operator_mode,
                    "With --exhaustive: redrive (when faults are injected, each row's story ends "
                    "with an operator redriving what they parked; default) or none")
      ->check(CLI::IsMember({"redrive", "none"}));
}

namespace {

// Each row's search, from the command's flags: explore's default reduction (dpor,persistent).
ExploreSettings exhaustive_settings(const ExhaustiveMatrixCommand& command,
                                    const std::array<bool, kFaultKindCount>& kinds) {
  ExploreSettings settings;
  settings.faults = command.faults;
  settings.fault_kinds = kinds;
  settings.ack_wait_expiries = command.ack_wait_expiries;
  settings.max_states = command.max_states;
  settings.jobs = command.jobs;
  settings.dpor = true;
  settings.operator_redrives = command.operator_mode == "redrive";
  return settings;
}

}  // namespace

int exhaustive_matrix_command(const ExhaustiveMatrixCommand& command) {
  const std::string kinds_text =
      command.fault_kinds.empty() ? std::string(kExhaustiveMatrixKinds) : command.fault_kinds;
  const auto kinds = parse_kinds(kinds_text);
  if (!kinds) {
    return bad_input("--fault-kinds " + command.fault_kinds +
                     ": expected a comma-separated list of " +
                     fault_kinds_text(explorable_fault_kinds(), ",") +
                     ", or none (delay and pause need a clock, which an exploration has not)");
  }
  Scenario story;
  if (auto failed = load_story(command.story, command.sets, story)) return *failed;
  if (!command.out_dir.empty()) {
    if (auto failed = prepare_output_dir("--out", command.out_dir)) return *failed;
  }
  ExploreSettings settings = exhaustive_settings(command, *kinds);
  const bool tty = isatty(STDERR_FILENO) != 0;
  constexpr size_t kRows = size_t{1} << kDefenceCount;
  // One row at a time: a progress line per row, naming it. Side by side: one counts the rows.
  const bool side_by_side = settings.jobs > 1;
  std::optional<Progress> progress;
  std::optional<ProgressLine> rows_line;
  size_t settled = 0;
  if (tty && side_by_side) {
    rows_line.emplace(std::cerr, "matrix --exhaustive " + printable(story.name));
    rows_line->update("0/" + std::to_string(kRows) + " rows settled", 0.0);
  } else if (tty) {
    settings.progress = [&](int64_t states, int64_t transitions, int64_t frontier, int64_t depth,
                            int64_t violations) {
      if (progress) progress->update(states, transitions, frontier, depth, violations);
    };
    progress.emplace(story.name + " row 1/" + std::to_string(kRows), settings.max_states);
  }
  bool written = true;
  const std::vector<ExhaustiveRow> rows =
      run_exhaustive_matrix(story, settings, [&](size_t index, ExhaustiveRow& row) {
        if (!command.out_dir.empty()) written &= write_counterexamples(command.out_dir, row.result);
        progress.reset();
        if (rows_line) rows_line->clear();
        // A row can take many minutes with faults injected: each is reported on stderr as it
        // ends, so a long run shows what it has settled, and an interrupted one keeps it.
        std::cerr << "matrix row " << index + 1 << "/" << kRows << " ("
                  << defences_off_tag(row.defences) << "): " << exhaustive_verdict(row.result)
                  << ", " << row.result.states << " states, " << row.result.wall_ms / 1000
                  << " s\n"
                  << std::flush;
        ++settled;
        if (rows_line) {
          rows_line->update(std::to_string(settled) + "/" + std::to_string(kRows) +
                                " rows settled",
                            static_cast<double>(settled) / static_cast<double>(kRows));
        } else if (tty && index + 1 < kRows) {
          progress.emplace(story.name + " row " + std::to_string(index + 2) + "/" +
                               std::to_string(kRows),
                           settings.max_states);
        }
      });
  progress.reset();
  rows_line.reset();
  if (command.json) {
    std::cout << exhaustive_matrix_json(story, settings, rows).dump(2) << "\n";
  } else {
    print_exhaustive_matrix(std::cout, story, settings, rows);
  }
  if (!written) return kExitBadInput;
  // As `matrix`: a failure is a break with every defence on (the first row); rows with
  // defences off are expected to break.
  const ExhaustiveRow& all_on = rows.front();
  return all_on.result.counterexamples.empty() ? kExitOk : kExitFailed;
}

}  // namespace inboxsim
