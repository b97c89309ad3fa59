// JetStream script parsing: every key is checked (a typo must not drop a check silently), and
// each message names the file and the JSON pointer of the problem, as script.cpp does.
#include "jetstream_script.h"

#include <array>
#include <nlohmann/json.hpp>
#include <set>

#include "script.h"
#include "script_json.h"

namespace inboxsim::conformance {

namespace {

using json = nlohmann::json;

constexpr size_t kStepsMax = 500;
// Real time on the live broker: a script's waits stay short so the suite stays fast.
constexpr int64_t kWaitMsMax = 10'000;
constexpr int64_t kAckWaitMsMax = 10'000;
constexpr int64_t kDuplicatesMsMax = 60'000;
constexpr int64_t kMaxDeliverMax = 100;
constexpr int64_t kMaxAckPendingMax = 1'000;
constexpr int64_t kBatchMax = 100;

constexpr std::array<std::pair<JsOp, const char*>, 12> kOps = {{
    {JsOp::stream, "stream"},
    {JsOp::subscribe, "subscribe"},
    {JsOp::publish, "publish"},
    {JsOp::fetch, "fetch"},
    {JsOp::ack, "ack"},
    {JsOp::nak, "nak"},
    {JsOp::term, "term"},
    {JsOp::in_progress, "in_progress"},
    {JsOp::wait, "wait_ms"},
    {JsOp::info, "info"},
    {JsOp::kill, "kill"},
    {JsOp::reconnect, "reconnect"},
}};

std::set<std::string> keys_of(JsOp op) {
  switch (op) {
    case JsOp::stream: return {"subjects"};
    case JsOp::subscribe: return {"consumer"};
    case JsOp::publish: return {"subject"};
    case JsOp::fetch: return {"batch"};
    case JsOp::nak: return {"message", "seq", "delay_ms"};
    case JsOp::ack:
    case JsOp::term:
    case JsOp::in_progress: return {"message", "seq"};
    case JsOp::wait:
    case JsOp::info:
    case JsOp::kill:
    case JsOp::reconnect: return {};
  }
  return {};
}

void parse_operands(const json& object, const std::string& pointer, JsStep& step) {
  const auto has = [&](const char* key) { return object.contains(key); };
  switch (step.op) {
    case JsOp::stream:
      step.subjects = texts(member(object, "subjects", pointer), pointer + "/subjects");
      if (step.subjects.empty()) fail(pointer + "/subjects", "at least one subject");
      return;
    case JsOp::subscribe:
      step.stream = text(member(object, "consumer", pointer), pointer + "/consumer");
      return;
    case JsOp::publish:
      step.nats_subject = text(member(object, "subject", pointer), pointer + "/subject");
      return;
    case JsOp::fetch:
      if (has("batch")) step.batch = integer(object["batch"], pointer + "/batch", 1, kBatchMax);
      return;
    case JsOp::nak:
      if (has("delay_ms"))
        step.delay_ms = integer(object["delay_ms"], pointer + "/delay_ms", 1, kWaitMsMax);
      [[fallthrough]];
    case JsOp::ack:
    case JsOp::term:
    case JsOp::in_progress:
      step.message = text(member(object, "message", pointer), pointer + "/message");
      if (has("seq")) {
        step.sequence =
            static_cast<uint64_t>(integer(object["seq"], pointer + "/seq", 1, 1'000'000));
      }
      return;
    case JsOp::wait:
    case JsOp::info:
    case JsOp::kill:
    case JsOp::reconnect: return;
  }
}

JsStep parse_step(const json& object, const std::string& pointer) {
  if (!object.is_object()) fail(pointer, "an object with one operation");
  JsStep step;
  step.pointer = pointer;
  int operations = 0;
  for (const auto& [op, name] : kOps) {
    if (!object.contains(name)) continue;
    ++operations;
    step.op = op;
    if (op == JsOp::wait) {
      step.wait_ms = integer(object[name], pointer + "/" + name, 1, kWaitMsMax);
    } else {
      step.subject = text(object[name], pointer + "/" + name);
    }
  }
  if (operations != 1) fail(pointer, "exactly one operation (stream, subscribe, publish, ...)");
  std::set<std::string> allowed = keys_of(step.op);
  allowed.insert({js_op_name(step.op), "then", "fake_then", "difference", "note"});
  for (const auto& [key, value] : object.items()) {
    if (allowed.count(key) == 0)
      fail(pointer + "/" + key, std::string("no such key for ") + js_op_name(step.op));
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

JsSettings parse_settings(const json& object, const std::string& pointer) {
  if (!object.is_object()) fail(pointer, "an object");
  JsSettings settings;
  for (const auto& [key, value] : object.items()) {
    const std::string at = pointer + "/" + key;
    if (key == "ack_wait_ms") {
      settings.ack_wait_ms = integer(value, at, 100, kAckWaitMsMax);
    } else if (key == "max_deliver") {
      settings.max_deliver = integer(value, at, -1, kMaxDeliverMax);
      if (settings.max_deliver == 0) fail(at, "-1 (unlimited) or a limit from 1");
    } else if (key == "max_ack_pending") {
      settings.max_ack_pending = integer(value, at, 1, kMaxAckPendingMax);
    } else if (key == "duplicates_ms") {
      settings.duplicates_ms = integer(value, at, 100, kDuplicatesMsMax);
    } else {
      fail(at, "ack_wait_ms, max_deliver, max_ack_pending or duplicates_ms");
    }
  }
  return settings;
}

JsScript parse_script(const json& document) {
  JsScript script;
  parse_script_parts(
      document, "jetstream", kStepsMax, script,
      [&script](const json& settings, const std::string& pointer) {
        script.settings = parse_settings(settings, pointer);
      },
      parse_step);
  return script;
}

}  // namespace

const char* js_op_name(JsOp op) {
  for (const auto& [known, name] : kOps) {
    if (known == op) return name;
  }
  return "?";
}

std::optional<JsScript> load_jetstream_script(const std::string& path, std::string& error) {
  return load_script_file<JsScript>(path, error, parse_script);
}

}  // namespace inboxsim::conformance
