// `inboxsim play` (docs/contract.md §9.1): the playground's HTTP server, on cpp-httplib (Debian's
// libcpp-httplib-dev). It serves one page embedded in the binary and a stateless JSON API
// (docs/playground.md): every request replays its story from the start along the schedule it
// carries, so the server keeps no simulation between requests.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "domain/scenario.h"
#include "play/moment.h"

namespace inboxsim {

// A story the playground offers: the scenario and its file's JSON (a request's schedule is
// put into a copy of it and parsed with it, so that its errors name their place).
struct PlayStory {
  Scenario scenario;
  nlohmann::json source;
};

struct PlayOptions {
  std::string listen = "127.0.0.1";
  int port = 8080;  // 0: a free port
  std::string token;  // required on every request when not empty (--listen off loopback)
  std::map<std::string, PlayStory> stories;  // by name
  std::string default_story;                 // the FILE|NAME named on the command line
  size_t threads = 2;       // workers that replay
  size_t queue_max = 8;     // requests waiting for a worker; past it: 503
  size_t body_max = 1 << 20;
  MomentLimits limits;
  int64_t explore_states_max = 2'000'000;
  int64_t explore_seconds_max = 60;
  int64_t explore_jobs = 2;  // threads of one "can it still break?" search
};

// The JSON API without the sockets: `path` and the request body, returning the status and the
// response body. Used by the server and by the tests.
struct ApiReply {
  int status = 200;
  std::string body;
};
ApiReply handle_api(const PlayOptions& options, const std::string& method, const std::string& path,
                    const std::string& body);

// Serves until `stop` is called from a signal (or until the listener fails). Writes the URL as
// stdout's first line once it is listening; `ready` is called then with the port. Returns the
// process exit code.
int serve_playground(const PlayOptions& options, const std::function<void(int port)>& ready);

// Stops a running serve_playground (async-signal-safe: it only sets a flag the server polls).
void stop_playground();

// The page, embedded at build time from src/play/page.html.
extern const char* const kPlaygroundPage;

}  // namespace inboxsim
