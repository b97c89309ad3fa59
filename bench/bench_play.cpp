// The playground's speed targets (docs/playground.md, "Speed"), measured without the sockets: a
// replay request of a story of over 60 events (60-crash-after-send-pass, 73, by default, or
// argv[1]: the moment, its views and a probe per pending event), and "can it still break from
// here?" on one transfer (01-happy-path) with one fault anywhere (skipped with argv[2] =
// "replays"). Prints medians of wall time; the targets are < 50 ms and < 10 s on these machines.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "play/moment.h"
#include "scenario/parse.h"

using namespace inboxsim;

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help")) {
    std::puts("Usage: inboxsim_bench_play [STORY [replays]]\n"
              "  STORY: a scenario of the library by name, without .json (default\n"
              "  60-crash-after-send-pass); 'replays' skips \"can it still break from here?\"");
    return 0;
  }
  const std::string dir = std::string(INBOXSIM_SOURCE_DIR) + "/scenarios/";
  const ParseResult parsed =
      parse_scenario_file(dir + (argc > 1 ? argv[1] : "60-crash-after-send-pass") + ".json");
  const ParseResult one = parse_scenario_file(dir + "01-happy-path.json");
  for (const ParseResult* result : {&parsed, &one}) {
    if (!result->error) continue;
    std::fprintf(stderr, "inboxsim_bench_play: %s\n", result->error->message().c_str());
    return 2;
  }
  if (argc > 3 || (argc > 2 && std::string(argv[2]) != "replays")) {
    std::fputs("inboxsim_bench_play: expected at most STORY and 'replays'\n", stderr);
    return 2;
  }
  const Scenario& story = *parsed.scenario;
  const MomentLimits limits;
  const Schedule end = run_on(story, start_schedule(story), RunOn::quiescent, limits);
  // The middle of the story: the replay request a class makes most (events still pending).
  const nlohmann::json full = moment_json(story, end, limits);
  const nlohmann::json& middle_moves = full["moves"];
  Schedule middle = end;
  middle.choices.resize(middle_moves[middle_moves.size() / 2]["schedule"]["choices"].size());
  middle.stepwise = middle.choices.size();
  std::printf("story: %zu events, %zu moves, %zu choices\n",
              full["report"]["data"]["events"].size(), middle_moves.size(), end.choices.size());
  for (const auto& [name, schedule] : {std::pair{"end", end}, std::pair{"middle", middle}}) {
    std::vector<double> times;
    for (int i = 0; i < 15; ++i) {
      const auto start = std::chrono::steady_clock::now();
      const nlohmann::json moment = moment_json(story, schedule, limits);
      const std::string body = moment.dump();
      times.push_back(ms_since(start));
    }
    std::printf("replay request at the %s: median %.1f ms (target < 50 ms)\n", name, median(times));
  }
  if (argc > 2 && std::string(argv[2]) == "replays") return 0;
  // One duplicate, one crash, and one fault of any explorable kind (no kind named).
  const std::pair<const char*, std::optional<FaultKind>> questions[] = {
      {"duplicate", FaultKind::duplicate},
      {"crash", FaultKind::crash},
      {"fault of any kind", std::nullopt}};
  for (const auto& [kind, one_kind] : questions) {
    ExploreFromHere settings;
    settings.faults = 1;
    if (one_kind) {
      settings.fault_kinds[static_cast<size_t>(*one_kind)] = true;
    } else {
      settings.fault_kinds = explorable_fault_kinds();
    }
    settings.max_states = 2'000'000;
    settings.seconds = 600;
    settings.jobs = 2;
    const auto start = std::chrono::steady_clock::now();
    const nlohmann::json answer =
        explore_from_moment(*one.scenario, start_schedule(*one.scenario), settings, limits);
    std::printf("can it still break, from the start, 1 %s anywhere: %s, %lld states, %.0f ms "
                "(target < 10 s)\n",
                kind, answer["verdict"].get<std::string>().c_str(),
                static_cast<long long>(answer["states"].get<int64_t>()), ms_since(start));
  }
  return 0;
}
