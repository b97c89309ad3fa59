// `inboxsim config`: every config key a scenario's "config" object and --set KEY=VALUE take,
// with its values, default and meaning, from the one key table (domain/config.h). The bash
// completion asks it for the keys (--names) and for a key's fixed values (--values).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace inboxsim {

struct ConfigCommand {
  std::vector<std::string> keys;  // none: every key
  bool json = false;
  bool names = false;   // only the names, one a line
  bool values = false;  // only the fixed values of the keys given, one a line
};

// Declares `config` and its options, filled into `command`.
CLI::App* add_config_verb(CLI::App& app, ConfigCommand& command);

// Prints what was asked; returns the exit code (0, or 2 for an unknown key or a bad flag mix).
int config_command(const ConfigCommand& command);

}  // namespace inboxsim
