#include "app/cli_common.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <cstdlib>
#include <iostream>

#include "kernel/text.h"

namespace inboxsim {

int bad_input(const std::string& message) {
  std::cerr << "inboxsim: " << printable(message) << "\n";
  return kExitBadInput;
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) {
    std::cerr << "inboxsim: cannot write " << printable(path) << "\n";
    return false;
  }
  return true;
}

std::optional<int> prepare_output_dir(const std::string& flag, const std::string& dir) {
  std::error_code error;
  const auto status = std::filesystem::status(dir, error);
  if (std::filesystem::exists(status) && !std::filesystem::is_directory(status)) {
    return bad_input(flag + " " + dir + ": expected a folder (it is a file)");
  }
  std::filesystem::create_directories(dir, error);
  if (error) return bad_input(flag + " " + dir + ": cannot create the folder: " + error.message());
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    return bad_input(flag + " " + dir + ": the folder is not writable");
  }
  return std::nullopt;
}

std::optional<int> apply_sets(const std::vector<std::string>& sets, Config& config) {
  for (const std::string& assignment : sets) {
    const size_t equals = assignment.find('=');
    if (equals == std::string::npos || equals == 0) {
      return bad_input("--set " + assignment + ": expected KEY=VALUE");
    }
    const std::string expected =
        config_set_text(config, assignment.substr(0, equals), assignment.substr(equals + 1));
    if (!expected.empty()) return bad_input("--set " + assignment + ": expected " + expected);
  }
  // A key the broker gives no meaning (docs/contract.md, "broker.kind").
  if (const std::optional<KeyRefusal> refusal = broker_key_refusal(config); refusal && !sets.empty()) {
    return bad_input("--set: pointer: /config/" + refusal->key + ": expected " + refusal->expected);
  }
  return std::nullopt;
}

// --color: "always", "never", or "auto" (a terminal, and NO_COLOR unset or empty).
bool use_color(const std::string& mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && no_color[0] != '\0') return false;
  return isatty(STDOUT_FILENO) != 0;
}

}  // namespace inboxsim
