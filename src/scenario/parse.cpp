// How a scenario file becomes a Scenario: bytes -> checked text -> JSON -> validated fields.
//
// Validation throws a Failure at the first problem (scenario/parse_internal.h) and the two
// public functions below catch it. Every check reads only the keys it knows, so a hostile file
// cannot make it recurse or loop beyond the size and nesting limits.
#include "scenario/parse.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <string_view>
#include <vector>

#include "domain/participants.h"
#include "domain/topology.h"
#include "kernel/text.h"
#include "scenario/parse_internal.h"
#include "scenario/runner.h"

namespace inboxsim {

namespace {

using namespace scenario_parse;

// ---- Accounts and config ----------------------------------------------------------------------

constexpr std::array<std::string_view, 2> kAccountKeys = {"balance", "closed"};

AccountSpec parse_account(const Node& node) {
  AccountSpec account;
  if (node.value->is_object()) {
    check_keys(node, kAccountKeys, "unknown key");
    if (const Node balance = field(node, "balance"); balance.value != nullptr) {
      account.balance = as_integer(balance, 0, kAmountMax);
    }
    if (const Node closed = field(node, "closed"); closed.value != nullptr) {
      account.closed = as_bool(closed);
    }
    return account;
  }
  if (!node.value->is_number_integer()) {
    expect_failed(node, integer_range(0, kAmountMax) + " or {\"balance\": N, \"closed\": true}");
  }
  account.balance = as_integer(node, 0, kAmountMax);
  return account;
}

std::map<std::string, AccountSpec> parse_accounts(const Node& node) {
  const json& object = as_object(node, "an object of accounts, name -> opening balance");
  if (object.empty()) fail(node.pointer, "expected at least one account (got an empty object)");
  std::map<std::string, AccountSpec> accounts;
  int64_t total = 0;
  for (auto it = object.begin(); it != object.end(); ++it) {
    const Node account{&*it, child_pointer(node.pointer, it.key())};
    if (it.key().empty() || it.key().size() > kNameBytesMax || has_control_characters(it.key())) {
      fail(account.pointer, "expected an account name of 1 to " + std::to_string(kNameBytesMax) +
                                " bytes without control characters (got " + quote_json(it.key()) +
                                ")");
    }
    accounts[it.key()] = parse_account(account);
    // The bank's total must stay a JSON-safe integer too: the invariants add balances up.
    total += accounts[it.key()].balance;
    if (total > kAmountMax) {
      fail(account.pointer, "expected opening balances that add up to at most " +
                                std::to_string(kAmountMax) + " (this one brings the total to " +
                                std::to_string(total) + ")");
    }
  }
  return accounts;
}

Config parse_config(const Node& node) {
  const json& object = as_object(node, "an object of config keys and values");
  Config config;
  const auto& keys = config_keys();
  for (auto it = object.begin(); it != object.end(); ++it) {
    const Node value{&*it, child_pointer(node.pointer, it.key())};
    if (std::find(keys.begin(), keys.end(), it.key()) == keys.end()) {
      fail(value.pointer, "expected one of the keys " + join(keys) + " (unknown key)");
    }
    const std::string expected = config_set(config, it.key(), *it);
    if (!expected.empty()) expect_failed(value, expected);
  }
  return config;
}

// ---- The whole file -----------------------------------------------------------------------------

constexpr std::array<std::string_view, 14> kTopKeys = {
    "name",     "title", "description", "setup",    "watch_for",   "why",  "lesson",
    "seed",     "config", "accounts",   "steps",    "expect",      "schedule", "checkpoints"};

// ---- Checkpoints --------------------------------------------------------------------------------

constexpr std::array<std::string_view, 2> kCheckpointKeys = {"after", "question"};
constexpr std::array<std::string_view, 4> kCheckpointMatchKeys = {"kind", "type", "transfer",
                                                                  "occurrence"};
constexpr size_t kCheckpointsMax = 64;
constexpr size_t kQuestionBytesMax = 1000;

// {"kind": KIND, "type"?, "transfer"?, "occurrence"?}: a checkpoint's "after", a "watch_for"'s
// "event".
EventSelector parse_event_selector(const Node& node, const Context& context) {
  as_object(node, "an object with keys kind, type, transfer, occurrence");
  check_keys(node, kCheckpointMatchKeys, "unknown key");
  std::string kinds;  // every one: join() would cut the list
  for (size_t i = 0; i < kEventKindCount; ++i) {
    kinds += (i > 0 ? ", " : "") + std::string(event_kind_name(static_cast<EventKind>(i)));
  }
  EventSelector selector;
  selector.kind = as_choice(field(node, "kind"), parse_event_kind, kinds);
  if (const Node type = field(node, "type"); type.value != nullptr) {
    selector.match.type =
        as_choice(type, parse_message_type, enum_names(kMessageTypeCount, message_type_name));
  }
  if (const Node transfer = field(node, "transfer"); transfer.value != nullptr) {
    selector.match.transfer = as_declared_transfer(transfer, context);
  }
  if (const Node occurrence = field(node, "occurrence"); occurrence.value != nullptr) {
    selector.match.occurrence = as_integer(occurrence, 1, kOccurrenceMax);
  }
  return selector;
}

// Text a teacher reads out (a question, a part of a description): 1 to `bytes_max` bytes,
// no control characters.
std::string as_class_text(const Node& node, std::string_view what, size_t bytes_max) {
  const std::string& text = as_string(node, std::string(what) + " (a string)");
  if (text.empty() || text.size() > bytes_max || has_control_characters(text)) {
    expect_failed(node, std::string(what) + " of 1 to " + std::to_string(bytes_max) +
                            " bytes without control characters");
  }
  return text;
}

// {"after": {"kind": KIND, "type"?, "transfer"?, "occurrence"?}, "question": TEXT}
Checkpoint parse_checkpoint(const Node& node, const Context& context) {
  as_object(node, "a checkpoint: {\"after\": {\"kind\": ..., \"type\": ..., \"transfer\": "
                  "...}, \"question\": ...}");
  check_keys(node, kCheckpointKeys, "unknown key");
  Checkpoint checkpoint;
  const EventSelector after = parse_event_selector(field(node, "after"), context);
  checkpoint.kind = after.kind;
  checkpoint.match = after.match;
  checkpoint.question =
      as_class_text(field(node, "question"), "the question to put to the class", kQuestionBytesMax);
  return checkpoint;
}

std::vector<Checkpoint> parse_checkpoints(const Node& node, const Context& context) {
  if (!node.value->is_array()) expect_failed(node, "an array of checkpoints");
  if (node.value->size() > kCheckpointsMax) {
    expect_failed(node, "at most " + std::to_string(kCheckpointsMax) + " checkpoints");
  }
  std::vector<Checkpoint> checkpoints;
  for (size_t i = 0; i < node.value->size(); ++i) {
    checkpoints.push_back(
        parse_checkpoint(Node{&(*node.value)[i], child_pointer(node.pointer, i)}, context));
  }
  return checkpoints;
}

// ---- A description in three parts ----------------------------------------------------------

constexpr std::array<std::string_view, 2> kWatchForKeys = {"event", "text"};
constexpr size_t kDescriptionPartBytesMax = 1000;  // a part is read out: a few sentences at most

// "setup": TEXT, "watch_for": {"event": SELECTOR, "text": TEXT}, "why": TEXT: all three or none,
// and not beside "description".
DescriptionParts parse_description_parts(const Node& root, const Context& context) {
  const Node setup = field(root, "setup");
  const Node watch_for = field(root, "watch_for");
  const Node why = field(root, "why");
  DescriptionParts parts;
  if (setup.value == nullptr && watch_for.value == nullptr && why.value == nullptr) return parts;
  if (const Node description = field(root, "description"); description.value != nullptr) {
    expect_failed(description, "either description or setup, watch_for and why, not both");
  }
  for (const Node* part : {&setup, &watch_for, &why}) {
    if (part->value == nullptr) {
      expect_failed(*part, "setup, watch_for and why together (this file has some of them)");
    }
  }
  parts.setup = as_class_text(setup, "what the story sets up", kDescriptionPartBytesMax);
  as_object(watch_for, "{\"event\": {\"kind\": ..., \"type\": ..., \"transfer\": ..., "
                       "\"occurrence\": ...}, \"text\": ...}");
  check_keys(watch_for, kWatchForKeys, "unknown key");
  parts.watch_for_event = parse_event_selector(field(watch_for, "event"), context);
  parts.watch_for =
      as_class_text(field(watch_for, "text"), "what to watch for", kDescriptionPartBytesMax);
  parts.why = as_class_text(why, "why it turns out so", kDescriptionPartBytesMax);
  return parts;
}

constexpr std::array<std::string_view, 7> kScheduleKeys = {
    "faults", "fault_kinds", "choices", "ack_wait_expiries", "stepwise", "clock", "actions"};
constexpr int64_t kScheduleFaultsMax = 16;
constexpr int64_t kScheduleAckWaitExpiriesMax = 16;  // as faults: each multiplies the orders
constexpr int64_t kChoiceMax = 65535;

// A hand action of the playground: {"at": N, one of publish, drop_index, restore_index,
// redrive, advance}.
Schedule::Action parse_action(const Node& node, Context& context, size_t choices) {
  const std::string expected =
      "a hand action: {\"at\": N, and one of publish, drop_index, restore_index, redrive, "
      "advance}";
  const json& object = as_object(node, expected);
  Schedule::Action action;
  action.at = static_cast<size_t>(as_integer(field(node, "at"), 0, static_cast<int64_t>(choices)));
  json rest = object;
  rest.erase("at");
  if (rest.size() != 1) fail(node.pointer, "expected " + expected);
  const std::string key = rest.begin().key();
  if (key != "publish" && key != "drop_index" && key != "restore_index" && key != "redrive" &&
      key != "advance") {
    fail(child_pointer(node.pointer, key),
         "expected one of publish, drop_index, restore_index, redrive, advance (got " +
             quote_json(key) + ")");
  }
  action.step = parse_step(Node{&rest, node.pointer}, context);
  return action;
}

// An explored order (docs/contract.md §8.3): {"faults": K, "fault_kinds": [...], "choices": [...]}, and
// the playground's "stepwise", "clock" and "actions" (§9.1).
Schedule parse_schedule(const Node& node, Context& context) {
  as_object(node, "a schedule: an object with \"faults\", \"fault_kinds\" and \"choices\"");
  check_keys(node, kScheduleKeys, "unknown key");
  Schedule schedule;
  if (const Node faults = field(node, "faults"); faults.value != nullptr) {
    schedule.faults = as_integer(faults, 0, kScheduleFaultsMax);
  }
  if (const Node expiries = field(node, "ack_wait_expiries"); expiries.value != nullptr) {
    schedule.ack_wait_expiries = as_integer(expiries, 0, kScheduleAckWaitExpiriesMax);
  }
  const std::string kinds = fault_kinds_text(explorable_fault_kinds());
  if (const Node list = field(node, "fault_kinds"); list.value != nullptr) {
    if (!list.value->is_array()) expect_failed(list, "an array of fault kinds (" + kinds + ")");
    for (size_t i = 0; i < list.value->size(); ++i) {
      const Node item{&(*list.value)[i], child_pointer(list.pointer, i)};
      const FaultKind kind = as_choice(item, parse_fault_kind, kinds);
      if (!explorable_fault_kind(kind)) expect_failed(item, "one of " + kinds);
      schedule.fault_kinds[static_cast<size_t>(kind)] = true;
    }
  }
  const Node choices = field(node, "choices");
  if (choices.value == nullptr || !choices.value->is_array()) {
    expect_failed(choices, "an array of choices (integers from 0 to " +
                               std::to_string(kChoiceMax) + ")");
  }
  schedule.choices.reserve(choices.value->size());
  for (size_t i = 0; i < choices.value->size(); ++i) {
    const Node item{&(*choices.value)[i], child_pointer(choices.pointer, i)};
    schedule.choices.push_back(static_cast<uint32_t>(as_integer(item, 0, kChoiceMax)));
  }
  const auto count = static_cast<int64_t>(schedule.choices.size());
  if (const Node stepwise = field(node, "stepwise"); stepwise.value != nullptr) {
    schedule.stepwise = static_cast<size_t>(as_integer(stepwise, 0, count));
  }
  if (const Node clock = field(node, "clock"); clock.value != nullptr) {
    schedule.clocked = as_bool(clock);
  }
  if (const Node actions = field(node, "actions"); actions.value != nullptr) {
    if (!actions.value->is_array()) expect_failed(actions, "an array of hand actions");
    for (size_t i = 0; i < actions.value->size(); ++i) {
      const Node item{&(*actions.value)[i], child_pointer(actions.pointer, i)};
      schedule.actions.push_back(parse_action(item, context, schedule.choices.size()));
      if (schedule.actions.size() > 1 && schedule.actions.back().at < schedule.actions[i - 1].at) {
        fail(child_pointer(item.pointer, "at"),
             "expected the actions in the order they are taken (at no less than " +
                 std::to_string(schedule.actions[i - 1].at) + ")");
      }
    }
  }
  return schedule;
}

std::string optional_string(const Node& object, std::string_view key, std::string fallback) {
  const Node node = field(object, key);
  if (node.value == nullptr) return fallback;
  return as_string(node, "a string");
}

Scenario parse_root(const json& root, const std::string& file_label) {
  const Node node{&root, ""};
  if (!root.is_object()) {
    fail("", "expected a JSON object at the top level (" + describe(&root) + ")");
  }
  check_keys(node, kTopKeys, "unknown key");
  Scenario scenario;
  scenario.file = file_label;
  scenario.name = std::filesystem::path(file_label).stem().string();
  if (const Node name = field(node, "name"); name.value != nullptr) {
    scenario.name =
        as_name(name, "a scenario name of 1 to " + std::to_string(kNameBytesMax) + " bytes");
  }
  scenario.title = optional_string(node, "title", "");
  scenario.description = optional_string(node, "description", "");
  scenario.lesson = optional_string(node, "lesson", "");
  if (const Node seed = field(node, "seed"); seed.value != nullptr) {
    scenario.seed = static_cast<uint64_t>(as_integer(seed, 0, kAmountMax));
  }
  if (const Node config = field(node, "config"); config.value != nullptr) {
    scenario.config = parse_config(config);
  }
  Context context;
  context.config = scenario.config;
  context.accounts = parse_accounts(field(node, "accounts"));
  const Node steps = field(node, "steps");
  context.declared_transfers = declared_transfer_ids(steps, context);
  if (steps.value != nullptr) scenario.steps = parse_steps(steps, context);
  if (const Node expect = field(node, "expect"); expect.value != nullptr) {
    scenario.expect = parse_expect(expect, context);
  }
  if (const Node schedule = field(node, "schedule"); schedule.value != nullptr) {
    scenario.schedule = parse_schedule(schedule, context);
    if (const std::optional<Refusal> refusal = clockless_refusal(scenario);
        refusal && !scenario.schedule->clocked) {
      fail(refusal->pointer, "expected " + refusal->expected +
                                 " (this file has a schedule without \"clock\": true)");
    }
  }
  if (const Node checkpoints = field(node, "checkpoints"); checkpoints.value != nullptr) {
    scenario.checkpoints = parse_checkpoints(checkpoints, context);
  }
  if (const std::optional<Refusal> refusal = broker_refusal(scenario)) {
    fail(refusal->pointer, "expected " + refusal->expected);
  }
  scenario.description_parts = parse_description_parts(node, context);
  scenario.accounts = std::move(context.accounts);
  return scenario;
}

// ---- Bytes to JSON ------------------------------------------------------------------------------

std::string position_text(std::string_view text, size_t offset) {
  const size_t end = std::min(offset, text.size());
  const auto line = std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(end), '\n');
  const size_t line_start = text.rfind('\n', end == 0 ? 0 : end - 1);
  const size_t column =
      line_start == std::string_view::npos || end == 0 ? end + 1 : end - line_start;
  return "line " + std::to_string(line + 1) + ", column " + std::to_string(column);
}

// Returns the offset of the first byte that does not begin a well-formed UTF-8 sequence (no
// overlong forms, no surrogates, nothing above U+10FFFF), or npos.
size_t invalid_utf8_offset(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<uint32_t>(static_cast<unsigned char>(text[i]));
    if (lead < 0x80U) {
      ++i;
      continue;
    }
    size_t length = 0;
    uint32_t code = 0;
    uint32_t code_min = 0;
    if ((lead & 0xE0U) == 0xC0U) {
      length = 2, code = lead & 0x1FU, code_min = 0x80U;
    } else if ((lead & 0xF0U) == 0xE0U) {
      length = 3, code = lead & 0x0FU, code_min = 0x800U;
    } else if ((lead & 0xF8U) == 0xF0U) {
      length = 4, code = lead & 0x07U, code_min = 0x10000U;
    } else {
      return i;
    }
    if (i + length > text.size()) return i;
    for (size_t k = 1; k < length; ++k) {
      const auto next = static_cast<uint32_t>(static_cast<unsigned char>(text[i + k]));
      if ((next & 0xC0U) != 0x80U) return i;
      code = (code << 6U) | (next & 0x3FU);
    }
    if (code < code_min || code > 0x10FFFFU || (code >= 0xD800U && code <= 0xDFFFU)) return i;
    i += length;
  }
  return std::string_view::npos;
}

}  // namespace

size_t too_deep_offset(std::string_view text) {
  size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kNestingDepthMax) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

namespace {

// Rejects, before any JSON parsing, what the parser should never see.
void check_text(std::string_view text) {
  if (text.size() > kFileBytesMax) {
    fail("", "larger than " + std::to_string(kFileBytesMax / (1024 * 1024)) + " MiB");
  }
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) fail("", "empty file");
  // A JSON text never holds a raw NUL; nlohmann's lexer would stop at one and ignore the rest.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    fail("", "not valid JSON: a NUL byte at " + position_text(text, nul));
  }
  if (const size_t bad = invalid_utf8_offset(text); bad != std::string_view::npos) {
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X",
                  static_cast<unsigned>(static_cast<unsigned char>(text[bad])));
    fail("", "not valid UTF-8: byte " + std::string(byte) + " at " + position_text(text, bad));
  }
  if (const size_t deep = too_deep_offset(text); deep != std::string_view::npos) {
    fail("", "nested deeper than " + std::to_string(kNestingDepthMax) + " levels at " +
                 position_text(text, deep));
  }
}

// Replaces control characters, so that a message stays on one line.
std::string printable(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20U || c == 0x7F) c = ' ';
  }
  return text;
}

std::string json_error_text(const json::exception& error) {
  std::string text = error.what();
  // nlohmann prefixes "[json.exception.parse_error.101] parse error at "; only the rest is news.
  if (const size_t end = text.find("] "); end != std::string::npos) text.erase(0, end + 2);
  constexpr std::string_view kPrefix = "parse error at ";
  if (text.starts_with(kPrefix)) text.erase(0, kPrefix.size());
  return "not valid JSON: " + printable(text);
}

// A SAX pass that finds a key appearing twice in one object: nlohmann keeps the last value
// silently, which would hide a typo like a second "amount". It runs before the real parse, in
// time linear in the text; nlohmann's callback parser, which did this before, rescans the parent
// container after every object and made a large file quadratic.
class DuplicateKeyFinder : public nlohmann::json_sax<json> {
 public:
  bool null() override { return element_done(); }
  bool boolean(bool /*value*/) override { return element_done(); }
  bool number_integer(number_integer_t /*value*/) override { return element_done(); }
  bool number_unsigned(number_unsigned_t /*value*/) override { return element_done(); }
  bool number_float(number_float_t /*value*/, const string_t& /*text*/) override {
    return element_done();
  }
  bool string(string_t& /*value*/) override { return element_done(); }
  bool binary(binary_t& /*value*/) override { return element_done(); }
  bool start_object(std::size_t /*size*/) override { return push_frame(/*is_object=*/true); }
  bool start_array(std::size_t /*size*/) override { return push_frame(/*is_object=*/false); }
  bool end_object() override { return pop_frame(); }
  bool end_array() override { return pop_frame(); }
  bool key(string_t& key) override {
    Frame& frame = frames_.back();
    frame.key = key;
    if (!frame.keys.insert(key).second && !duplicate_pointer_) {
      std::string pointer;
      for (const Frame& outer : frames_) {
        pointer = outer.is_object ? child_pointer(pointer, outer.key)
                                  : child_pointer(pointer, outer.index);
      }
      duplicate_pointer_ = pointer;
    }
    return true;
  }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& /*error*/) override {
    return false;  // the real parse reports syntax errors, with its message
  }

  const std::optional<std::string>& duplicate_pointer() const { return duplicate_pointer_; }

 private:
  struct Frame {
    bool is_object = false;
    size_t index = 0;  // arrays: the index of the element being parsed
    std::string key;   // objects: the key being parsed
    std::set<std::string> keys;
  };

  bool push_frame(bool is_object) {
    frames_.emplace_back();
    frames_.back().is_object = is_object;
    return true;
  }
  bool pop_frame() {
    frames_.pop_back();
    return element_done();
  }
  bool element_done() {
    if (!frames_.empty() && !frames_.back().is_object) ++frames_.back().index;
    return true;
  }

  std::vector<Frame> frames_;
  std::optional<std::string> duplicate_pointer_;
};

json parse_json(const std::string& text) {
  check_text(text);
  json root;
  try {
    root = json::parse(text, /*callback=*/nullptr, /*allow_exceptions=*/true,
                       /*ignore_comments=*/false);
  } catch (const json::exception& error) {
    fail("", json_error_text(error));
  }
  DuplicateKeyFinder finder;
  json::sax_parse(text, &finder);
  if (finder.duplicate_pointer()) {
    fail(*finder.duplicate_pointer(), "expected each key at most once in an object (got it twice)");
  }
  return root;
}

ParseResult failed(const std::string& file, std::string pointer, std::string expected) {
  return ParseResult{std::nullopt, InputError{file, std::move(pointer), std::move(expected)}};
}

}  // namespace

std::string json_pointer_token(std::string_view key) {
  std::string token;
  token.reserve(key.size());
  for (const char c : key) {
    if (c == '~') {
      token += "~0";
    } else if (c == '/') {
      token += "~1";
    } else {
      token += c;
    }
  }
  return token;
}

std::string InputError::message() const {
  std::string line = file + ": ";
  if (!pointer.empty()) line += pointer + ": ";
  return printable(line + expected);
}

ParseResult parse_scenario_text(const std::string& text, const std::string& file_label) {
  try {
    const json root = parse_json(text);
    return ParseResult{parse_root(root, file_label), std::nullopt};
  } catch (const Failure& failure) {
    return failed(file_label, failure.pointer, failure.expected);
  }
}

ParseResult parse_scenario_file(const std::string& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (status.type() == std::filesystem::file_type::not_found) {
    return failed(path, "", "cannot read: no such file");
  }
  if (error) return failed(path, "", "cannot read: " + error.message());
  if (std::filesystem::is_directory(status)) return failed(path, "", "is a directory");
  if (!std::filesystem::is_regular_file(status)) return failed(path, "", "not a regular file");
  const auto size_bytes = std::filesystem::file_size(path, error);
  if (error) return failed(path, "", "cannot read: " + error.message());
  if (size_bytes > kFileBytesMax) {
    return failed(path, "",
                  "larger than " + std::to_string(kFileBytesMax / (1024 * 1024)) + " MiB");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return failed(path, "", "cannot read: cannot open the file");
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) return failed(path, "", "cannot read: I/O error");
  return parse_scenario_text(text, path);
}

}  // namespace inboxsim
