// `inboxsim run` on the command line (docs/contract.md §5): scenario files in, narrated or as
// JSON, with the trace, HTML and Mermaid views written where asked.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace inboxsim {

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

// Declares `run` and its options, filled into `command`.
CLI::App* add_run_verb(CLI::App& app, RunCommand& command);

// Runs it; returns the exit code (0 every expectation met, 1 one failed, 2 bad input).
int run_command(const RunCommand& command);

}  // namespace inboxsim
