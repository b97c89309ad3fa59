// What the RabbitMQ and the JetStream conformance scripts share: reading a script file, the
// typed readers of its JSON values, and the error that names where a script is wrong.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace inboxsim::conformance {

// A script that is not what its format says: where (a JSON pointer) and what was expected.
struct Failure {
  std::string pointer;
  std::string expected;
};

[[noreturn]] void fail(std::string pointer, std::string expected);

const nlohmann::json& member(const nlohmann::json& object, const std::string& key,
                             const std::string& pointer);
std::string text(const nlohmann::json& value, const std::string& pointer);
int64_t integer(const nlohmann::json& value, const std::string& pointer, int64_t low,
                int64_t high);
bool boolean(const nlohmann::json& value, const std::string& pointer);
std::vector<std::string> texts(const nlohmann::json& value, const std::string& pointer);
// Strings of the form "<subject>: <what>".
std::vector<std::string> observations(const nlohmann::json& value, const std::string& pointer);

// Reads `path` as a script's JSON (at most 1 MiB); on failure, says why in `error`.
std::optional<nlohmann::json> read_script_json(const std::string& path, std::string& error);

// A script's name: its file name without the folder and ".json".
std::string script_name(const std::string& path);

// Reads the parts every script has, in order: only the keys description, claims, `settings_key`
// and steps; a description; at least one claim; the broker's settings (given to
// `parse_settings` with their pointer); 1 to `steps_max` steps (each given to `parse_step`).
template <typename Script, typename ParseSettings, typename ParseStep>
void parse_script_parts(const nlohmann::json& document, const std::string& settings_key,
                        size_t steps_max, Script& script, ParseSettings parse_settings,
                        ParseStep parse_step) {
  if (!document.is_object()) fail("", "an object");
  for (const auto& [key, value] : document.items()) {
    if (key != "description" && key != "claims" && key != settings_key && key != "steps") {
      fail("/" + key, "description, claims, " + settings_key + " or steps");
    }
  }
  script.description = text(member(document, "description", ""), "/description");
  script.claims = texts(member(document, "claims", ""), "/claims");
  if (script.claims.empty()) fail("/claims", "at least one claim of docs/model.md");
  parse_settings(member(document, settings_key, ""), "/" + settings_key);
  const nlohmann::json& steps = member(document, "steps", "");
  if (!steps.is_array() || steps.empty() || steps.size() > steps_max) {
    fail("/steps", "an array of 1 to " + std::to_string(steps_max) + " steps");
  }
  for (size_t index = 0; index < steps.size(); ++index) {
    script.steps.push_back(parse_step(steps[index], "/steps/" + std::to_string(index)));
  }
}

// Reads and parses the script at `path` with `parse` (which throws Failure), setting its path
// and name; on failure, says where and what was expected in `error`.
template <typename Script, typename Parse>
std::optional<Script> load_script_file(const std::string& path, std::string& error,
                                       Parse parse) {
  const std::optional<nlohmann::json> document = read_script_json(path, error);
  if (!document) return std::nullopt;
  try {
    Script script = parse(*document);
    script.path = path;
    script.name = script_name(path);
    return script;
  } catch (const Failure& failure) {
    error = path + ": at " + (failure.pointer.empty() ? "/" : failure.pointer) + ": expected " +
            failure.expected;
    return std::nullopt;
  }
}

}  // namespace inboxsim::conformance
