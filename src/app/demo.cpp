#include "app/demo.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "kernel/file_names.h"
#include "kernel/text.h"
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

RunResult narrated_run(const Scenario& scenario, const NarratedRunOptions& options,
                       std::ostream& out) {
  Narrator narrator(out, options.narrator);
  RunOptions run_options;
  run_options.seed = options.seed;
  run_options.db_dir = options.db_dir;
  run_options.record_rows = options.record_rows;
  run_options.keep_trace = options.keep_trace;
  if (options.narrate) {
    std::map<std::string, int64_t> opening;
    for (const auto& [name, spec] : scenario.accounts) opening[name] = spec.balance;
    narrator.set_opening_balances(opening);
    narrator.set_config(scenario.config);
    narrator.set_steps(scenario.steps);
    if (!options.narrator.quiet) {
      out << "\n== " << printable(scenario.name) << ": " << printable(scenario.title) << "\n";
      if (!scenario.description.empty()) out << printable(scenario.description) << "\n";
    }
    run_options.listener = [&narrator, &options, &out](const TraceEvent& event) {
      narrator.on_event(event);
      if (!options.pause_on.at(event.kind)) return;
      narrator.flush();
      out << "  [Enter] next " << (options.pause_on.every_event ? "event" : "stop") << std::flush;
      std::string line;
      std::getline(std::cin, line);
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
      out << "  [Enter] next step" << std::flush;
      std::string line;
      std::getline(std::cin, line);
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

// A break-it story passes when the money really goes wrong; the index says what broke.
std::string broken_invariants(const RunResult& result) {
  if (result.violations.empty()) return {};
  std::string names;
  for (const Violation& violation : result.violations) {
    if (!names.empty()) names += ", ";
    names += invariant_name(violation.invariant);
  }
  return "<div class=\"broke\">breaks: " + escape_html(names) + "</div>";
}

}  // namespace

std::string render_demo_index(const std::vector<RunResult>& results) {
  std::string rows;
  for (const RunResult& result : results) {
    rows += "<tr><td class=\"verdict " + std::string(result.passed ? "pass" : "fail") + "\">" +
            (result.passed ? "PASS" : "FAIL") + "</td><td><a href=\"" +
            escape_html(safe_file_stem(result.name)) + ".html\">" + escape_html(result.name) +
            "</a></td><td>" + escape_html(result.title) + broken_invariants(result) +
            "</td><td class=\"lesson\">" + escape_html(result.lesson) + "</td></tr>\n";
  }
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<title>inboxsim: the idempotent consumer, watched</title><style>"
         "body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:72rem;color:#1f2933}"
         "h1{margin-bottom:.2rem}p.sub{color:#52606d;margin-top:0}"
         "table{border-collapse:collapse;width:100%}td,th{padding:.55rem .7rem;"
         "border-bottom:1px solid #e4e7eb;text-align:left;vertical-align:top}"
         "th{background:#f5f7fa}a{color:#2457a6;font-weight:600;text-decoration:none}"
         ".verdict{font-weight:700}.pass{color:#207a3c}.fail{color:#b42318}"
         ".lesson{color:#3e4c59;font-style:italic}"
         ".broke{color:#b42318;font-size:.9em;margin-top:.2rem}</style></head><body>"
         "<h1>The idempotent consumer (inbox), watched</h1>"
         "<p class=\"sub\">Each scenario runs a small bank on an at-least-once broker. Open one "
         "to step through it event by event.</p><table><thead><tr><th></th><th>scenario</th>"
         "<th>what happens</th><th>the lesson</th></tr></thead><tbody>\n" +
         rows + "</tbody></table></body></html>\n";
}

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

const std::vector<LessonBlock>& lesson_blocks() {
  // The teacher's guide's order (docs/scenarios.md, "Suggested order for a lesson"): keep the two
  // in step.
  static const std::vector<LessonBlock> blocks = {
      {"The mechanics: the pattern before anything fails, and the business outcomes",
       {"01", "02", "03"}},
      {"Duplicates are normal: a lost ack, a lost confirm, a relay that dies, the seed's two "
       "experiments",
       {"08", "16", "43", "04", "05", "68"}},
      {"Break it: delete a unique index, and ask why nothing broke", {"06", "07"}},
      {"Crashes at every point, and why the dedupe record shares the transaction",
       {"09", "10", "11", "60", "28", "45", "66", "67"}},
      {"Why not something simpler: Redis, short windows, unstable ids, forgotten decisions",
       {"12", "13", "14", "15", "63", "17", "29", "51"}},
      {"Natural idempotency, order, compensations", {"18", "19", "44", "46"}},
      {"A real-world bug: one dedupe key for two consumers", {"20", "21"}},
      {"Defence in depth, and what to do when the last line catches a duplicate",
       {"22", "23", "24", "25", "26", "27", "49"}},
      {"Fault paths: retry, the send transport's retry, error queue, replay, poison messages",
       {"39", "55", "56", "57", "37", "38", "47", "61", "62", "40", "53", "41", "42"}},
      {"Two instances at once, where the unique keys earn their place, and a proof of it",
       {"33", "34", "32", "59", "30", "31", "64", "65", "35", "54", "58", "36", "50", "52"}},
      {"Beyond RabbitMQ: Kafka's exactly-once and the offset-commit window", {"48"}},
  };
  return blocks;
}

namespace {

struct OrderedFile {
  std::string file;
  size_t block = 0;  // index into lesson_blocks(); lesson_blocks().size() for the rest
};

bool stem_has_number(const std::string& file, std::string_view number) {
  const std::string stem = std::filesystem::path(file).stem().string();
  return stem.size() > number.size() && stem.compare(0, number.size(), number) == 0 &&
         stem[number.size()] == '-';
}

// Puts `files` in the guide's lesson order, each with its block; files no block names follow
// in file-name order, as a last block.
std::vector<OrderedFile> in_lesson_order(const std::vector<std::string>& files) {
  std::vector<OrderedFile> ordered;
  std::vector<bool> placed(files.size(), false);
  const auto& blocks = lesson_blocks();
  for (size_t block = 0; block < blocks.size(); ++block) {
    for (const std::string_view number : blocks[block].numbers) {
      for (size_t i = 0; i < files.size(); ++i) {
        if (placed[i] || !stem_has_number(files[i], number)) continue;
        placed[i] = true;
        ordered.push_back(OrderedFile{files[i], block});
      }
    }
  }
  for (size_t i = 0; i < files.size(); ++i) {
    if (!placed[i]) ordered.push_back(OrderedFile{files[i], blocks.size()});
  }
  return ordered;
}

// `files` in the order given, each with the block of the guide that names it.
std::vector<OrderedFile> in_given_order(const std::vector<std::string>& files) {
  std::vector<OrderedFile> ordered;
  const auto& blocks = lesson_blocks();
  for (const std::string& file : files) {
    size_t block = blocks.size();
    for (size_t b = 0; b < blocks.size() && block == blocks.size(); ++b) {
      for (const std::string_view number : blocks[b].numbers) {
        if (stem_has_number(file, number)) block = b;
      }
    }
    ordered.push_back(OrderedFile{file, block});
  }
  return ordered;
}

void print_block_break(std::ostream& out, size_t block) {
  const auto& blocks = lesson_blocks();
  const std::string title =
      block < blocks.size() ? std::string(blocks[block].title) : "More stories";
  const std::string rule(78, '=');
  out << "\n\n"
      << rule << "\n"
      << (block < blocks.size() ? "Lesson block " + std::to_string(block + 1) + " of " +
                                      std::to_string(blocks.size()) + ": "
                                : std::string())
      << printable(title) << "\n"
      << rule << "\n";
}

}  // namespace

int run_demo(const DemoOptions& options, std::ostream& out, std::ostream& err) {
  std::vector<std::string> files = scenario_files(options.scenario_dir);
  if (files.empty()) {
    err << "inboxsim: " << printable(options.scenario_dir)
        << ": expected a directory of scenario files\n";
    return 2;
  }
  if (const auto unknown = select_files(files, options.only)) {
    err << "inboxsim: demo " << printable(*unknown) << ": expected the start of a scenario name in "
        << options.scenario_dir << " (see `inboxsim list`)\n";
    return 2;
  }
  // The library in the guide's order; the scenarios a teacher names, in the order named.
  const std::vector<OrderedFile> ordered =
      options.only.empty() ? in_lesson_order(files) : in_given_order(files);
  std::vector<Scenario> scenarios;
  for (const OrderedFile& file : ordered) {
    ParseResult parsed = parse_scenario_file(file.file);
    if (parsed.error) {
      err << "inboxsim: " << printable(parsed.error->message()) << "\n";
      return 2;
    }
    scenarios.push_back(std::move(*parsed.scenario));
  }
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
  for (size_t i = 0; i < scenarios.size(); ++i) {
    const Scenario& scenario = scenarios[i];
    if (talk && (i == 0 || ordered[i].block != ordered[i - 1].block)) {
      print_block_break(out, ordered[i].block);
    }
    RunResult result = narrated_run(scenario, run, out);
    const std::filesystem::path page =
        std::filesystem::path(options.out_dir) / (safe_file_stem(result.name) + ".html");
    if (!write_text(page, render_html(result))) {
      err << "inboxsim: cannot write " << printable(page.string()) << "\n";
      return 2;
    }
    results.push_back(std::move(result));
  }
  const std::filesystem::path index = std::filesystem::path(options.out_dir) / "index.html";
  if (!write_text(index, render_demo_index(results))) {
    err << "inboxsim: cannot write " << printable(index.string()) << "\n";
    return 2;
  }
  const auto passed =
      std::count_if(results.begin(), results.end(), [](const RunResult& r) { return r.passed; });
  out << "\n"
      << passed << " of " << results.size() << " scenarios met their expectations.\n"
      << "Reports: " << std::filesystem::absolute(index).string()
      << " (one page per scenario, linked from there)\n";
  return passed == static_cast<long>(results.size()) ? 0 : 1;
}

}  // namespace inboxsim
