// `inboxsim play [FILE|NAME]`: the playground (docs/contract.md §9.1, docs/playground.md).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace inboxsim {

struct PlayCommand {
  std::string story;  // a scenario file, or the name of a story of the library
  int port = 8080;
  std::string listen = "127.0.0.1";
  bool open = false;
  std::string scenario_dir;  // empty: the teaching library
  size_t workers = 2;        // threads that replay; a request past them and the queue: 503
  size_t queue = 8;
};

CLI::App* add_play_verb(CLI::App& app, PlayCommand& command);

int play_command(const PlayCommand& command);

}  // namespace inboxsim
