#include "app/run_verb.h"

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli_args.h"
#include "app/cli_common.h"
#include "app/demo.h"
#include "fuzz/progress.h"
#include "kernel/file_names.h"
#include "kernel/text.h"
#include "report/html.h"
#include "report/json_output.h"
#include "report/mermaid.h"
#include "report/narrate.h"
#include "scenario/parse.h"
#include "scenario/runner.h"

namespace inboxsim {

namespace {

// With several scenario files, `--html out.html` becomes out-NAME.html for each.
std::string output_path(const std::string& path, const std::string& name, bool several) {
  if (!several) return path;
  const std::filesystem::path original(path);
  std::filesystem::path renamed =
      original.parent_path() /
      (original.stem().string() + "-" + safe_file_stem(name) + original.extension().string());
  return renamed.string();
}

// Parses every file and applies --set; the first problem found ends the command with exit 2
// before anything runs.
std::optional<int> load_scenarios(const RunCommand& command, std::vector<Scenario>& scenarios) {
  for (const std::string& file : command.files) {
    ParseResult parsed = parse_scenario_file(file);
    if (parsed.error) return bad_input(parsed.error->message());
    scenarios.push_back(std::move(*parsed.scenario));
  }
  for (Scenario& scenario : scenarios) {
    if (auto failed = apply_sets(command.sets, scenario.config)) return failed;
  }
  return std::nullopt;
}

bool write_views(const RunCommand& command, const RunResult& result, bool several) {
  bool ok = true;
  if (!command.trace_path.empty()) {
    ok &= write_file(output_path(command.trace_path, result.name, several), trace_jsonl(result));
  }
  if (!command.html_path.empty()) {
    ok &= write_file(output_path(command.html_path, result.name, several), render_html(result));
  }
  if (!command.mermaid_path.empty()) {
    ok &=
        write_file(output_path(command.mermaid_path, result.name, several), render_mermaid(result));
  }
  return ok;
}

}  // namespace

int run_command(const RunCommand& command) {
  std::optional<uint64_t> seed;
  if (command.seed_text) {
    uint64_t value = 0;
    if (!parse_seed(*command.seed_text, value)) {
      return bad_input("--seed " + *command.seed_text + ": expected an integer from 0 to " +
                       std::to_string(kSeedMax));
    }
    seed = value;
  }
  if (!command.db_dir.empty()) {
    if (auto failed = prepare_output_dir("--db-dir", command.db_dir)) return *failed;
  }
  std::vector<Scenario> scenarios;
  if (auto failed = load_scenarios(command, scenarios)) return *failed;
  const bool several = scenarios.size() > 1;
  nlohmann::ordered_json json_results = nlohmann::ordered_json::array();
  bool all_passed = true;
  bool views_ok = true;
  NarratedRunOptions options;
  options.narrate = !command.json;
  options.narrator.color = use_color(command.color);
  options.narrator.quiet = command.quiet;
  options.narrator.verbose = command.verbose;
  if (command.verbose && (command.json || command.quiet)) {
    return bad_input("--verbose prints every line of the narration: not with --json or --quiet");
  }
  options.pause_after_step = command.step;
  if (!command.step_on.empty()) {
    if (auto error = parse_event_stops(command.step_on, options.pause_on)) return bad_input(*error);
    if (command.json || command.quiet) {
      return bad_input("--step-on stops the narration: not with --json or --quiet");
    }
  }
  options.seed = seed;
  options.db_dir = command.db_dir;
  options.record_rows = !command.html_path.empty();
  options.keep_trace =
      !command.trace_path.empty() || !command.html_path.empty() || !command.mermaid_path.empty();
  options.show_rows = command.show_rows;
  // A long run shows its progress on a terminal's stderr, unless the narration is going to the
  // terminal itself (it is its own progress there) or a demo waits for Enter after each step.
  const bool progress = isatty(STDERR_FILENO) != 0 && !command.step && command.step_on.empty() &&
                        (command.json || command.quiet || isatty(STDOUT_FILENO) == 0);
  for (const Scenario& scenario : scenarios) {
    std::optional<ProgressLine> line;
    if (progress) {
      line.emplace(std::cerr, "run " + printable(scenario.name));
      options.on_step = [&line](size_t done, size_t total) {
        line->update("step " + std::to_string(done) + "/" + std::to_string(total),
                     static_cast<double>(done) / static_cast<double>(std::max<size_t>(total, 1)));
      };
    }
    RunResult result = narrated_run(scenario, options, std::cout);
    line.reset();
    views_ok &= write_views(command, result, several);
    all_passed &= result.passed;
    if (command.json) json_results.push_back(run_result_json(result));
  }
  if (command.json) {
    std::cout << (several ? json_results.dump(2) : json_results[0].dump(2)) << "\n";
  }
  if (!views_ok) return kExitBadInput;
  return all_passed ? kExitOk : kExitFailed;
}

CLI::App* add_run_verb(CLI::App& app, RunCommand& command) {
  CLI::App* run_app = app.add_subcommand("run", "Run scenario files, narrated, and check them.");
  run_app->add_option("FILE", command.files, "Scenario files (JSON)")->required();
  run_app->add_option("--seed", command.seed_text,
                      "Seed for the run, 0 to 2^53 (default: the scenario's seed)");
  run_app->add_flag("--json", command.json, "Print one JSON object (an array for several files)");
  run_app->add_option("--trace", command.trace_path, "Write the event trace as JSON lines");
  run_app->add_option("--html", command.html_path, "Write a self-contained HTML report");
  run_app->add_option("--mermaid", command.mermaid_path, "Write a Mermaid sequence diagram");
  run_app->add_option("--db-dir", command.db_dir, "Keep each service's SQLite database here");
  run_app->add_flag("--quiet", command.quiet, "Print only the verdict");
  run_app->add_flag("--verbose", command.verbose,
                    "Print every line of the narration (by default a block of lines that "
                    "repeats identically is shown twice, then counted on one line)");
  run_app->add_flag("--step", command.step, "Pause after each step until Enter (live demos)");
  run_app->add_option("--step-on", command.step_on,
                      "Pause until Enter after each event of these kinds: event (every event), "
                      "or kinds such as crash,dedupe_hit,violation");
  run_app->add_flag("--show-rows", command.show_rows,
                    "Print the database and queue rows each event changed, under its line");
  run_app->add_option("--color", command.color, "Colours: auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  run_app->add_option("--set", command.sets, kSetOptionHelp);
  return run_app;
}

}  // namespace inboxsim
