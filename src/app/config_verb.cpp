#include "app/config_verb.h"

#include <iostream>

#include "app/cli_common.h"
#include "domain/config.h"

namespace inboxsim {

namespace {

// The default as a scenario file writes it: strings quoted only where JSON needs them.
std::string default_text(const nlohmann::ordered_json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::string key_text(const ConfigKeyInfo& info) {
  return info.name + "  (default " + default_text(info.default_value) + ")\n    " +
         info.summary + "\n    values: " + info.values + "\n";
}

nlohmann::ordered_json key_json(const ConfigKeyInfo& info) {
  nlohmann::ordered_json out;
  out["key"] = info.name;
  out["default"] = info.default_value;
  out["values"] = info.values;
  out["choices"] = info.choices;
  out["summary"] = info.summary;
  return out;
}

}  // namespace

CLI::App* add_config_verb(CLI::App& app, ConfigCommand& command) {
  CLI::App* verb = app.add_subcommand(
      "config", "List the config keys a scenario's \"config\" and --set KEY=VALUE take: each "
                "one's values, default and meaning");
  verb->add_option("KEY", command.keys, "The keys to describe; every key when none");
  verb->add_flag("--json", command.json, "Print a JSON array, an object per key");
  verb->add_flag("--names", command.names, "Print only the keys' names, one a line");
  verb->add_flag("--values", command.values,
                 "Print only the fixed values of the keys given, one a line (none for numbers)");
  return verb;
}

int config_command(const ConfigCommand& command) {
  if (command.names + command.values + command.json > 1) {
    return bad_input("config: expected at most one of --json, --names and --values");
  }
  if (command.values && command.keys.empty()) {
    return bad_input("config --values: expected the KEY whose values to print");
  }
  const std::vector<ConfigKeyInfo> infos = config_key_infos();
  std::vector<const ConfigKeyInfo*> chosen;
  for (const std::string& key : command.keys) {
    const ConfigKeyInfo* found = nullptr;
    for (const ConfigKeyInfo& info : infos) {
      if (info.name == key) found = &info;
    }
    if (found == nullptr) {
      Config scratch;
      return bad_input("config " + key + ": expected " + config_set(scratch, key, nullptr));
    }
    chosen.push_back(found);
  }
  if (command.keys.empty()) {
    for (const ConfigKeyInfo& info : infos) chosen.push_back(&info);
  }
  if (command.json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const ConfigKeyInfo* info : chosen) out.push_back(key_json(*info));
    std::cout << out.dump(2) << "\n";
  } else if (command.names) {
    for (const ConfigKeyInfo* info : chosen) std::cout << info->name << "\n";
  } else if (command.values) {
    for (const ConfigKeyInfo* info : chosen) {
      for (const std::string& choice : info->choices) std::cout << choice << "\n";
    }
  } else {
    for (const ConfigKeyInfo* info : chosen) std::cout << key_text(*info);
  }
  return kExitOk;
}

}  // namespace inboxsim
