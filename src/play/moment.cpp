#include "play/moment.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "fuzz/explore.h"
#include "kernel/assert.h"
#include "play/play_error.h"
#include "play/replay.h"
#include "report/description.h"
#include "report/html.h"
#include "scenario/runner.h"
#include "scenario/write.h"
#include "world/world.h"

namespace inboxsim {

namespace {

using json = nlohmann::json;

}  // namespace

Replay replay(const Scenario& story, const Schedule& schedule, const ReplayMode& mode,
              const MomentLimits& limits) {
  WorldOptions options;
  options.seed = story.seed;
  options.keep_trace = mode.views;
  options.hash_trace = false;
  options.record_rows = mode.views;
  options.explore.enabled = true;
  options.explore.schedule = schedule;
  options.explore.schedule.ack_wait_expiries = playground_ack_wait_expiries(story);
  options.explore.stop_at_schedule_end = mode.stop;
  options.explore.stepwise_beyond = mode.stepwise_beyond;
  options.explore.log_choices = true;
  options.explore.log_every_point = mode.every_point;
  options.explore.choices_max = limits.schedule_max;
  Replay out;
  out.world = std::make_unique<World>(story, story.config, options);
  World& world = *out.world;
  // As run_story plays a story, so that a saved schedule replays the same trace in `run`.
  bool ends_with_run = false;
  for (const Step& step : story.steps) {
    world.mark_step(describe_step(step));
    play_step(world, step);
    ends_with_run = step.kind == StepKind::run;
    if (world.exploration_stopped()) break;
  }
  if (!world.exploration_stopped() && !ends_with_run) {
    world.mark_step("run until quiescent (end of the scenario)");
    world.run_until_quiescent();
  }
  if (!world.exploration_stopped()) play_story_end(world);
  const ExploreOutcome& outcome = world.explore_outcome();
  if (outcome.misfit) {
    throw PlayError{400, "the schedule does not fit this story: choice " +
                             std::to_string(outcome.consumed) + " names an option that is not there",
                    "/schedule/choices/" + std::to_string(outcome.consumed - 1)};
  }
  out.ended = !world.events_pending() || !world.exploration_stopped();
  out.canonical.clocked = schedule.clocked;
  out.canonical.choices.assign(schedule.choices.begin(),
                               schedule.choices.begin() + static_cast<std::ptrdiff_t>(
                                                              std::min(outcome.consumed,
                                                                       schedule.choices.size())));
  out.canonical.choices.insert(out.canonical.choices.end(), outcome.defaulted, 0);
  out.canonical.stepwise = out.canonical.choices.size();
  out.canonical.actions.assign(schedule.actions.begin(),
                               schedule.actions.begin() +
                                   static_cast<std::ptrdiff_t>(world.actions_taken()));
  return out;
}

// The schedule of the moment at `position` choices with the first `actions` hand actions.
Schedule prefix_of(const Schedule& schedule, size_t position, size_t actions) {
  Schedule out;
  out.clocked = schedule.clocked;
  out.choices.assign(schedule.choices.begin(),
                     schedule.choices.begin() + static_cast<std::ptrdiff_t>(position));
  out.stepwise = position;
  out.actions.assign(schedule.actions.begin(),
                     schedule.actions.begin() + static_cast<std::ptrdiff_t>(actions));
  return out;
}

std::vector<Move> moves_of(const Replay& run, const Config& config) {
  std::vector<Move> moves;
  size_t actions = 0;
  for (const ChoiceRecord& record : run.world->explore_outcome().log) {
    if (record.action >= 0) {
      Move move;
      move.kind = "hand";
      move.label =
          describe_step_in(run.canonical.actions[static_cast<size_t>(record.action)].step, config);
      move.position = record.position;
      move.actions = actions++;
      move.first_event = record.trace_events;
      moves.push_back(std::move(move));
    } else if (record.event) {
      Move move;
      move.kind = "event";
      move.label = record.label;
      move.position = record.position;
      move.actions = actions;
      move.first_event = record.trace_events;
      moves.push_back(std::move(move));
    } else if (record.taken == 1 && !moves.empty()) {
      Move& move = moves.back();
      move.kind = "fault";
      move.label += " — " + record.label;
      ++move.faults;
    }
  }
  return moves;
}

size_t faults_taken(const Replay& run) {
  size_t count = 0;
  for (const ChoiceRecord& record : run.world->explore_outcome().log) {
    if (!record.event && record.action < 0 && record.taken == 1) ++count;
  }
  return count;
}

void check_size(const Schedule& schedule, const MomentLimits& limits) {
  if (schedule.choices.size() > limits.schedule_max) {
    throw PlayError{400, "at most " + std::to_string(limits.schedule_max) + " choices",
                    "/schedule/choices"};
  }
  if (schedule.actions.size() > limits.schedule_max) {
    throw PlayError{400, "at most " + std::to_string(limits.schedule_max) + " hand actions",
                    "/schedule/actions"};
  }
}

namespace {

json message_json(const MessagePtr& message) {
  if (!message) return nullptr;
  return json{{"id", message->message_id},
              {"type", message_type_name(message->type)},
              {"transfer", message->transfer}};
}

json now_json(World& world, const RunResult& result, bool ended) {
  json now;
  now["time_ms"] = world.clock_ms();
  now["ended"] = ended;
  now["balances"] = result.balances;
  json sagas = json::object();
  for (const auto& [id, state] : result.transfers) sagas[id] = saga_state_name(state);
  now["sagas"] = std::move(sagas);
  json queues = json::array();
  std::string_view current;
  for (const QueueEntry& entry : world.queue_contents()) {
    if (queues.empty() || entry.queue != current) {
      current = entry.queue;
      queues.push_back(json{{"name", entry.queue}, {"ready", json::array()}, {"unacked", 0}});
    }
    json& queue = queues.back();
    if (entry.state == "unacked") {
      queue["unacked"] = queue["unacked"].get<int64_t>() + 1;
      continue;
    }
    queue["ready"].push_back(json{{"message_id", entry.message->message_id},
                                  {"type", message_type_name(entry.message->type)},
                                  {"transfer", entry.message->transfer},
                                  {"redelivered", entry.redelivered},
                                  {"delivery_count", entry.delivery_count}});
  }
  now["queues"] = std::move(queues);
  json instances = json::array();
  for (const World::InstanceState& instance : world.instance_states()) {
    instances.push_back(
        json{{"name", instance.name}, {"up", instance.up}, {"paused", instance.paused}});
  }
  now["instances"] = std::move(instances);
  json invariants = json::array();
  for (size_t index = 0; index < kInvariantCount; ++index) {
    if (!result.invariant_applies[index]) continue;
    const auto invariant = static_cast<Invariant>(index);
    json entry{{"name", invariant_name(invariant)}, {"ok", true}, {"detail", ""}};
    for (const Violation& violation : result.violations) {
      if (violation.invariant == invariant) {
        entry["ok"] = false;
        entry["detail"] = violation.detail;
        break;
      }
    }
    invariants.push_back(std::move(entry));
  }
  now["invariants"] = std::move(invariants);
  json indexes = json::array();
  const std::vector<IndexName> dropped = world.dropped_indexes();
  for (const IndexName index : {IndexName::transfer_processed_messages, IndexName::account_ledger,
                                IndexName::account_inbox_state}) {
    const bool gone = std::find(dropped.begin(), dropped.end(), index) != dropped.end();
    indexes.push_back(json{{"name", index_name(index)}, {"dropped", gone}});
  }
  now["indexes"] = std::move(indexes);
  return now;
}

json hand_json(World& world, const Config& config) {
  json templates = json::array();
  const std::map<std::string, std::string> envelopes = world.envelopes();
  for (const auto& [id, body] : envelopes) {
    json envelope = json::parse(body);
    const std::optional<MessageType> type =
        parse_message_type(envelope.value("type", std::string()));
    if (!type) continue;
    templates.push_back(json{{"exchange", "banking.events"},
                             {"routing_key", routing_key(*type)},
                             {"message_id", id},
                             {"body", std::move(envelope)}});
  }
  json indexes = json::array();
  json index_labels = json::object();  // each index as the story's config names it
  for (const IndexName index : {IndexName::transfer_processed_messages, IndexName::account_ledger,
                                IndexName::account_inbox_state}) {
    indexes.push_back(index_name(index));
    index_labels[std::string(index_name(index))] = index_words(index, config);
  }
  return json{{"publish_templates", std::move(templates)},
              {"redrive", world.parking_queues()},
              {"indexes", std::move(indexes)},
              {"index_labels", std::move(index_labels)},
              {"advance", true}};
}

json verdict_json(const Scenario& story, RunResult& result, bool ended) {
  json verdict;
  verdict["ended"] = ended;
  json violations = json::array();
  for (const Violation& violation : result.violations) {
    violations.push_back(
        json{{"invariant", invariant_name(violation.invariant)}, {"detail", violation.detail}});
  }
  verdict["violations"] = std::move(violations);
  if (!ended) {
    verdict["passed"] = nullptr;
    verdict["expectations"] = json::array();
    return verdict;
  }
  // The story's expectations are for its own order; a branch may rightly differ from them.
  evaluate_expectations(story.expect, result);
  verdict["passed"] = result.violations.empty();
  json expectations = json::array();
  for (const ExpectationResult& expectation : result.expectations) {
    expectations.push_back(
        json{{"what", expectation.what}, {"ok", expectation.ok}, {"detail", expectation.detail}});
  }
  verdict["expectations"] = std::move(expectations);
  return verdict;
}

json story_json(const Scenario& story) {
  return json{{"name", story.name},
              {"title", story.title},
              {"description", description_paragraph(story.description, shown_parts(story))},
              {"lesson", story.lesson},
              {"mode", playground_clocked(story) ? "clocked" : "clockless"},
              {"mode_note", mode_note(story)}};
}

Schedule extended(const Schedule& schedule, std::initializer_list<uint32_t> more) {
  Schedule out = schedule;
  out.choices.insert(out.choices.end(), more.begin(), more.end());
  out.stepwise = out.choices.size();
  return out;
}

}  // namespace

nlohmann::json schedule_json(const Schedule& schedule) {
  nlohmann::json out;
  out["stepwise"] = schedule.stepwise;
  out["choices"] = schedule.choices;
  if (schedule.clocked) out["clock"] = true;
  out["actions"] = nlohmann::json::parse(actions_to_json(schedule).dump());
  return out;
}

std::optional<RunOn> parse_run_on(std::string_view name) {
  if (name == "quiescent") return RunOn::quiescent;
  if (name == "delivery") return RunOn::delivery;
  if (name == "crash_point") return RunOn::crash_point;
  if (name == "commit") return RunOn::commit;
  return std::nullopt;
}

namespace {

// Why a story without timed steps still plays with its clock: its own order breaks none of
// its expectations, and the order without a clock (every event as soon as it is scheduled)
// does; empty when it plays without one.
std::string needs_its_clock(const Scenario& story) {
  if (clockless_refusal(story)) return {};
  Scenario free = story;
  free.schedule = Schedule{};
  RunOptions quiet;
  quiet.keep_trace = false;
  quiet.hash_trace = false;
  const RunResult without = run_scenario(free, quiet);
  if (without.passed) return {};
  const RunResult with = run_scenario(without_schedule(story), quiet);
  if (!with.passed) return {};
  for (const ExpectationResult& expectation : without.expectations) {
    if (!expectation.ok) return expectation.what + " (" + expectation.detail + ")";
  }
  return "its expectations";
}

// The answer for each story seen, by its text: two runs the first time, none after.
std::string cached_need(const Scenario& story) {
  static std::mutex mutex;
  static std::map<std::string, std::string> seen;
  Scenario key_story = story;
  key_story.schedule.reset();
  const std::string key = scenario_to_json(key_story).dump();
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (const auto found = seen.find(key); found != seen.end()) return found->second;
  }
  std::string need = needs_its_clock(story);
  std::lock_guard<std::mutex> lock(mutex);
  if (seen.size() > 1024) seen.clear();  // inline stories: bounded
  return seen.emplace(key, std::move(need)).first->second;
}

}  // namespace

int64_t playground_ack_wait_expiries(const Scenario& story) {
  return story.config.broker_kind == BrokerKind::jetstream ? 1 : 0;
}

bool playground_clocked(const Scenario& story) {
  return clockless_refusal(story).has_value() || !cached_need(story).empty();
}

std::string mode_note(const Scenario& story) {
  if (const std::optional<Refusal> refusal = clockless_refusal(story)) {
    return "This story keeps time (" + refusal->pointer +
           "), so it plays with its clock: each event comes when its time does, and a choice "
           "appears only when several are due at once. Faults can still strike at every point. "
           "\"Can it still break?\" needs a story without a clock: " +
           refusal->expected + ".";
  }
  if (const std::string need = cached_need(story); !need.empty()) {
    return "This story plays with its clock: its lesson comes from the order its latencies and "
           "waits make (without a clock, every event as soon as it is scheduled, " +
           need +
           " would not hold). A choice appears only when several events are due at once; faults "
           "can still strike at every point. \"Can it still break?\" needs a story played "
           "without a clock.";
  }
  return "No clock: every pending event may happen next, as the explorer sees it; you choose "
         "the order, and any fault can strike at any point.";
}

Schedule start_schedule(const Scenario& story) {
  Schedule schedule;
  schedule.clocked = playground_clocked(story);
  return schedule;
}

nlohmann::json moment_json(const Scenario& story, const Schedule& schedule,
                           const MomentLimits& limits) {
  check_size(schedule, limits);
  ReplayMode mode;
  mode.views = true;
  Replay run = replay(story, schedule, mode, limits);
  World& world = *run.world;
  json out;
  out["story"] = story_json(story);
  out["schedule"] = schedule_json(run.canonical);
  json moves = json::array();
  for (const Move& move : moves_of(run, story.config)) {
    moves.push_back(json{{"kind", move.kind},
                         {"label", move.label},
                         {"event", move.first_event},
                         {"schedule", schedule_json(prefix_of(run.canonical, move.position,
                                                              move.actions))}});
  }
  out["moves"] = std::move(moves);
  // What can happen next, each with the faults that can strike while it happens (a replay
  // that takes it, stopped at the moment after it).
  json enabled = json::array();
  if (!run.ended) {
    const std::vector<PendingEvent> pending = world.pending_events();
    for (size_t option = 0; option < pending.size(); ++option) {
      const PendingEvent& event = pending[option];
      const Schedule take = extended(run.canonical, {static_cast<uint32_t>(option)});
      json item{{"kind", event.kind},
                {"label", event.label},
                {"participant", event.participant},
                {"message", message_json(event.message)},
                {"schedule", schedule_json(take)}};
      json faults = json::array();
      if (take.choices.size() < limits.schedule_max) {
        Replay probe = replay(story, take, ReplayMode{}, limits);
        size_t zeros = 0;
        for (const ChoiceRecord& record : probe.world->explore_outcome().log) {
          if (record.position < take.choices.size() || record.event || record.action >= 0) {
            continue;
          }
          Schedule strike = take;
          strike.choices.insert(strike.choices.end(), zeros++, 0);
          strike.choices.push_back(1);
          strike.stepwise = strike.choices.size();
          faults.push_back(json{{"kind", record.fault_kind},
                                {"label", record.label},
                                {"schedule", schedule_json(strike)}});
        }
      }
      item["faults"] = std::move(faults);
      enabled.push_back(std::move(item));
    }
  }
  out["enabled"] = std::move(enabled);
  RunResult result = run.ended ? world.finish() : world.snapshot();
  result.name = story.name;
  result.title = story.title;
  result.description = story.description;
  result.description_parts = shown_parts(story);
  result.lesson = story.lesson;
  result.seed = story.seed;
  out["now"] = now_json(world, result, run.ended);
  out["hand"] = hand_json(world, story.config);
  out["report"] = json{{"data", json::parse(report_data_json(result))},
                       {"svg", report_swimlanes(result)}};
  out["verdict"] = verdict_json(story, result, run.ended);
  return out;
}

Schedule with_action(const Schedule& schedule, const Step& action) {
  Schedule out = schedule;
  out.actions.push_back(Schedule::Action{schedule.choices.size(), action});
  return out;
}

Schedule run_on(const Scenario& story, const Schedule& schedule, RunOn until,
                const MomentLimits& limits) {
  check_size(schedule, limits);
  const Replay here = replay(story, schedule, ReplayMode{}, limits);
  if (here.ended) return here.canonical;
  ReplayMode mode;
  mode.stop = false;
  mode.views = until == RunOn::delivery;
  Replay all = replay(story, here.canonical, mode, limits);
  if (until == RunOn::quiescent) return all.canonical;
  const std::vector<Move> moves = moves_of(all, story.config);
  const std::vector<ChoiceRecord>& log = all.world->explore_outcome().log;
  const std::vector<TraceEvent>& events = all.world->trace().events();
  // The moves past this moment, each with the records and trace events it spans; stop before
  // the first of them (after at least one) that does what `until` names.
  std::vector<size_t> ahead;
  for (size_t index = 0; index < moves.size(); ++index) {
    if (moves[index].position >= here.canonical.choices.size() && moves[index].kind != "hand") {
      ahead.push_back(index);
    }
  }
  for (size_t k = 1; k < ahead.size(); ++k) {
    const Move& move = moves[ahead[k]];
    const size_t end_position =
        ahead[k] + 1 < moves.size() ? moves[ahead[k] + 1].position : all.canonical.choices.size();
    bool matches = false;
    if (until == RunOn::crash_point) {
      for (const ChoiceRecord& record : log) {
        if (record.position > move.position && record.position < end_position && !record.event &&
            record.action < 0 && record.fault_kind == "crash") {
          matches = true;
        }
      }
    } else {
      const size_t end_event =
          ahead[k] + 1 < moves.size() ? moves[ahead[k] + 1].first_event : events.size();
      for (size_t e = move.first_event; e < end_event && e < events.size(); ++e) {
        const EventKind kind = events[e].kind;
        if (until == RunOn::delivery ? kind == EventKind::deliver
                                     : kind == EventKind::dedupe_record ||
                                           kind == EventKind::effect || kind == EventKind::saga ||
                                           kind == EventKind::notification ||
                                           kind == EventKind::rejected) {
          matches = true;
        }
      }
    }
    if (matches) return prefix_of(all.canonical, move.position, move.actions);
  }
  return all.canonical;
}

Schedule stepwise_schedule(const Scenario& story, const Schedule& schedule,
                           const MomentLimits& limits) {
  ReplayMode mode;
  mode.stop = false;
  mode.every_point = true;
  mode.stepwise_beyond = false;
  Replay all = replay(story, schedule, mode, limits);
  Schedule out;
  out.clocked = schedule.clocked;
  for (const ChoiceRecord& record : all.world->explore_outcome().log) {
    if (record.action < 0) out.choices.push_back(record.taken);
  }
  out.stepwise = out.choices.size();
  out.actions = all.canonical.actions;
  return out;
}

}  // namespace inboxsim
