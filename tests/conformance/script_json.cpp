#include "script_json.h"

#include <fstream>
#include <sstream>

namespace inboxsim::conformance {

using json = nlohmann::json;

namespace {

// Scripts are small hand-written files; anything bigger is a mistake.
constexpr size_t kScriptBytesMax = 1024 * 1024;

}  // namespace

void fail(std::string pointer, std::string expected) {
  throw Failure{std::move(pointer), std::move(expected)};
}

const json& member(const json& object, const std::string& key, const std::string& pointer) {
  const auto found = object.find(key);
  if (found == object.end()) fail(pointer, "a key \"" + key + "\"");
  return *found;
}

std::string text(const json& value, const std::string& pointer) {
  if (!value.is_string() || value.get<std::string>().empty()) fail(pointer, "a non-empty string");
  return value.get<std::string>();
}

int64_t integer(const json& value, const std::string& pointer, int64_t low, int64_t high) {
  if (!value.is_number_integer()) fail(pointer, "an integer");
  const auto number = value.get<int64_t>();
  if (number < low || number > high) {
    fail(pointer, "an integer from " + std::to_string(low) + " to " + std::to_string(high));
  }
  return number;
}

bool boolean(const json& value, const std::string& pointer) {
  if (!value.is_boolean()) fail(pointer, "true or false");
  return value.get<bool>();
}

std::vector<std::string> texts(const json& value, const std::string& pointer) {
  if (!value.is_array()) fail(pointer, "an array of strings");
  std::vector<std::string> out;
  for (size_t index = 0; index < value.size(); ++index) {
    out.push_back(text(value[index], pointer + "/" + std::to_string(index)));
  }
  return out;
}

std::vector<std::string> observations(const json& value, const std::string& pointer) {
  std::vector<std::string> out = texts(value, pointer);
  for (size_t index = 0; index < out.size(); ++index) {
    if (out[index].find(": ") == std::string::npos) {
      fail(pointer + "/" + std::to_string(index), "an observation \"<subject>: <what>\"");
    }
  }
  return out;
}

std::optional<json> read_script_json(const std::string& path, std::string& error) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    error = path + ": cannot be read";
    return std::nullopt;
  }
  std::ostringstream bytes;
  bytes << file.rdbuf();
  if (bytes.str().size() > kScriptBytesMax) {
    error = path + ": larger than " + std::to_string(kScriptBytesMax) + " bytes";
    return std::nullopt;
  }
  json document = json::parse(bytes.str(), nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) {
    error = path + ": not valid JSON";
    return std::nullopt;
  }
  return document;
}

std::string script_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string name = path.substr(slash == std::string::npos ? 0 : slash + 1);
  if (name.size() > 5 && name.ends_with(".json")) name.resize(name.size() - 5);
  return name;
}

}  // namespace inboxsim::conformance
