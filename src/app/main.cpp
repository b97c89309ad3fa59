// The inboxsim command line (docs/contract.md §5, contract): run, list, and the verbs built on them.
//
// This file only turns flags into calls: every behaviour lives in the parts under src/. Exit
// codes: 0 all expectations met, 1 an expectation failed or a violation was found, 2 bad input
// or usage, 3 internal error.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli_args.h"
#include "app/cli_common.h"
#include "app/config_verb.h"
#include "app/demo.h"
#include "app/explore_verb.h"
#include "app/play_verb.h"
#include "app/library.h"
#include "fuzz/campaign.h"
#include "fuzz/matrix.h"
#include "fuzz/progress.h"
#include "kernel/file_names.h"
#include "kernel/text.h"
#include "report/campaign_view.h"
#include "report/glossary.h"
#include "report/html.h"
#include "report/json_output.h"
#include "report/mermaid.h"
#include "report/narrate.h"
#include "scenario/parse.h"
#include "scenario/runner.h"

#ifndef INBOXSIM_VERSION
#define INBOXSIM_VERSION "0.0.0"
#endif

namespace inboxsim {
namespace {

struct RunCommand {
  std::vector<std::string> files;
  std::optional<std::string> seed_text;
  bool json = false;
  std::string trace_path;
  std::string html_path;
  std::string mermaid_path;
  std::string db_dir;
  bool quiet = false;
  bool verbose = false;
  bool step = false;
  std::string step_on;
  bool show_rows = false;
  std::string color = "auto";
  std::vector<std::string> sets;
};

struct ListCommand {
  std::string directory;
};

struct GlossaryCommand {
  std::vector<std::string> words;  // one term, possibly of several words ("crash point")
};

struct DemoCommand {
  std::vector<std::string> only;
  std::string plan;
  std::string out_dir = "demo-out";
  std::string scenario_dir;
  std::string color = "auto";
  bool step = false;
  std::string step_on;
  bool quiet = false;
  bool verbose = false;
};

// `fuzz` and `matrix` (docs/contract.md §5): the options as typed; src/fuzz/ does the work.
// The options `fuzz` and `matrix` share: which seeds, what stories, how many workers.
struct CampaignFlags {
  std::string seeds;
  std::string workload = "standard";
  bool swarm = false;
  std::vector<std::string> sets;
  int64_t jobs = 1;
  std::string out_dir = "counterexamples";
  bool json = false;
};

CampaignFlags campaign_flags(std::string default_seeds) {
  CampaignFlags flags;
  flags.seeds = std::move(default_seeds);
  return flags;
}

struct FuzzCommand {
  CampaignFlags campaign = campaign_flags("1..1000");
  std::optional<int64_t> transfers;
  std::optional<int64_t> accounts;
  std::optional<int64_t> rate_per_second;
  std::string shard = "1/1";
  std::string junit_path;
  int64_t shrink_max = 3;
  int64_t stop_after = 0;
  std::vector<std::string> require_coverage;  // probe names, as typed
};

struct MatrixCommand {
  CampaignFlags campaign = campaign_flags("1..100");
  ExhaustiveMatrixCommand exhaustive;
  // Which options were typed: --exhaustive takes no seeds, and its own options need it.
  std::vector<std::string> campaign_only_given;
  std::vector<std::string> exhaustive_only_given;
};

bool use_color(const std::string& mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && no_color[0] != '\0') return false;
  return isatty(STDOUT_FILENO) != 0;
}

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

// Finds the folder `list` or `demo` reads into `directory`: `chosen` when the user named one,
// else the teaching library (app/library.h). Returns exit code 2, naming every place looked, when
// there is none; `how_to_name` says how this verb names a folder.
std::optional<int> scenario_directory(const std::string& chosen, const std::string& how_to_name,
                                      std::string& directory) {
  if (!chosen.empty()) {
    directory = chosen;
    return std::nullopt;
  }
  const std::vector<LibraryPlace> places = library_places(own_executable());
  const std::optional<std::filesystem::path> found = first_library(places);
  if (!found) return bad_input(library_not_found(places, how_to_name));
  directory = found->string();
  return std::nullopt;
}

int list_command(const ListCommand& command) {
  std::string directory;
  if (auto failed = scenario_directory(command.directory, "inboxsim list DIR", directory)) {
    return *failed;
  }
  std::error_code error;
  if (!std::filesystem::is_directory(directory, error)) {
    return bad_input(directory + ": expected a directory of scenario files");
  }
  std::vector<std::string> files;
  if (const std::optional<std::string> failed = scenario_files(directory, files)) {
    return bad_input(*failed);
  }
  std::vector<Scenario> scenarios;
  for (const std::string& file : files) {
    ParseResult parsed = parse_scenario_file(file);
    if (parsed.error) return bad_input(parsed.error->message());
    scenarios.push_back(std::move(*parsed.scenario));
  }
  std::cout << library_list_text(scenarios);
  return kExitOk;
}

int glossary_command(const GlossaryCommand& command) {
  if (command.words.empty()) {
    std::cout << glossary_text();
    return kExitOk;
  }
  std::string term;
  for (const std::string& word : command.words) term += (term.empty() ? "" : " ") + word;
  const GlossaryEntry* entry = find_glossary_entry(term);
  if (entry == nullptr) {
    return bad_input("glossary " + term + ": not a term of the glossary; expected one of: " +
                     glossary_terms_text());
  }
  std::cout << glossary_entry_text(*entry);
  return kExitOk;
}

// Fills the generator options shared by fuzz and matrix; returns an exit code on bad input.
std::optional<int> load_generator(const std::string& workload, const std::vector<std::string>& sets,
                                  GeneratorOptions& generator) {
  const auto parsed = parse_workload(workload);
  if (!parsed) return bad_input("--workload " + workload + ": expected small, standard or large");
  generator.workload = *parsed;
  // A key the campaign sets is the configuration under test: the generator leaves it alone.
  for (const std::string& assignment : sets) {
    const std::string key = assignment.substr(0, assignment.find('='));
    if (key == "account.instances" || key == "transfer.instances") generator.draw_instances = false;
    if (key == "consumer.work_ms") generator.draw_work = false;
    if (key == "broker.heartbeat_ms") generator.draw_heartbeat = false;
    if (key == "account.retry") generator.draw_retry = false;
    if (key == "broker.queue_type") generator.draw_queue_type = false;
    if (key == "broker.dead_letter") generator.draw_dead_letter = false;
    if (key == "broker.consumer_timeout_ms") generator.draw_consumer_timeout = false;
    if (key == "account.masstransit") generator.draw_masstransit = false;
    if (key == "account.database") generator.draw_database = false;
    if (key == "account.isolation") generator.draw_isolation = false;
    if (key == "account.marten_append") generator.draw_marten_append = false;
  }
  return apply_sets(sets, generator.config);
}

int fuzz_command(const FuzzCommand& command) {
  const CampaignFlags& flags = command.campaign;
  CampaignOptions options;
  if (!parse_seed_range(flags.seeds, options.seed_first, options.seed_last)) {
    return bad_input("--seeds " + flags.seeds +
                     ": expected A..B with A <= B <= " + std::to_string(kSeedMax) +
                     " and at most " + std::to_string(kSeedsPerCampaignMax) + " seeds");
  }
  if (!parse_shard(command.shard, options.shard_index, options.shard_count)) {
    return bad_input("--shard " + command.shard + ": expected K/N with 1 <= K <= N");
  }
  if (auto failed = load_generator(flags.workload, flags.sets, options.generator)) {
    return *failed;
  }
  options.generator.swarm = flags.swarm;
  options.sets = flags.sets;
  options.generator.transfers = command.transfers;
  options.generator.accounts = command.accounts;
  options.generator.rate_per_second = command.rate_per_second;
  options.jobs = flags.jobs;
  options.out_dir = flags.out_dir;
  options.shrink_max = command.shrink_max;
  options.stop_after = command.stop_after;
  options.progress = isatty(STDERR_FILENO) != 0;
  for (const std::string& name : command.require_coverage) {
    const std::optional<Probe> probe = parse_probe(name);
    if (!probe) {
      return bad_input("--require-coverage " + name + ": expected probe names separated by " +
                       "commas, from: " + std::string(probe_names_text()));
    }
    const std::vector<Probe>& required = options.required_coverage;
    if (std::find(required.begin(), required.end(), *probe) == required.end()) {
      options.required_coverage.push_back(*probe);
    }
  }
  if (!options.out_dir.empty()) {
    if (auto failed = prepare_output_dir("--out", options.out_dir)) return *failed;
  }
  const CampaignResult result = run_campaign(options, &std::cerr);
  if (flags.json) {
    std::cout << campaign_json(options, result).dump(2) << "\n";
  } else {
    print_campaign(std::cout, options, result);
  }
  if (!command.junit_path.empty() &&
      !write_file(command.junit_path, campaign_junit(options, result))) {
    return kExitBadInput;
  }
  for (const std::string& path : result.write_errors)
    std::cerr << "inboxsim: cannot write " << printable(path) << "\n";
  if (!result.write_errors.empty()) return kExitBadInput;
  if (!result.coverage_missing.empty()) {
    std::cerr << "inboxsim: --require-coverage: never reached in " << result.seeds
              << " seeds: " << probes_text(result.coverage_missing) << "\n";
  }
  return result.failures.empty() && result.coverage_missing.empty() ? kExitOk : kExitFailed;
}

int matrix_command(const MatrixCommand& command) {
  const CampaignFlags& flags = command.campaign;
  if (command.exhaustive.exhaustive) {
    if (!command.campaign_only_given.empty()) {
      return bad_input(command.campaign_only_given.front() +
                       ": expected no seeds, workload or swarm with --exhaustive (it explores "
                       "one story, --story FILE)");
    }
    ExhaustiveMatrixCommand exhaustive = command.exhaustive;
    exhaustive.jobs = flags.jobs;
    exhaustive.sets = flags.sets;
    exhaustive.json = flags.json;
    exhaustive.out_dir = flags.out_dir;
    return exhaustive_matrix_command(exhaustive);
  }
  if (!command.exhaustive_only_given.empty()) {
    return bad_input(command.exhaustive_only_given.front() + ": expected --exhaustive with it");
  }
  MatrixOptions options;
  if (!parse_seed_range(flags.seeds, options.seed_first, options.seed_last)) {
    return bad_input("--seeds " + flags.seeds +
                     ": expected A..B with A <= B <= " + std::to_string(kSeedMax) +
                     " and at most " + std::to_string(kSeedsPerCampaignMax) + " seeds");
  }
  if (auto failed = load_generator(flags.workload, flags.sets, options.generator)) {
    return *failed;
  }
  options.generator.swarm = flags.swarm;
  options.jobs = flags.jobs;
  options.out_dir = flags.out_dir;
  if (!options.out_dir.empty()) {
    if (auto failed = prepare_output_dir("--out", options.out_dir)) return *failed;
  }
  const bool tty = isatty(STDERR_FILENO) != 0;
  const std::vector<MatrixRow> rows = run_matrix(options, tty ? &std::cerr : nullptr);
  if (flags.json) {
    std::cout << matrix_json(rows).dump(2) << "\n";
  } else {
    print_matrix(std::cout, rows);
  }
  bool written = true;
  for (const MatrixRow& row : rows) {
    for (const std::string& path : row.write_errors) {
      std::cerr << "inboxsim: cannot write " << printable(path) << "\n";
      written = false;
    }
  }
  if (!written) return kExitBadInput;
  // Broken rows are the point of the table; only a failure with every defence on is a bug.
  return rows.front().violated.empty() ? kExitOk : kExitFailed;
}

int demo_command(const DemoCommand& command) {
  if (command.plan == "list") {
    if (!command.only.empty()) return bad_input("demo --plan list: expected no scenario names with it");
    std::cout << plan_list_text();
    return kExitOk;
  }
  if (!command.plan.empty() && !command.only.empty()) {
    return bad_input("demo --plan " + command.plan + " " + command.only.front() +
                     ": expected a plan or scenario names, not both");
  }
  DemoOptions options;
  options.plan = command.plan;
  if (auto failed =
          scenario_directory(command.scenario_dir, "--scenarios DIR", options.scenario_dir)) {
    return *failed;
  }
  options.out_dir = command.out_dir;
  options.only = command.only;
  options.run.narrator.color = use_color(command.color);
  options.run.narrator.quiet = command.quiet;
  options.run.narrator.verbose = command.verbose;
  if (command.verbose && command.quiet) {
    return bad_input("--verbose prints every line of the narration: not with --quiet");
  }
  options.run.pause_after_step = command.step;
  if (!command.step_on.empty()) {
    if (auto error = parse_event_stops(command.step_on, options.run.pause_on)) {
      return bad_input(*error);
    }
    if (command.quiet) return bad_input("--step-on stops the narration: not with --quiet");
  }
  options.run.record_rows = true;  // every demo scenario gets an HTML report with its tables
  if (auto failed = prepare_output_dir("--out", options.out_dir)) return *failed;
  return run_demo(options, std::cout, std::cerr);
}

// Declares `run` and its options, filled into `command`.
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

// Declares `list` and its options, filled into `command`.
CLI::App* add_list_verb(CLI::App& app, ListCommand& command) {
  CLI::App* list_app = app.add_subcommand(
      "list", "List the scenarios in the guide's lesson blocks, with their minutes and titles.");
  list_app->add_option("DIR", command.directory,
                       "Scenario folder (default: the library beside the binary, else "
                       "./scenarios)");
  return list_app;
}

void add_campaign_options(CLI::App& verb, CampaignFlags& flags, const std::string& seeds_help,
                          const std::string& json_help) {
  verb.add_option("--seeds", flags.seeds, seeds_help);
  verb.add_option("--workload", flags.workload, "small, standard or large")
      ->check(CLI::IsMember({"small", "standard", "large"}));
  verb.add_flag("--swarm", flags.swarm, "Each seed draws its own fault mix and rates");
  verb.add_option("--set", flags.sets, kSetOptionHelp);
  verb.add_option("--jobs", flags.jobs, "Worker threads")
      ->check(CLI::Range(int64_t{1}, int64_t{256}));
  verb.add_option("--out", flags.out_dir, "Where counterexamples go (default ./counterexamples)");
  verb.add_flag("--json", flags.json, json_help);
}

// Declares `fuzz` and its options, filled into `command`.
CLI::App* add_fuzz_verb(CLI::App& app, FuzzCommand& command) {
  CLI::App* fuzz_app =
      app.add_subcommand("fuzz", "Fuzz: random workloads and faults, invariants, shrinking.");
  add_campaign_options(*fuzz_app, command.campaign, "Seed range A..B (default 1..1000)",
                       "Print one JSON object");
  fuzz_app->add_option("--transfers", command.transfers, "Transfers per seed")
      ->check(CLI::Range(int64_t{1}, kStoryCountMax));
  fuzz_app
      ->add_option("--rate", command.rate_per_second,
                   "Transfers arriving per virtual second, spread over virtual time (1-1000)")
      ->check(CLI::Range(int64_t{1}, kRatePerSecondMax));
  fuzz_app->add_option("--accounts", command.accounts, "Accounts per seed")
      ->check(CLI::Range(int64_t{2}, kStoryCountMax));
  fuzz_app->add_option("--shard", command.shard, "Run shard K of N (1-based) of the seed range");
  fuzz_app->add_option("--junit", command.junit_path, "Write a JUnit XML report");
  fuzz_app
      ->add_option("--shrink", command.shrink_max, "Failing seeds to shrink and save (default 3)")
      ->check(CLI::Range(int64_t{0}, int64_t{1000}));
  fuzz_app
      ->add_option("--stop-after", command.stop_after,
                   "Stop after this many failing seeds (default 0: run them all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1000000}));
  fuzz_app
      ->add_option("--require-coverage", command.require_coverage,
                   "Exit 1 unless every one of these coverage probes was reached "
                   "(NAME,...; see docs/coverage.md): " +
                       std::string(probe_names_text()))
      ->delimiter(',');
  return fuzz_app;
}

// Declares `matrix` and its options, filled into `command`.
CLI::App* add_matrix_verb(CLI::App& app, MatrixCommand& command) {
  CLI::App* matrix_app =
      app.add_subcommand("matrix", "Which defences are enough: a campaign per combination.");
  add_campaign_options(*matrix_app, command.campaign, "Seed range A..B per row (default 1..100)",
                       "Print the table as JSON");
  add_exhaustive_matrix_options(*matrix_app, command.exhaustive);
  return matrix_app;
}

// Declares `demo` and its options, filled into `command`.
CLI::App* add_demo_verb(CLI::App& app, DemoCommand& command) {
  CLI::App* demo_app = app.add_subcommand(
      "demo", "Run the teaching library in order, narrated, with an HTML report per scenario.");
  demo_app->add_option("NAME", command.only,
                       "Only the scenarios whose name starts with these (e.g. 04 09)");
  demo_app->add_option("--plan", command.plan,
                       "Run a plan for a class of a given length (the scenarios in order, in "
                       "blocks, with the explore runs of lessons 50 and 52), e.g. 50min; list: "
                       "the plans, their minutes and what they cover");
  demo_app->add_option("--out", command.out_dir, "Where the HTML reports go (default: demo-out)");
  demo_app->add_option("--scenarios", command.scenario_dir,
                       "The scenario folder (default: the library beside the binary, else "
                       "./scenarios)");
  demo_app->add_option("--color", command.color, "Colours: auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  demo_app->add_flag("--step", command.step, "Pause after each step until Enter");
  demo_app->add_option("--step-on", command.step_on,
                       "Pause until Enter after each event of these kinds (event: every one)");
  demo_app->add_flag("--quiet", command.quiet, "Print only each scenario's verdict");
  demo_app->add_flag("--verbose", command.verbose,
                     "Print every line of each narration (no identical repeats collapsed)");
  return demo_app;
}

// Declares `glossary` and its term, filled into `command`.
CLI::App* add_glossary_verb(CLI::App& app, GlossaryCommand& command) {
  CLI::App* glossary_app = app.add_subcommand(
      "glossary", "Explain the words the narration uses: tag, m-N, pass, crash point, ...");
  glossary_app->add_option("TERM", command.words,
                           "The term to explain (e.g. tag, \"crash point\"); every term when "
                           "none");
  return glossary_app;
}

// The help's layout, made for reading and for help2man, which turns `--help-all` into the man
// page: each verb's block opens with "VERB:" on a line of its own (a subsection of the manual),
// short and long option names are separated by ", " (both set in bold), and the name column is
// wide enough for every option with its type, so that no description loses its column.
class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter() { column_width(kNameColumnWidth); }

  // CLI11's own version drops the blank lines, which would run each verb's description and its
  // "Options:" heading into one paragraph of the manual.
  std::string make_expanded(const CLI::App* verb) const override {
    if (verb->get_name().empty()) return CLI::Formatter::make_expanded(verb);
    const std::string body = make_description(verb) + make_positionals(verb) +
                             make_groups(verb, CLI::AppFormatMode::Sub);
    // A blank line parts the first verb from the "Subcommands:" heading; the others follow one.
    const CLI::App* parent = verb->get_parent();
    const bool first = parent != nullptr && parent->get_subcommands({}).front() == verb;
    std::string text = (first ? "\n" : "") + verb->get_display_name(true) + ":\n";
    std::istringstream lines(body);
    for (std::string line; std::getline(lines, line);) {
      text += line.empty() ? "\n" : "  " + line + "\n";
    }
    return text;
  }

  std::string make_option_name(const CLI::Option* option, bool is_positional) const override {
    std::string name = CLI::Formatter::make_option_name(option, is_positional);
    for (size_t comma = name.find(','); comma != std::string::npos;
         comma = name.find(',', comma + 2)) {
      name.insert(comma + 1, " ");
    }
    return name;
  }

 private:
  // "--transfers INT:INT in [1 - 1000000]", the longest, indented by --help-all, and two spaces.
  static constexpr size_t kNameColumnWidth = 42;
};

// The part of the help that is about the whole program. `--help-all` prints every verb's options
// too: the man page is made from it at build time (help2man), so what it says is all the
// manual says. Set after the verbs are declared, since each verb copies its parent's footer.
void describe_program(CLI::App& app) {
  app.set_help_all_flag("--help-all", "Print the help of every verb and exit");
  app.footer(
      "Exit status:\n"
      "  0  every expectation met; fuzz: no seed failed; matrix: no failure with all defences on\n"
      "  1  an expectation failed or a violation was found\n"
      "  2  bad input or usage: the message says what was expected, and where\n"
      "  3  internal error\n"
      "\n"
      "Environment:\n"
      "  NO_COLOR  when set and not empty, no colours unless --color always\n"
      "\n"
      "Files:\n"
      "  list and demo read the folder named by DIR or --scenarios; without one, the\n"
      "  teaching library beside the binary (" +
      std::string(kLibraryFromBinary) +
      " from the binary's folder, so\n"
      "  /usr/share/inboxsim/scenarios for /usr/bin/inboxsim), else ./scenarios. The\n"
      "  teacher's guide is share/inboxsim/scenarios.md and the README and the docs are in\n"
      "  share/doc/inboxsim/, under the same prefix.\n"
      "\n"
      "Run 'inboxsim VERB --help' for the options of one verb, 'inboxsim --help-all' for all.");
}

int main_guarded(int argc, char** argv) {
  CLI::App app{
      "inboxsim: a deterministic bank on an at-least-once broker, to watch and test "
      "the idempotent consumer (inbox) pattern."};
  // Before the verbs are declared: each verb takes its parent's formatter.
  app.formatter(std::make_shared<HelpFormatter>());
  app.set_version_flag("--version", std::string("inboxsim ") + INBOXSIM_VERSION);
  app.require_subcommand(1);
  RunCommand run;
  ListCommand list;
  FuzzCommand fuzz;
  MatrixCommand matrix;
  DemoCommand demo;
  ExploreCommand explore;
  CLI::App* run_app = add_run_verb(app, run);
  CLI::App* list_app = add_list_verb(app, list);
  CLI::App* fuzz_app = add_fuzz_verb(app, fuzz);
  CLI::App* matrix_app = add_matrix_verb(app, matrix);
  CLI::App* demo_app = add_demo_verb(app, demo);
  CLI::App* explore_app = add_explore_verb(app, explore);
  PlayCommand play;
  CLI::App* play_app = add_play_verb(app, play);
  GlossaryCommand glossary;
  CLI::App* glossary_app = add_glossary_verb(app, glossary);
  ConfigCommand config;
  CLI::App* config_app = add_config_verb(app, config);
  describe_program(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // CLI11 quotes the offending argument; it goes through printable() like every message.
    std::ostringstream message;
    const int code = app.exit(error, std::cout, message);
    std::cerr << printable(message.str());
    return code == 0 ? kExitOk : kExitBadInput;
  }
  int code = kExitBadInput;
  if (app.got_subcommand(run_app))
    code = run_command(run);
  else if (app.got_subcommand(list_app))
    code = list_command(list);
  else if (app.got_subcommand(demo_app))
    code = demo_command(demo);
  else if (app.got_subcommand(fuzz_app))
    code = fuzz_command(fuzz);
  else if (app.got_subcommand(matrix_app)) {
    for (const char* name : {"--seeds", "--workload", "--swarm"}) {
      if (matrix_app->count(name) > 0) matrix.campaign_only_given.emplace_back(name);
    }
    for (const char* name :
         {"--story", "--faults", "--fault-kinds", "--max-states", "--operator"}) {
      if (matrix_app->count(name) > 0) matrix.exhaustive_only_given.emplace_back(name);
    }
    code = matrix_command(matrix);
  } else if (app.got_subcommand(explore_app))
    code = explore_command(explore);
  else if (app.got_subcommand(play_app))
    code = play_command(play);
  else if (app.got_subcommand(glossary_app))
    code = glossary_command(glossary);
  else if (app.got_subcommand(config_app))
    code = config_command(config);
  // Every write is checked: output that never arrived is a failure (`--json > /dev/full`).
  std::cout.flush();
  if (!std::cout) {
    std::cerr << "inboxsim: cannot write to standard output\n";
    return kExitBadInput;
  }
  return code;
}

}  // namespace
}  // namespace inboxsim

int main(int argc, char** argv) {
  try {
    return inboxsim::main_guarded(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "inboxsim: internal error: " << inboxsim::printable(error.what()) << "\n";
    return inboxsim::kExitInternal;
  } catch (...) {
    std::cerr << "inboxsim: internal error\n";
    return inboxsim::kExitInternal;
  }
}
