#include "app/play_verb.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "app/cli_common.h"
#include "app/library.h"
#include "kernel/text.h"
#include "play/server.h"
#include "scenario/parse.h"

extern char** environ;

namespace inboxsim {

namespace {

void on_signal(int) { stop_playground(); }

// A token no one can guess, from the kernel's random source (the server's, never the
// simulation's: no run reads it).
std::string random_token() {
  std::ifstream random("/dev/urandom", std::ios::binary);
  unsigned char bytes[16] = {};
  random.read(reinterpret_cast<char*>(bytes), sizeof bytes);
  if (!random) return {};
  static const char* const kHex = "0123456789abcdef";
  std::string token;
  for (const unsigned char byte : bytes) {
    token.push_back(kHex[byte >> 4]);
    token.push_back(kHex[byte & 15]);
  }
  return token;
}

std::optional<int> load_story(const std::string& path, PlayOptions& options) {
  std::ifstream in(path, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ParseResult parsed = parse_scenario_text(text, path);
  if (parsed.error) return bad_input(parsed.error->message());
  PlayStory story{std::move(*parsed.scenario), nlohmann::json::parse(text)};
  const std::string name = story.scenario.name;
  options.stories[name] = std::move(story);
  return std::nullopt;
}

// Starts the desktop's browser on `url` without a shell (xdg-open, as desktops provide).
void open_browser(const std::string& url) {
  const char* argv[] = {"xdg-open", url.c_str(), nullptr};
  pid_t pid = 0;
  if (posix_spawnp(&pid, "xdg-open", nullptr, nullptr, const_cast<char* const*>(argv), environ) !=
      0) {
    std::cerr << "inboxsim play: could not start a browser (xdg-open): open " << url << "\n";
  }
}

}  // namespace

CLI::App* add_play_verb(CLI::App& app, PlayCommand& command) {
  CLI::App* play = app.add_subcommand(
      "play", "The playground: a page where you choose what happens next, crash or fork a run, "
              "and ask whether it can still break.");
  play->add_option("STORY", command.story,
                   "A scenario file, or the name of a story of the library, to open first");
  play->add_option("--port", command.port, "Port to serve on (0: a free one)")
      ->check(CLI::Range(0, 65535));
  play->add_option("--listen", command.listen,
                   "Address to listen on (default 127.0.0.1; any other prints a token that every "
                   "request must carry)");
  play->add_flag("--open", command.open, "Open the page in the desktop's browser");
  play->add_option("--scenarios", command.scenario_dir,
                   "Scenario folder (default: the library beside the binary, else ./scenarios)");
  play->add_option("--workers", command.workers,
                   "Threads that answer requests (default 2); past them and a short queue of "
                   "--queue requests (default 8), a request gets 503")
      ->check(CLI::Range(size_t{1}, size_t{64}));
  play->add_option("--queue", command.queue, "Requests that may wait for a worker")
      ->check(CLI::Range(size_t{0}, size_t{1024}));
  return play;
}

namespace {

// Reads the stories the playground serves: the library's (the folder named, or the one beside
// the binary) and the file or library story named on the command line, the default one. Returns
// the exit code of a bad input, having said why, instead.
std::optional<int> load_stories(const PlayCommand& command, PlayOptions& options) {
  std::string directory = command.scenario_dir;
  if (directory.empty()) {
    const std::vector<LibraryPlace> places = library_places(own_executable());
    if (const std::optional<std::filesystem::path> found = first_library(places)) {
      directory = found->string();
    }
  }
  // The stories are read now, once: no request makes the server read a file.
  if (!directory.empty()) {
    std::vector<std::string> files;
    if (const std::optional<std::string> failed = scenario_files(directory, files)) {
      return bad_input(*failed);
    }
    for (const std::string& file : files) {
      if (auto failed = load_story(file, options)) return *failed;
    }
  }
  if (!command.story.empty()) {
    std::error_code error;
    if (std::filesystem::is_regular_file(command.story, error)) {
      ParseResult parsed = parse_scenario_file(command.story);
      if (parsed.error) return bad_input(parsed.error->message());
      options.default_story = parsed.scenario->name;
      if (auto failed = load_story(command.story, options)) return *failed;
    } else if (options.stories.count(command.story) > 0) {
      options.default_story = command.story;
    } else {
      return bad_input("play " + command.story +
                       ": expected a scenario file or the name of a story of the library (" +
                       (directory.empty() ? std::string("no library found") : directory) +
                       "; `inboxsim list` names them)");
    }
  }
  return std::nullopt;
}

}  // namespace

int play_command(const PlayCommand& command) {
  PlayOptions options;
  options.listen = command.listen;
  options.port = command.port;
  options.threads = command.workers;
  options.queue_max = command.queue;
  options.explore_jobs = std::max<int64_t>(1, std::thread::hardware_concurrency());
  if (const std::optional<int> failed = load_stories(command, options)) return *failed;
  if (options.stories.empty()) {
    return bad_input("play: no story to open: name a scenario file, or a folder with "
                     "--scenarios DIR");
  }
  const bool loopback = command.listen == "127.0.0.1" || command.listen == "::1" ||
                        command.listen == "localhost";
  if (!loopback) {
    options.token = random_token();
    if (options.token.empty()) {
      std::cerr << "inboxsim play: cannot read /dev/urandom for the token\n";
      return kExitInternal;
    }
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGPIPE, SIG_IGN);
  return serve_playground(options, [&](int port) {
    const std::string host = command.listen.find(':') != std::string::npos
                                 ? "[" + command.listen + "]"
                                 : command.listen;
    std::string url = "http://" + host + ":" + std::to_string(port) + "/";
    if (!options.token.empty()) url += "?token=" + options.token;
    std::cout << url << std::endl;
    std::cerr << "inboxsim play: serving " << options.stories.size()
              << " stories; Ctrl-C stops it\n";
    if (!options.token.empty()) {
      std::cerr << "inboxsim play: listening beyond this machine: every request must carry the "
                   "token (it is in the URL above)\n";
    }
    if (command.open) open_browser(url);
  });
}

}  // namespace inboxsim
