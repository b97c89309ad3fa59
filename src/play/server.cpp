#include "play/server.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <iostream>
#include <mutex>
#include <thread>

#include "kernel/assert.h"
#include "play/play_error.h"
#include "scenario/parse.h"
#include "scenario/write.h"

namespace inboxsim {

namespace {

using json = nlohmann::json;

std::atomic<bool> g_stop_requested{false};

[[noreturn]] void refuse(std::string error, std::string where, int status = 400) {
  throw PlayError{status, std::move(error), std::move(where)};
}

void check_keys(const json& object, std::initializer_list<std::string_view> allowed,
                const std::string& pointer) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end()) {
      std::string names;
      for (const std::string_view name : allowed) names += (names.empty() ? "" : ", ") + std::string(name);
      refuse("unknown key " + json(it.key()).dump() + ": expected one of " + names,
             pointer + "/" + json_pointer_token(it.key()));
    }
  }
}

// The story a request names, with its schedule parsed against it.
struct Request {
  Scenario story;       // without the schedule
  Schedule schedule;    // the moment
  std::string pointer;  // where the story is in the request ("/name" or "/scenario")
};

// Parses `source` with `schedule` put in (so that the parser checks the schedule against the
// story and names the place of any error), mapping the parser's pointers to the request's.
Scenario parse_with(const json& source, const json* schedule, const std::string& story_pointer,
                    const std::string& schedule_pointer) {
  json combined = source;
  combined.erase("schedule");
  if (schedule != nullptr) combined["schedule"] = *schedule;
  const ParseResult parsed = parse_scenario_text(combined.dump(), "request");
  if (parsed.error) {
    const std::string& at = parsed.error->pointer;
    std::string where;
    if (at.rfind("/schedule", 0) == 0) {
      where = schedule_pointer + at.substr(9);
    } else {
      where = story_pointer + at;
    }
    refuse(parsed.error->expected, where);
  }
  return *parsed.scenario;
}

// The story a request names: a story of the library ("name") or a scenario object
// ("scenario"), exactly one. Sets `request.pointer` to where it is.
json request_source(const PlayOptions& options, const json& body, Request& request) {
  const bool named = body.contains("name");
  const bool inline_story = body.contains("scenario");
  if (named == inline_story) {
    refuse("expected exactly one of \"name\" (a story of the library) and \"scenario\" (a "
           "scenario object)",
           "");
  }
  if (named) {
    request.pointer = "/name";
    if (!body["name"].is_string()) refuse("expected a story name (a string)", "/name");
    const auto found = options.stories.find(body["name"].get<std::string>());
    if (found == options.stories.end()) {
      refuse("no story named " + body["name"].dump() + " in the library (GET /api/library lists them)",
             "/name", 404);
    }
    return found->second.source;
  }
  request.pointer = "/scenario";
  if (!body["scenario"].is_object()) refuse("expected a scenario object", "/scenario");
  return body["scenario"];
}

// The request's schedule, checked for what the parser does not know of a playground (its
// keys, its limits, stepwise to its end, a clock only for a story that keeps time), with
// stepwise filled in.
json checked_schedule(const PlayOptions& options, const json& given, bool clocked) {
  if (!given.is_object()) refuse("expected a schedule object (one the API returned)", "/schedule");
  check_keys(given, {"stepwise", "choices", "clock", "actions"}, "/schedule");
  if (!given.contains("choices") || !given["choices"].is_array()) {
    refuse("expected \"choices\": an array of integers", "/schedule/choices");
  }
  if (given["choices"].size() > options.limits.schedule_max) {
    refuse("expected at most " + std::to_string(options.limits.schedule_max) + " choices",
           "/schedule/choices");
  }
  if (given.contains("actions") &&
      (!given["actions"].is_array() || given["actions"].size() > options.limits.schedule_max)) {
    refuse("expected an array of at most " + std::to_string(options.limits.schedule_max) +
               " hand actions",
           "/schedule/actions");
  }
  json schedule = given;
  const size_t count = schedule["choices"].size();
  if (!schedule.contains("stepwise")) schedule["stepwise"] = count;
  if (schedule["stepwise"] != json(count)) {
    refuse("expected " + std::to_string(count) +
               ": a playground schedule is taken step by step to its end",
           "/schedule/stepwise");
  }
  if (schedule.value("clock", false) != clocked) {
    refuse(clocked ? "expected \"clock\": true (this story keeps time)"
                   : "expected no \"clock\" (this story plays without one)",
           "/schedule/clock");
  }
  return schedule;
}

// A hand action taken now (the body's `then`, when `then_key` allows one): appended to
// `schedule` as its next action, so that the parser checks it. Returns whether it was.
bool append_then(const json& body, const std::string& then_key, json& schedule) {
  if (then_key.empty() || !body.contains("then")) return false;
  const json& then = body["then"];
  if (!then.is_object()) refuse("expected an object", "/then");
  if (then.contains("run_on")) return false;
  json action = then;
  action["at"] = schedule["choices"].size();
  if (!schedule.contains("actions")) schedule["actions"] = json::array();
  schedule["actions"].push_back(std::move(action));
  return true;
}

Request read_request(const PlayOptions& options, const json& body, const std::string& then_key) {
  if (!body.is_object()) refuse("expected a JSON object", "");
  Request request;
  const json source = request_source(options, body, request);
  // The story alone first: its own errors, and whether it keeps time.
  request.story = parse_with(source, nullptr, request.pointer, "/schedule");
  request.story.schedule.reset();
  const bool clocked = playground_clocked(request.story);
  if (!body.contains("schedule")) {
    request.schedule = start_schedule(request.story);
    return request;
  }
  json schedule = checked_schedule(options, body["schedule"], clocked);
  const bool then_appended = append_then(body, then_key, schedule);
  const size_t then_index = schedule.contains("actions") ? schedule["actions"].size() - 1 : 0;
  try {
    const Scenario parsed = parse_with(source, &schedule, request.pointer, "/schedule");
    request.schedule = *parsed.schedule;
  } catch (PlayError& error) {
    // The action of `then` is checked as the schedule's last: its errors are named there.
    const std::string at = "/schedule/actions/" + std::to_string(then_index);
    if (then_appended && error.where.rfind(at, 0) == 0) {
      error.where = "/then" + error.where.substr(at.size());
      if (error.where == "/then/at") error.where = "/then";
    }
    throw;
  }
  return request;
}

// A request with no schedule but a `then`: the action applies at the story's start.
Request with_then(const PlayOptions& options, json body) {
  if (body.is_object() && body.contains("then") && !body.contains("schedule")) {
    Request start = read_request(options, [&] {
      json story = body;
      story.erase("then");
      return story;
    }(), "");
    body["schedule"] = schedule_json(start.schedule);
  }
  return read_request(options, body, "then");
}

FaultKinds fault_kinds_of(const json& body) {
  FaultKinds kinds{};
  if (!body.contains("fault_kinds")) {
    kinds = explorable_fault_kinds();
    return kinds;
  }
  const json& list = body["fault_kinds"];
  if (!list.is_array()) refuse("expected an array of fault kinds", "/fault_kinds");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "/fault_kinds/" + std::to_string(i);
    const std::optional<FaultKind> kind =
        list[i].is_string() ? parse_fault_kind(list[i].get<std::string>()) : std::nullopt;
    if (!kind || !explorable_fault_kind(*kind)) {
      refuse("expected one of " + fault_kinds_text(explorable_fault_kinds()), where);
    }
    kinds[static_cast<size_t>(*kind)] = true;
  }
  return kinds;
}

int64_t integer_in(const json& body, const char* key, int64_t fallback, int64_t low, int64_t high) {
  if (!body.contains(key)) return fallback;
  const json& value = body[key];
  if (!value.is_number_integer() || value.get<int64_t>() < low || value.get<int64_t>() > high) {
    refuse("expected an integer from " + std::to_string(low) + " to " + std::to_string(high),
           std::string("/") + key);
  }
  return value.get<int64_t>();
}

ExploreFromHere explore_settings(const PlayOptions& options, const json& body) {
  ExploreFromHere settings;
  settings.faults = integer_in(body, "faults", 1, 0, 2);
  settings.fault_kinds = fault_kinds_of(body);
  settings.max_states = integer_in(body, "max_states", 200'000, 1, options.explore_states_max);
  settings.seconds = integer_in(body, "seconds", 10, 1, options.explore_seconds_max);
  settings.jobs = options.explore_jobs;
  return settings;
}

json library_json(const PlayOptions& options) {
  json stories = json::array();
  for (const auto& [name, story] : options.stories) {
    stories.push_back(json{{"name", name},
                           {"title", story.scenario.title},
                           {"lesson", story.scenario.lesson},
                           {"mode", playground_clocked(story.scenario) ? "clocked" : "clockless"}});
  }
  return json{{"stories", std::move(stories)},
              {"default", options.default_story.empty() ? json() : json(options.default_story)}};
}

json scenario_file(const Request& request) {
  Scenario saved = request.story;
  saved.schedule = request.schedule;
  saved.schedule->ack_wait_expiries = playground_ack_wait_expiries(request.story);
  return json::parse(scenario_to_json(saved).dump());
}

json dispatch(const PlayOptions& options, const std::string& path, const json& body) {
  if (path == "/api/replay") {
    if (body.is_object()) check_keys(body, {"name", "scenario", "schedule", "then"}, "");
    Request request = with_then(options, body);
    if (body.contains("then") && body["then"].contains("run_on")) {
      const json& then = body["then"];
      check_keys(then, {"run_on"}, "/then");
      const std::optional<RunOn> until =
          then["run_on"].is_string() ? parse_run_on(then["run_on"].get<std::string>())
                                     : std::nullopt;
      if (!until) refuse("expected one of quiescent, delivery, crash_point, commit", "/then/run_on");
      request.schedule = run_on(request.story, request.schedule, *until, options.limits);
    }
    return moment_json(request.story, request.schedule, options.limits);
  }
  if (path == "/api/explore" || path == "/api/no_return") {
    if (body.is_object()) {
      check_keys(body, {"name", "scenario", "schedule", "faults", "fault_kinds", "max_states",
                        "seconds"},
                 "");
    }
    json story = body;
    for (const char* key : {"faults", "fault_kinds", "max_states", "seconds"}) story.erase(key);
    const Request request = read_request(options, story, "");
    const ExploreFromHere settings = explore_settings(options, body);
    return path == "/api/explore"
               ? explore_from_moment(request.story, request.schedule, settings, options.limits)
               : point_of_no_return(request.story, request.schedule, settings, options.limits);
  }
  if (path == "/api/scenario") {
    if (body.is_object()) check_keys(body, {"name", "scenario", "schedule"}, "");
    return scenario_file(read_request(options, body, ""));
  }
  refuse("no such API path (GET /api/library; POST /api/replay, /api/explore, /api/no_return, "
         "/api/scenario)",
         "", 404);
}

std::string error_body(const PlayError& error) {
  return json{{"error", error.error}, {"where", error.where}}.dump();
}

// A fixed pool of workers with a short queue. A connection that finds the queue full is still
// served (its socket must be answered and closed), by one thread of its own that answers 503
// at once: the `overloaded` flag tells the handler.
thread_local bool t_overloaded = false;

class BoundedPool : public httplib::TaskQueue {
 public:
  BoundedPool(size_t threads, size_t queue_max) : queue_max_(queue_max) {
    for (size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { work(jobs_, false); });
    workers_.emplace_back([this] { work(rejects_, true); });
  }
  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (jobs_.size() < queue_max_ + idle_) {
        jobs_.push_back(std::move(fn));
      } else {
        rejects_.push_back(std::move(fn));
      }
    }
    ready_.notify_all();
  }
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (std::thread& worker : workers_) worker.join();
  }

 private:
  void work(std::deque<std::function<void()>>& from, bool overloaded) {
    t_overloaded = overloaded;
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        if (!overloaded) ++idle_;
        ready_.wait(lock, [&] { return stopping_ || !from.empty(); });
        if (!overloaded) --idle_;
        if (from.empty()) return;
        fn = std::move(from.front());
        from.pop_front();
      }
      fn();
    }
  }
  size_t queue_max_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  std::deque<std::function<void()>> rejects_;
  bool stopping_ = false;
  size_t idle_ = 0;  // workers waiting for a job
  std::vector<std::thread> workers_;
};

bool same_token(const std::string& given, const std::string& expected) {
  // Constant time in the token's length: a guess learns nothing from the time it took.
  unsigned diff = given.size() == expected.size() ? 0U : 1U;
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned>(static_cast<unsigned char>(i < given.size() ? given[i] : 0) ^
                                  static_cast<unsigned char>(expected[i]));
  }
  return diff == 0;
}

}  // namespace

void stop_playground() { g_stop_requested = true; }

ApiReply handle_api(const PlayOptions& options, const std::string& method, const std::string& path,
                    const std::string& body) {
  try {
    if (path == "/api/library") {
      if (method != "GET") refuse("use GET", "", 405);
      return ApiReply{200, library_json(options).dump()};
    }
    if (method != "POST") refuse("use POST with a JSON body", "", 405);
    if (body.size() > options.body_max) refuse("the body is larger than 1 MiB", "", 413);
    if (too_deep_offset(body) != std::string_view::npos) refuse("JSON nested deeper than 64", "");
    const json parsed = json::parse(body, nullptr, false);
    if (parsed.is_discarded()) refuse("the body is not valid JSON", "");
    return ApiReply{200, dispatch(options, path, parsed).dump()};
  } catch (const PlayError& error) {
    return ApiReply{error.status, error_body(error)};
  } catch (const InternalError& error) {
    // A broken assumption of the simulator (kernel/assert.h): this request's simulation is
    // gone, the others never shared it. Said on stderr too, for the teacher's terminal.
    std::fprintf(stderr, "inboxsim play: internal error on %s: %s\n", path.c_str(), error.what());
    return ApiReply{500, error_body(PlayError{500,
                                              std::string("internal error: ") + error.what() +
                                                  ". The server goes on serving; this request "
                                                  "replays it, please report it",
                                              ""})};
  } catch (const std::exception& error) {
    // A failure of ours, not of the request: said, and the server goes on serving.
    return ApiReply{500, error_body(PlayError{500, std::string("internal error: ") + error.what(), ""})};
  }
}

namespace {

// Refuses a request when the pool is full, or when it does not name this server (a page
// elsewhere must not reach it through DNS rebinding), comes from another page than its own, or
// lacks the token when there is one; lets the others through to the routes.
httplib::Server::HandlerResponse guard_request(const PlayOptions& options, int port,
                                               const httplib::Request& request,
                                               httplib::Response& response) {
  const bool loopback = options.listen == "127.0.0.1" || options.listen == "::1" ||
                        options.listen == "localhost";
  const auto deny = [&](int status, const std::string& why) {
    response.status = status;
    response.set_content(error_body(PlayError{status, why, ""}), "application/json");
    return httplib::Server::HandlerResponse::Handled;
  };
  if (t_overloaded) return deny(503, "the playground is busy: try again in a moment");
  const std::string suffix = ":" + std::to_string(port);
  std::vector<std::string> hosts = {"127.0.0.1" + suffix, "localhost" + suffix, "[::1]" + suffix};
  if (!loopback) hosts.push_back(options.listen + suffix);
  const std::string host = request.get_header_value("Host");
  if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) {
    return deny(403, "the Host header must name this server (" + hosts.front() + ")");
  }
  if (request.has_header("Origin")) {
    const std::string origin = request.get_header_value("Origin");
    if (std::none_of(hosts.begin(), hosts.end(),
                     [&](const std::string& h) { return origin == "http://" + h; })) {
      return deny(403, "requests from another origin are refused");
    }
  }
  if (!options.token.empty()) {
    const std::string given = request.has_header("X-Inboxsim-Token")
                                  ? request.get_header_value("X-Inboxsim-Token")
                                  : request.get_param_value("token");
    if (!same_token(given, options.token)) {
      return deny(403, "a token is required: open the URL the server printed");
    }
  }
  return httplib::Server::HandlerResponse::Unhandled;
}

// The page at /, the API under /api/, and a JSON body for every error httplib answers itself.
void add_routes(httplib::Server& server, const PlayOptions& options) {
  server.Get("/", [&](const httplib::Request&, httplib::Response& response) {
    response.set_header("Content-Security-Policy",
                        "default-src 'none'; script-src 'unsafe-inline'; style-src "
                        "'unsafe-inline'; img-src data:; connect-src 'self'");
    response.set_content(kPlaygroundPage, "text/html; charset=utf-8");
  });
  const auto api = [&options](const httplib::Request& request, httplib::Response& response) {
    const ApiReply reply = handle_api(options, request.method, request.path, request.body);
    response.status = reply.status;
    response.set_header("Cache-Control", "no-store");
    if (reply.status == 200 && request.path == "/api/scenario") {
      response.set_header("Content-Disposition", "attachment");
    }
    response.set_content(reply.body, "application/json");
  };
  server.Get(R"(/api/.*)", api);
  server.Post(R"(/api/.*)", api);
  server.set_error_handler([](const httplib::Request&, httplib::Response& response) {
    if (!response.body.empty()) return;
    const std::string why = response.status == 413   ? "the body is larger than 1 MiB"
                            : response.status == 404 ? "no such page: the playground is at /"
                                                     : "the request was refused";
    response.set_content(error_body(PlayError{response.status, why, ""}), "application/json");
  });
}

}  // namespace

int serve_playground(const PlayOptions& options, const std::function<void(int port)>& ready) {
  assertions_throw();  // one request's broken assumption must not end the server (assert.h)
  httplib::Server server;
  server.new_task_queue = [&] { return new BoundedPool(options.threads, options.queue_max); };
  server.set_payload_max_length(options.body_max);
  server.set_read_timeout(5, 0);
  server.set_write_timeout(5, 0);
  server.set_keep_alive_max_count(20);
  server.set_keep_alive_timeout(2);
  int port = 0;  // known once bound, before the first request
  server.set_pre_routing_handler([&](const httplib::Request& request,
                                      httplib::Response& response) {
    return guard_request(options, port, request, response);
  });
  add_routes(server, options);
  port = options.port == 0 ? server.bind_to_any_port(options.listen)
                           : (server.bind_to_port(options.listen, options.port) ? options.port : -1);
  if (port <= 0) {
    std::cerr << "inboxsim play: cannot listen on " << options.listen << ":" << options.port
              << " (in use, or not an address of this machine): try --port 0\n";
    return 2;
  }
  ready(port);
  // Ctrl-C only sets a flag (a signal handler may do little else); this thread stops the
  // server when it sees it, and the server's own threads finish what they serve.
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!g_stop_requested && !done) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    server.stop();
  });
  const bool listened = server.listen_after_bind();
  const bool asked = g_stop_requested;
  done = true;
  watcher.join();
  if (!listened && !asked) {
    std::cerr << "inboxsim play: the server stopped listening\n";
    return 3;
  }
  return 0;
}

}  // namespace inboxsim
