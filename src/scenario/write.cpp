#include "scenario/write.h"

#include "kernel/assert.h"

namespace inboxsim {

nlohmann::ordered_json goal_to_json(const Goal& goal) {
  using nlohmann::ordered_json;
  ordered_json out = ordered_json::object();
  switch (goal.kind) {
    case Goal::Kind::broken:
      out["broken"] = invariant_name(goal.invariant);
      break;
    case Goal::Kind::probe:
      out["probe"] = probe_name(goal.probe);
      break;
    case Goal::Kind::saga:
      out["transfer"] = goal.subject;
      out["state"] = saga_state_name(goal.state);
      break;
    case Goal::Kind::balance:
      out["account"] = goal.subject;
      out["balance"] = goal.balance;
      break;
  }
  return out;
}

namespace {

using ordered_json = nlohmann::ordered_json;

// The values a FaultSpec has when the file does not name them; writing them would be noise.
const FaultSpec kDefaultFault{};

ordered_json match_to_json(const Match& match) {
  ordered_json out = ordered_json::object();
  if (match.type) out["type"] = message_type_name(*match.type);
  if (!match.transfer.empty()) out["transfer"] = match.transfer;
  if (match.occurrence != kDefaultFault.match.occurrence) out["occurrence"] = match.occurrence;
  return out;
}

// Writes the keys the fault's kind takes (kFaultKinds), those with their default value left out.
ordered_json fault_to_json(const FaultSpec& fault) {
  const FaultKindSpec& spec = fault_kind_spec(fault.kind);
  INBOXSIM_ASSERT(!spec.on_service || fault.service.has_value());
  INBOXSIM_ASSERT(spec.on_service || fault.has_match);
  INBOXSIM_ASSERT(!fault.instance || fault.service.has_value());
  ordered_json out;
  out["kind"] = spec.name;
  if (fault.service) out["service"] = service_name(*fault.service);
  if (fault.instance) out["instance"] = *fault.instance;
  if (spec.takes("at")) out["at"] = crash_point_name(fault.at);
  if (fault.has_match) out["match"] = match_to_json(fault.match);
  if (spec.takes("ms")) out["ms"] = fault.ms;
  if (spec.takes("restart_after_ms") && fault.restart_after_ms != kDefaultFault.restart_after_ms) {
    out["restart_after_ms"] = fault.restart_after_ms;
  }
  if (spec.takes("times") && fault.times != kDefaultFault.times) out["times"] = fault.times;
  if (spec.takes("cause") && fault.cause != kDefaultFault.cause) {
    out["cause"] = failure_cause_name(fault.cause);
  }
  if (spec.takes("by") && fault.copied_by != kDefaultFault.copied_by) {
    out["by"] = copy_source_name(fault.copied_by);
  }
  return out;
}

ordered_json step_to_json(const Step& step) {
  ordered_json out;
  switch (step.kind) {
    case StepKind::transfer:
      out["transfer"] = ordered_json{{"id", step.transfer.id},
                                     {"from", step.transfer.from},
                                     {"to", step.transfer.to},
                                     {"amount", step.transfer.amount}};
      break;
    case StepKind::fault: out["fault"] = fault_to_json(step.fault); break;
    case StepKind::run:
      out["run"] = step.until_quiescent ? ordered_json{{"until", "quiescent"}}
                                        : ordered_json{{"ms", step.ms}};
      break;
    case StepKind::advance: out["advance"] = ordered_json{{"ms", step.ms}}; break;
    case StepKind::drop_index: out["drop_index"] = index_name(step.index); break;
    case StepKind::redrive: out["redrive"] = step.queue; break;
    case StepKind::restore_index: out["restore_index"] = index_name(step.index); break;
    case StepKind::publish:
      out["publish"] = ordered_json{{"exchange", step.exchange},
                                    {"routing_key", step.routing_key},
                                    {"message_id", step.message.message_id},
                                    {"body", ordered_json::parse(envelope_json(step.message))}};
      break;
  }
  return out;
}

ordered_json accounts_to_json(const std::map<std::string, AccountSpec>& accounts) {
  ordered_json out = ordered_json::object();
  for (const auto& [name, account] : accounts) {
    if (account.closed) {
      out[name] = ordered_json{{"balance", account.balance}, {"closed", true}};
    } else {
      out[name] = account.balance;
    }
  }
  return out;
}

// Writes the keyed maps of an expectation, naming keys the way the file spells them.
void expect_maps_to_json(const Expect& expect, ordered_json& out) {
  if (expect.balances) out["balances"] = ordered_json(*expect.balances);
  if (expect.transfers) {
    ordered_json& transfers = out["transfers"] = ordered_json::object();
    for (const auto& [id, state] : *expect.transfers) transfers[id] = saga_state_name(state);
  }
  if (expect.published) {
    ordered_json& published = out["published"] = ordered_json::object();
    for (const auto& [type, count] : *expect.published) {
      published[std::string(message_type_name(type))] = count;
    }
  }
  if (expect.sends) {
    ordered_json& sends = out["sends"] = ordered_json::object();
    for (const auto& [type, count] : *expect.sends) {
      sends[std::string(message_type_name(type))] = count;
    }
  }
  if (expect.effects) {
    ordered_json& effects = out["effects"] = ordered_json::object();
    for (const auto& [id, counts] : *expect.effects) {
      ordered_json& entry = effects[id] = ordered_json::object();
      for (const auto& [type, count] : counts) entry[std::string(entry_type_name(type))] = count;
    }
  }
  if (expect.dedupe_hits) {
    ordered_json& hits = out["dedupe_hits"] = ordered_json::object();
    for (const auto& [service, count] : *expect.dedupe_hits) {
      hits[std::string(service_name(service))] = count;
    }
  }
}

ordered_json expect_to_json(const Expect& expect) {
  ordered_json out = ordered_json::object();
  expect_maps_to_json(expect, out);
  if (expect.dead_lettered) out["dead_lettered"] = *expect.dead_lettered;
  if (expect.error_queued) out["error_queued"] = *expect.error_queued;
  if (expect.dropped) out["dropped"] = *expect.dropped;
  if (expect.redeliveries) out["redeliveries"] = *expect.redeliveries;
  ordered_json& violations = out["violations"] = ordered_json::array();
  for (const Invariant invariant : expect.violations) {
    violations.push_back(invariant_name(invariant));
  }
  for (const bool reachable : {true, false}) {
    ordered_json goals = ordered_json::array();
    for (const Goal& goal : expect.goals) {
      if (goal.reachable == reachable) goals.push_back(goal_to_json(goal));
    }
    if (!goals.empty()) out[reachable ? "reachable" : "unreachable"] = std::move(goals);
  }
  return out;
}

}  // namespace

ordered_json actions_to_json(const Schedule& schedule) {
  ordered_json actions = ordered_json::array();
  for (const Schedule::Action& action : schedule.actions) {
    ordered_json entry;
    entry["at"] = action.at;
    const ordered_json step = step_to_json(action.step);
    for (auto item = step.begin(); item != step.end(); ++item) entry[item.key()] = item.value();
    actions.push_back(std::move(entry));
  }
  return actions;
}

namespace {

// A checkpoint's "after", a watch_for's "event".
ordered_json selector_to_json(const EventSelector& selector) {
  ordered_json out = ordered_json::object();
  out["kind"] = event_kind_name(selector.kind);
  if (selector.match.type) out["type"] = message_type_name(*selector.match.type);
  if (!selector.match.transfer.empty()) out["transfer"] = selector.match.transfer;
  if (selector.match.occurrence != 1) out["occurrence"] = selector.match.occurrence;
  return out;
}

}  // namespace

ordered_json scenario_to_json(const Scenario& scenario) {
  ordered_json out;
  out["name"] = scenario.name;
  if (!scenario.title.empty()) out["title"] = scenario.title;
  if (!scenario.description.empty()) out["description"] = scenario.description;
  if (const DescriptionParts parts = shown_parts(scenario); !parts.empty()) {
    out["setup"] = parts.setup;
    out["watch_for"] = {{"event", selector_to_json(parts.watch_for_event)},
                        {"text", parts.watch_for}};
    out["why"] = parts.why;
  }
  if (!scenario.lesson.empty()) out["lesson"] = scenario.lesson;
  out["seed"] = scenario.seed;
  if (const ordered_json config = config_diff_json(scenario.config); !config.empty()) {
    out["config"] = config;
  }
  out["accounts"] = accounts_to_json(scenario.accounts);
  ordered_json& steps = out["steps"] = ordered_json::array();
  for (const Step& step : scenario.steps) steps.push_back(step_to_json(step));
  out["expect"] = expect_to_json(scenario.expect);
  if (scenario.schedule) {
    ordered_json& schedule = out["schedule"];
    schedule["faults"] = scenario.schedule->faults;
    ordered_json& kinds = schedule["fault_kinds"] = ordered_json::array();
    for (size_t kind = 0; kind < kFaultKindCount; ++kind) {
      if (scenario.schedule->fault_kinds[kind]) {
        kinds.push_back(fault_kind_name(static_cast<FaultKind>(kind)));
      }
    }
    if (scenario.schedule->ack_wait_expiries > 0) {
      schedule["ack_wait_expiries"] = scenario.schedule->ack_wait_expiries;
    }
    schedule["choices"] = scenario.schedule->choices;
    if (scenario.schedule->stepwise > 0) schedule["stepwise"] = scenario.schedule->stepwise;
    if (scenario.schedule->clocked) schedule["clock"] = true;
    if (!scenario.schedule->actions.empty()) schedule["actions"] = actions_to_json(*scenario.schedule);
  }
  if (!scenario.checkpoints.empty()) {
    ordered_json& checkpoints = out["checkpoints"] = ordered_json::array();
    for (const Checkpoint& checkpoint : scenario.checkpoints) {
      checkpoints.push_back(
          {{"after", selector_to_json(EventSelector{checkpoint.kind, checkpoint.match})},
           {"question", checkpoint.question}});
    }
  }
  return out;
}

}  // namespace inboxsim
