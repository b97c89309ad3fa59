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
