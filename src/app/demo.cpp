#include "app/demo.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "app/cli_common.h"
#include "app/explore_verb.h"
#include "fuzz/explore.h"
#include "kernel/assert.h"
#include "kernel/file_names.h"
#include "kernel/text.h"
#include "report/description.h"
#include "report/explore_view.h"
#include "report/html.h"
#include "report/legend.h"
#include "scenario/parse.h"
#include "scenario/runner.h"

namespace inboxsim {

std::optional<std::string> parse_event_stops(std::string_view text, EventStops& stops) {
  stops = EventStops();
  size_t start = 0;
  for (;;) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view name = text.substr(start, comma - start);
    if (name == "event") {
      stops.every_event = true;
    } else if (const std::optional<EventKind> kind = parse_event_kind(name)) {
      stops.kinds[static_cast<size_t>(*kind)] = true;
    } else {
      std::string names;
      for (size_t i = 0; i < kEventKindCount; ++i) {
        names += ", " + std::string(event_kind_name(static_cast<EventKind>(i)));
      }
      return "--step-on " + std::string(text) + ": " +
             (name.empty() ? std::string("an empty name") : "unknown event kind \"" + std::string(name) + "\"") +
             ": expected event (every event) or event kinds, comma-separated: " + names.substr(2);
    }
    if (comma == text.size()) return std::nullopt;
    start = comma + 1;
  }
}

bool checkpoint_selects(const Checkpoint& checkpoint, const TraceEvent& event) {
  return event_selected(checkpoint.kind, checkpoint.match, event);
}

namespace {

// The story's header: its title, then its description, one paragraph or its three parts.
void print_story_header(const Scenario& scenario, std::ostream& out) {
  out << "\n== " << printable(scenario.name) << ": " << printable(scenario.title) << "\n";
  if (!scenario.description.empty()) out << printable(scenario.description) << "\n";
  if (scenario.schedule && !scenario.schedule->clocked) {
    out << "(An explored order: it has no clock, so every event happens at 0 s; the #N give the "
           "order.)\n";
  }
  const DescriptionParts parts = shown_parts(scenario);
  if (parts.empty()) return;
  out << "Setup: " << printable(parts.setup) << "\n"
      << "Watch for: " << printable(parts.watch_for) << " (marked 👁 below)\n"
      << "Why: " << printable(parts.why) << "\n";
}

}  // namespace

namespace {

// Prints `prompt` and waits until the user presses Enter (a live demo's pause).
void wait_for_enter(std::ostream& out, std::string_view prompt) {
  out << prompt << std::flush;
  std::string line;
  std::getline(std::cin, line);
}

// Prints the question of every checkpoint whose `occurrence`-th selected event `event` is, right
// after its event and before the events that answer it. `asked` counts each checkpoint's
// selected events so far. Returns whether a question was asked.
bool ask_checkpoints(const Scenario& scenario, const TraceEvent& event, bool quiet,
                     std::vector<int64_t>& asked, Narrator& narrator, std::ostream& out) {
  bool question = false;
  for (size_t i = 0; i < scenario.checkpoints.size(); ++i) {
    const Checkpoint& checkpoint = scenario.checkpoints[i];
    if (!checkpoint_selects(checkpoint, event) || ++asked[i] != checkpoint.match.occurrence) {
      continue;
    }
    narrator.flush();
    if (!quiet) out << "  ❓ " << printable(checkpoint.question) << "\n";
    question = true;
  }
  return question;
}

// Hands the story to the narrator before the run: opening balances, config and steps.
void prepare_narrator(Narrator& narrator, const Scenario& scenario) {
  std::map<std::string, int64_t> opening;
  for (const auto& [name, spec] : scenario.accounts) opening[name] = spec.balance;
  narrator.set_opening_balances(opening);
  narrator.set_config(scenario.config);
  narrator.set_steps(scenario.steps);
}

}  // namespace

RunResult narrated_run(const Scenario& scenario, const NarratedRunOptions& options,
                       std::ostream& out) {
  Narrator narrator(out, options.narrator);
  RunOptions run_options;
  run_options.seed = options.seed;
  run_options.db_dir = options.db_dir;
  run_options.record_rows = options.record_rows;
  run_options.keep_trace = options.keep_trace;
  if (options.narrate) {
    prepare_narrator(narrator, scenario);
    if (!options.narrator.quiet) print_story_header(scenario, out);
    run_options.listener = [&narrator, &options, &out, &scenario,
                            asked = std::vector<int64_t>(scenario.checkpoints.size(), 0),
                            watch = SelectorCounter(shown_parts(scenario).watch_for_event),
                            watching = !shown_parts(scenario).empty(),
                            number = int64_t{0}](const TraceEvent& event) mutable {
      narrator.on_event(event);
      ++number;
      // The description's "watch for" is marked at its event, with the number the HTML
      // report's #event-N has.
      if (watching && watch.on_event(event)) {
        narrator.flush();
        if (!options.narrator.quiet) {
          out << "  👁 #" << number << " watch for: "
              << printable(shown_parts(scenario).watch_for) << "\n";
        }
      }
      // A run that steps waits after a checkpoint's question.
      const bool quiet = options.narrator.quiet;
      if (ask_checkpoints(scenario, event, quiet, asked, narrator, out) && !quiet &&
          (options.pause_after_step || options.pause_on.any())) {
        wait_for_enter(out, "  [Enter] the answer");
        return;
      }
      if (!options.pause_on.at(event.kind)) return;
      narrator.flush();
      wait_for_enter(out, options.pause_on.every_event ? "  [Enter] next event"
                                                       : "  [Enter] next stop");
    };
    if (options.show_rows) {
      run_options.row_listener = [&narrator](const RowHistory& history,
                                             const std::vector<RowChange>& changes) {
        narrator.on_row_changes(history, changes);
      };
    }
  }
  size_t steps_done = 0;
  if (options.pause_after_step) {
    run_options.after_step = [&out, &narrator](const Step&) {
      narrator.flush();  // the step's last lines, before the pause
      wait_for_enter(out, "  [Enter] next step");
    };
  } else if (options.on_step) {
    run_options.after_step = [&](const Step&) {
      options.on_step(++steps_done, scenario.steps.size());
    };
  }
  RunResult result = run_scenario(scenario, run_options);
  if (options.narrate) {
    narrator.summary(result);
    if (!options.narrator.quiet) {
      for (const std::string& fault : result.unfired_faults) {
        out << "  note: this fault never fired: " << printable(fault) << "\n";
      }
    }
  }
  return result;
}

namespace {

std::vector<std::string> scenario_files(const std::string& directory) {
  std::vector<std::string> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary);
  file << text;
  file.close();
  return static_cast<bool>(file);
}

}  // namespace

namespace {

// Keeps the files whose stem starts with one of `prefixes`, in the order of the prefixes (the
// teacher's order); all of them when there are none. Returns the first prefix that selects
// nothing, if any.
std::optional<std::string> select_files(std::vector<std::string>& files,
                                        const std::vector<std::string>& prefixes) {
  if (prefixes.empty()) return std::nullopt;
  std::vector<std::string> selected;
  for (const std::string& prefix : prefixes) {
    bool any = false;
    for (const std::string& file : files) {
      if (std::filesystem::path(file).stem().string().rfind(prefix, 0) != 0) continue;
      any = true;
      if (std::find(selected.begin(), selected.end(), file) == selected.end()) {
        selected.push_back(file);
      }
    }
    if (!any) return prefix;
  }
  files = std::move(selected);
  return std::nullopt;
}

// One scenario of a demo, in the order it runs: its file, the block it is shown in (an index
// into RunningOrder::blocks) and its lesson in the course, if the course has it.
struct OrderedFile {
  std::string file;
  size_t block = 0;
  const Lesson* lesson = nullptr;
};

struct RunningOrder {
  std::vector<std::string> blocks;  // titles, in order
  std::vector<OrderedFile> files;
};

// The number a library file's stem starts with: "08" for 08-lost-ack.json, empty for none.
std::string stem_number(const std::string& file) {
  const std::string stem = std::filesystem::path(file).stem().string();
  const size_t dash = stem.find('-');
  return dash == std::string::npos ? std::string() : stem.substr(0, dash);
}

const std::string* file_of_number(const std::vector<std::string>& files, std::string_view number) {
  for (const std::string& file : files) {
    if (stem_number(file) == number) return &file;
  }
  return nullptr;
}

// Puts `files` in the order of `plan`, each with its block; with `rest`, files the plan does
// not name follow in file-name order, as a last block. Returns the first number the plan names
// that no file has (the folder is not the library the plan was made for).
std::optional<std::string> in_plan_order(const std::vector<std::string>& files,
                                         const DemoPlan& plan, bool rest, RunningOrder& order) {
  std::vector<bool> placed(files.size(), false);
  for (const PlanBlock& block : plan.blocks) {
    bool any = false;
    for (const std::string_view number : block.numbers) {
      const std::string* file = file_of_number(files, number);
      if (file == nullptr) {
        if (!rest) return std::string(number);
        continue;  // the whole library of another folder: show what it has
      }
      placed[static_cast<size_t>(file - files.data())] = true;
      order.files.push_back(OrderedFile{*file, order.blocks.size(), find_lesson(number)});
      any = true;
    }
    if (any || !rest) order.blocks.emplace_back(block.title);
  }
  if (!rest) return std::nullopt;
  const size_t more = order.blocks.size();
  for (size_t i = 0; i < files.size(); ++i) {
    if (placed[i]) continue;
    if (order.blocks.size() == more) order.blocks.emplace_back("More stories");
    order.files.push_back(OrderedFile{files[i], more, nullptr});
  }
  return std::nullopt;
}

// `files` in the order given, each with the block of the guide that names it.
RunningOrder in_given_order(const std::vector<std::string>& files) {
  RunningOrder order;
  const DemoPlan& guide = *find_plan("full");
  for (const PlanBlock& block : guide.blocks) order.blocks.emplace_back(block.title);
  order.blocks.emplace_back("More stories");
  for (const std::string& file : files) {
    const std::string number = stem_number(file);
    size_t block = guide.blocks.size();
    for (size_t b = 0; b < guide.blocks.size(); ++b) {
      const auto& numbers = guide.blocks[b].numbers;
      if (std::find(numbers.begin(), numbers.end(), number) != numbers.end()) block = b;
    }
    order.files.push_back(OrderedFile{file, block, find_lesson(number)});
  }
  return order;
}

int64_t minutes_of(const OrderedFile& file) {
  return file.lesson == nullptr ? 0 : lesson_minutes(*file.lesson);
}

// The break before the scenarios from `first` on that share its block: its number, title and
// the minutes of what the demo shows of it.
void print_block_break(std::ostream& out, const RunningOrder& order, size_t first) {
  const size_t block = order.files[first].block;
  int64_t minutes = 0;
  for (size_t i = first; i < order.files.size() && order.files[i].block == block; ++i) {
    minutes += minutes_of(order.files[i]);
  }
  const std::string rule(78, '=');
  out << "\n\n"
      << rule << "\n"
      << "Lesson block " << block + 1 << " of " << order.blocks.size() << ": "
      << printable(order.blocks[block]);
  if (minutes > 0) out << " (" << minutes << " min)";
  out << "\n" << rule << "\n";
}

// Runs a lesson's explore run on `scenario` in-process, as `inboxsim explore FILE FLAGS` would,
// prints its verdict and writes its counterexamples into `cx_dir`. Returns the index line, and
// whether the verdict is the one the lesson expects, in `as_expected`.
std::string run_live_explore(const Scenario& scenario, const ExploreRun& run,
                             const std::string& cx_dir, bool talk, std::ostream& out,
                             bool& as_expected) {
  Scenario story = scenario;
  std::vector<std::string> sets(run.sets.begin(), run.sets.end());
  // The course's own flags: a set that does not apply is a bug in app/course.cpp.
  INBOXSIM_ASSERT(!apply_sets(sets, story.config).has_value());
  ExploreSettings settings;
  settings.dpor = true;  // as `inboxsim explore` searches by default (dpor,persistent)
  settings.faults = run.faults;
  settings.goals = story.expect.goals;
  settings.fault_kinds = explorable_fault_kinds();
  if (!run.fault_kinds.empty()) {
    settings.fault_kinds = {};
    for (const std::string_view name : split_commas(run.fault_kinds)) {
      const std::optional<FaultKind> kind = parse_fault_kind(name);
      INBOXSIM_ASSERT(kind.has_value());
      settings.fault_kinds[static_cast<size_t>(*kind)] = true;
    }
  }
  const std::string flags = explore_flags_text(run);
  if (talk) {
    out << "\n$ inboxsim explore " << printable(scenario.file) << " " << flags
        << "\n  watch for: " << run.watch_for << "\n";
  }
  ExploreResult result = explore(story, settings);
  if (!result.counterexamples.empty()) {
    std::error_code error;
    std::filesystem::create_directories(cx_dir, error);
    if (!error) write_counterexamples(cx_dir, result);
  }
  print_explore(out, result);
  // A search stops at the first violation it finds, so a broken verdict is final whether or not
  // the search completed; a proof needs the whole search.
  as_expected = run.broken ? !result.counterexamples.empty()
                           : result.complete && !explore_failed(result);
  return "explore " + flags + ": " + std::string(exhaustive_verdict(result)) + ", " +
         std::to_string(result.states) + " states";
}

}  // namespace

std::string library_list_text(const std::vector<Scenario>& scenarios) {
  std::vector<std::string> files;
  for (const Scenario& scenario : scenarios) files.push_back(scenario.file);
  RunningOrder order;
  in_plan_order(files, *find_plan("full"), true, order);
  size_t width = 0;
  for (const Scenario& scenario : scenarios) width = std::max(width, scenario.name.size());
  std::string text;
  for (size_t i = 0; i < order.files.size(); ++i) {
    const OrderedFile& file = order.files[i];
    if (i == 0 || file.block != order.files[i - 1].block) {
      int64_t minutes = 0;
      for (size_t j = i; j < order.files.size() && order.files[j].block == file.block; ++j) {
        minutes += minutes_of(order.files[j]);
      }
      text += "# Lesson block " + std::to_string(file.block + 1) + " of " +
              std::to_string(order.blocks.size()) + ": " + order.blocks[file.block] +
              (minutes > 0 ? " (" + std::to_string(minutes) + " min)" : std::string()) + "\n";
    }
    const auto found = std::find_if(scenarios.begin(), scenarios.end(),
                                    [&](const Scenario& s) { return s.file == file.file; });
    INBOXSIM_ASSERT(found != scenarios.end());
    const int64_t minutes = minutes_of(file);
    text += pad(found->name, width + 2) +
            pad(minutes > 0 ? std::to_string(minutes) + " min" : std::string(), 8) +
            printable(found->title) + "\n";
  }
  return text;
}

namespace {

// Puts the library's files in the order the demo runs them: a plan's, the scenarios the
// teacher names in the order named, or the full guide's. Returns false, having said why on
// `err`, when the plan or a name matches nothing.
bool choose_running_order(const DemoOptions& options, std::vector<std::string>& files,
                          RunningOrder& order, std::ostream& err) {
  if (!options.plan.empty()) {
    const DemoPlan* plan = find_plan(options.plan);
    if (plan == nullptr) {
      err << "inboxsim: demo --plan " << printable(options.plan) << ": expected a plan: "
          << plan_names_text() << ", or list (see `inboxsim demo --plan list`)\n";
      return false;
    }
    if (const auto missing = in_plan_order(files, *plan, false, order)) {
      err << "inboxsim: demo --plan " << plan->name << ": expected scenario " << *missing
          << "-… in " << printable(options.scenario_dir) << " (the plan is made for the "
          << "teaching library)\n";
      return false;
    }
  } else if (const auto unknown = select_files(files, options.only)) {
    err << "inboxsim: demo " << printable(*unknown) << ": expected the start of a scenario name in "
        << options.scenario_dir << " (see `inboxsim list`)\n";
    return false;
  } else if (options.only.empty()) {
    in_plan_order(files, *find_plan("full"), true, order);
  } else {
    order = in_given_order(files);  // the scenarios a teacher names, in the order named
  }
  return true;
}

// Parses every file of `order`, all before the first runs. Returns false, having said why on
// `err`, at the first that does not parse.
bool parse_in_order(const RunningOrder& order, std::vector<Scenario>& scenarios,
                    std::ostream& err) {
  for (const OrderedFile& file : order.files) {
    ParseResult parsed = parse_scenario_file(file.file);
    if (parsed.error) {
      err << "inboxsim: " << printable(parsed.error->message()) << "\n";
      return false;
    }
    scenarios.push_back(std::move(*parsed.scenario));
  }
  return true;
}

// The lesson explore runs of a demo and how many gave the verdict their lesson expects.
struct ExploreTally {
  size_t runs = 0;
  size_t as_expected = 0;
};

// Runs the lesson's explore runs of `file`, if it has a lesson, into `row.explores`.
void run_lesson_explores(const Scenario& scenario, const OrderedFile& file,
                         const std::string& cx_dir, bool talk, std::ostream& out,
                         DemoIndexRow& row, ExploreTally& tally) {
  if (file.lesson == nullptr) return;
  for (const ExploreRun& explore_run : file.lesson->explores) {
    bool as_expected = false;
    row.explores.push_back(run_live_explore(scenario, explore_run, cx_dir, talk, out, as_expected));
    ++tally.runs;
    tally.as_expected += as_expected ? 1 : 0;
  }
}

// The demo's last lines: how many scenarios and explore runs came out as expected, the class
// time, and where the reports are. Returns whether they all did.
bool print_demo_summary(const std::vector<RunResult>& results, const RunningOrder& order,
                        const ExploreTally& tally, const std::filesystem::path& index,
                        std::ostream& out) {
  const auto passed =
      std::count_if(results.begin(), results.end(), [](const RunResult& r) { return r.passed; });
  int64_t minutes = 0;
  for (const OrderedFile& file : order.files) minutes += minutes_of(file);
  out << "\n" << passed << " of " << results.size() << " scenarios met their expectations";
  if (tally.runs > 0) {
    out << "; " << tally.as_expected << " of " << tally.runs
        << " explore runs gave the verdict their lesson expects";
  }
  out << ".\n";
  if (minutes > 0) out << "In class: about " << minutes << " min.\n";
  out << "Reports: " << std::filesystem::absolute(index).string()
      << " (one page per scenario, linked from there)\n";
  return passed == static_cast<long>(results.size()) && tally.as_expected == tally.runs;
}

}  // namespace

int run_demo(const DemoOptions& options, std::ostream& out, std::ostream& err) {
  std::vector<std::string> files = scenario_files(options.scenario_dir);
  if (files.empty()) {
    err << "inboxsim: " << printable(options.scenario_dir)
        << ": expected a directory of scenario files\n";
    return 2;
  }
  RunningOrder order;
  if (!choose_running_order(options, files, order, err)) return 2;
  std::vector<Scenario> scenarios;
  if (!parse_in_order(order, scenarios, err)) return 2;
  std::error_code error;
  std::filesystem::create_directories(options.out_dir, error);
  if (error) {
    err << "inboxsim: " << printable(options.out_dir)
        << ": cannot create the folder: " << error.message() << "\n";
    return 2;
  }
  NarratedRunOptions run = options.run;
  run.narrator.legend = false;  // said once, here, instead of after every scenario
  const bool talk = run.narrate && !run.narrator.quiet;
  if (talk) {
    out << "The words the narration uses:\n" << printable(legend_text("  "));
  }
  std::vector<RunResult> results;
  results.reserve(scenarios.size());  // the index rows point into it
  std::vector<DemoIndexRow> rows;
  ExploreTally tally;
  const std::string cx_dir = (std::filesystem::path(options.out_dir) / "counterexamples").string();
  for (size_t i = 0; i < scenarios.size(); ++i) {
    const Scenario& scenario = scenarios[i];
    const OrderedFile& file = order.files[i];
    if (talk && (i == 0 || file.block != order.files[i - 1].block)) {
      print_block_break(out, order, i);
    }
    results.push_back(narrated_run(scenario, run, out));
    const RunResult& result = results.back();
    DemoIndexRow row{&result, order.blocks[file.block], minutes_of(file), {}};
    run_lesson_explores(scenario, file, cx_dir, talk, out, row, tally);
    rows.push_back(std::move(row));
    const std::filesystem::path page =
        std::filesystem::path(options.out_dir) / (safe_file_stem(result.name) + ".html");
    if (!write_text(page, render_html(result))) {
      err << "inboxsim: cannot write " << printable(page.string()) << "\n";
      return 2;
    }
  }
  const std::filesystem::path index = std::filesystem::path(options.out_dir) / "index.html";
  if (!write_text(index, render_demo_index(rows))) {
    err << "inboxsim: cannot write " << printable(index.string()) << "\n";
    return 2;
  }
  return print_demo_summary(results, order, tally, index, out) ? 0 : 1;
}

}  // namespace inboxsim
