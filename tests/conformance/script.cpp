// Script parsing: every key is checked, an unknown key is an error (a typo in a script must not
// silently drop a check), and each message names the file and the JSON pointer of the problem.
#include "script.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <set>

#include "script_json.h"

namespace inboxsim::conformance {

namespace {

using json = nlohmann::json;

constexpr size_t kStepsMax = 500;
// A pause longer than a minute would stall the test suite for nothing.
constexpr int64_t kPauseMsMax = 60'000;
constexpr int64_t kDeliveryLimitMax = 1000;
constexpr int64_t kPrefetchMax = 1000;
constexpr int64_t kHeartbeatSecondsMax = 60;

constexpr std::array<std::pair<Op, const char*>, 12> kOps = {{
    {Op::declare, "declare"},
    {Op::consume, "consume"},
    {Op::publish, "publish"},
    {Op::ack, "ack"},
    {Op::nack, "nack"},
    {Op::reject, "reject"},
    {Op::close, "close"},
    {Op::kill, "kill"},
    {Op::reconnect, "reconnect"},
    {Op::pause, "pause"},
    {Op::inspect, "inspect"},
    {Op::redrive, "redrive"},
}};

// The keys each operation accepts besides its own name, `then`, `fake_then`, `difference` and
// `note` (free text for the reader).
std::set<std::string> keys_of(Op op) {
  switch (op) {
    case Op::declare: return {"bind", "rabbitmq_arguments"};
    case Op::consume: return {"queue", "heartbeat_s"};
    case Op::publish: return {"key", "fake_fault", "close_before_confirm"};
    case Op::ack: return {"tag"};
    case Op::nack:
    case Op::reject: return {"tag", "requeue"};
    case Op::close: return {"channel_only"};
    case Op::pause: return {"ms"};
    case Op::kill:
    case Op::reconnect:
    case Op::inspect:
    case Op::redrive: return {};
  }
  return {};
}

void parse_arguments(const json& value, const std::string& pointer, Step& step) {
  if (!value.is_object()) fail(pointer, "an object of queue arguments");
  for (const auto& [key, argument] : value.items()) {
    if (argument.is_number_integer()) {
      step.rabbitmq_int_arguments[key] = argument.get<int64_t>();
    } else if (argument.is_string()) {
      step.rabbitmq_text_arguments[key] = argument.get<std::string>();
    } else {
      fail(pointer + "/" + key, "an integer or a string");
    }
  }
}

void parse_operands(const json& object, const std::string& pointer, Step& step) {
  const auto has = [&](const char* key) { return object.contains(key); };
  switch (step.op) {
    case Op::declare:
      step.bindings = texts(member(object, "bind", pointer), pointer + "/bind");
      if (has("rabbitmq_arguments")) {
        parse_arguments(object["rabbitmq_arguments"], pointer + "/rabbitmq_arguments", step);
        // The fake has no such arguments: the step must say how it stands in for them.
        if (!object.contains("note"))
          fail(pointer + "/note", "why the fake needs no such argument");
      }
      return;
    case Op::consume:
      step.queue = text(member(object, "queue", pointer), pointer + "/queue");
      if (has("heartbeat_s")) {
        step.heartbeat_s =
            integer(object["heartbeat_s"], pointer + "/heartbeat_s", 1, kHeartbeatSecondsMax);
      }
      return;
    case Op::publish:
      step.routing_key = text(member(object, "key", pointer), pointer + "/key");
      if (has("fake_fault")) {
        if (object["fake_fault"] != "publish_nack")
          fail(pointer + "/fake_fault", "\"publish_nack\"");
        // RabbitMQ refuses the publish for a reason of its own (a full queue); the step must
        // say what that reason is and which fault of the simulator stands in for it.
        if (!object.contains("note")) fail(pointer + "/note", "what makes RabbitMQ refuse it");
        step.fake_publish_nack = true;
      }
      if (has("close_before_confirm")) {
        step.close_before_confirm =
            boolean(object["close_before_confirm"], pointer + "/close_before_confirm");
      }
      return;
    case Op::ack:
    case Op::nack:
    case Op::reject:
      step.tag = integer(member(object, "tag", pointer), pointer + "/tag", 1, 1'000'000);
      if (has("requeue")) step.requeue = boolean(object["requeue"], pointer + "/requeue");
      return;
    case Op::close:
      if (has("channel_only"))
        step.channel_only = boolean(object["channel_only"], pointer + "/channel_only");
      return;
    case Op::pause:
      step.pause_ms = integer(member(object, "ms", pointer), pointer + "/ms", 1, kPauseMsMax);
      return;
    case Op::kill:
    case Op::reconnect:
    case Op::inspect:
    case Op::redrive: return;
  }
}

Step parse_step(const json& object, const std::string& pointer) {
  if (!object.is_object()) fail(pointer, "an object with one operation");
  Step step;
  step.pointer = pointer;
  int operations = 0;
  for (const auto& [op, name] : kOps) {
    if (!object.contains(name)) continue;
    ++operations;
    step.op = op;
    step.subject = text(object[name], pointer + "/" + name);
  }
  if (operations != 1) fail(pointer, "exactly one operation (declare, consume, publish, ...)");
  std::set<std::string> allowed = keys_of(step.op);
  allowed.insert({op_name(step.op), "then", "fake_then", "difference", "note"});
  for (const auto& [key, value] : object.items()) {
    if (allowed.count(key) == 0)
      fail(pointer + "/" + key, std::string("no such key for ") + op_name(step.op));
  }
  parse_operands(object, pointer, step);
  if (object.contains("then")) step.then = observations(object["then"], pointer + "/then");
  if (object.contains("fake_then")) {
    step.fake_then = observations(object["fake_then"], pointer + "/fake_then");
    step.difference = text(member(object, "difference", pointer), pointer + "/difference");
    if (same_observations(*step.fake_then, step.then)) {
      fail(pointer + "/fake_then", "observations that differ from \"then\" (else no difference)");
    }
  } else if (object.contains("difference")) {
    fail(pointer + "/fake_then", "what the fake does instead (\"difference\" needs it)");
  }
  return step;
}

BrokerSettings parse_broker(const json& object, const std::string& pointer) {
  if (!object.is_object()) fail(pointer, "an object");
  BrokerSettings settings;
  for (const auto& [key, value] : object.items()) {
    if (key != "queue_type" && key != "delivery_limit" && key != "prefetch" &&
        key != "dead_letter" && key != "consumer_timeout_ms") {
      fail(pointer + "/" + key,
           "queue_type, delivery_limit, prefetch, dead_letter or consumer_timeout_ms");
    }
  }
  const std::string type = text(member(object, "queue_type", pointer), pointer + "/queue_type");
  if (type != "quorum" && type != "classic")
    fail(pointer + "/queue_type", "\"quorum\" or \"classic\"");
  settings.quorum = type == "quorum";
  if (object.contains("delivery_limit")) {
    const json& limit = object["delivery_limit"];
    if (!(limit.is_string() && limit == "none")) {
      settings.delivery_limit = integer(limit, pointer + "/delivery_limit", 1, kDeliveryLimitMax);
    }
  } else if (settings.quorum) {
    fail(pointer + "/delivery_limit", "an integer, or \"none\" for a quorum queue without one");
  }
  if (!settings.quorum && settings.delivery_limit) {
    fail(pointer + "/delivery_limit", "no delivery limit on a classic queue");
  }
  settings.prefetch =
      integer(member(object, "prefetch", pointer), pointer + "/prefetch", 1, kPrefetchMax);
  if (object.contains("dead_letter")) {
    const json& dead_letter = object["dead_letter"];
    if (!dead_letter.is_string() || (dead_letter != "dlx" && dead_letter != "none")) {
      fail(pointer + "/dead_letter", "\"dlx\" or \"none\"");
    }
    settings.dead_letter = dead_letter == "dlx";
  }
  if (object.contains("consumer_timeout_ms")) {
    // The node's own value (broker.sh); nothing else would be compared fairly.
    settings.consumer_timeout_ms = integer(object["consumer_timeout_ms"],
                                           pointer + "/consumer_timeout_ms", 10000, 10000);
  }
  return settings;
}

Script parse_script(const json& document) {
  Script script;
  parse_script_parts(
      document, "broker", kStepsMax, script,
      [&script](const json& settings, const std::string& pointer) {
        script.broker = parse_broker(settings, pointer);
      },
      parse_step);
  return script;
}

}  // namespace

const char* op_name(Op op) {
  for (const auto& [known, name] : kOps) {
    if (known == op) return name;
  }
  return "?";
}

std::string observation_subject(const std::string& observation) {
  return observation.substr(0, observation.find(": "));
}

bool same_observations(const std::vector<std::string>& left,
                       const std::vector<std::string>& right) {
  const auto by_subject = [](std::vector<std::string> list) {
    std::stable_sort(list.begin(), list.end(), [](const std::string& a, const std::string& b) {
      return observation_subject(a) < observation_subject(b);
    });
    return list;
  };
  return by_subject(left) == by_subject(right);
}

std::optional<Script> load_script(const std::string& path, std::string& error) {
  return load_script_file<Script>(path, error, parse_script);
}

}  // namespace inboxsim::conformance
