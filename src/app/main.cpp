// The inboxsim command line (docs/contract.md §5, contract): run, list, and the verbs built on them.
//
// This file only turns flags into calls: every behaviour lives in the parts under src/. Exit
// codes: 0 all expectations met, 1 an expectation failed or a violation was found, 2 bad input
// or usage, 3 internal error.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli_args.h"
#include "app/cli_common.h"
#include "app/campaign_verb.h"
#include "app/config_verb.h"
#include "app/demo.h"
#include "app/explore_verb.h"
#include "app/library.h"
#include "app/play_verb.h"
#include "app/run_verb.h"
#include "kernel/text.h"
#include "report/glossary.h"
#include "scenario/parse.h"

#ifndef INBOXSIM_VERSION
#define INBOXSIM_VERSION "0.0.0"
#endif

namespace inboxsim {
namespace {

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

// Declares `list` and its options, filled into `command`.
CLI::App* add_list_verb(CLI::App& app, ListCommand& command) {
  CLI::App* list_app = app.add_subcommand(
      "list", "List the scenarios in the guide's lesson blocks, with their minutes and titles.");
  list_app->add_option("DIR", command.directory,
                       "Scenario folder (default: the library beside the binary, else "
                       "./scenarios)");
  return list_app;
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
