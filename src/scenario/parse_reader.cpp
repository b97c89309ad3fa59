// The parser's reader: typed values out of JSON, each failure naming the JSON pointer of the
// value and what was expected there (scenario/parse_internal.h).
#include <algorithm>

#include "kernel/text.h"
#include "scenario/parse.h"
#include "scenario/parse_internal.h"

namespace inboxsim::scenario_parse {

[[noreturn]] void fail(std::string pointer, std::string expected) {
  throw Failure{std::move(pointer), std::move(expected)};
}

std::string child_pointer(const std::string& pointer, std::string_view key) {
  return pointer + "/" + json_pointer_token(key);
}

std::string child_pointer(const std::string& pointer, size_t index) {
  return pointer + "/" + std::to_string(index);
}

Node field(const Node& object, std::string_view key) {
  const auto it = object.value->find(std::string(key));
  if (it == object.value->end()) return Node{nullptr, child_pointer(object.pointer, key)};
  return Node{&*it, child_pointer(object.pointer, key)};
}

std::string shorten(std::string text, size_t bytes_max) {
  if (text.size() <= bytes_max) return text;
  size_t end = bytes_max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0U) == 0x80U) --end;
  return text.substr(0, end) + "...";
}

std::string quote_json(std::string_view text) {
  return shorten(json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace),
                 kGotBytesMax);
}

std::string describe(const json* value) {
  if (value == nullptr) return "missing";
  switch (value->type()) {
    case json::value_t::object: return "got an object";
    case json::value_t::array: return "got an array";
    case json::value_t::null: return "got null";
    case json::value_t::string: return "got " + quote_json(value->get_ref<const std::string&>());
    default: return "got " + shorten(value->dump(), kGotBytesMax);
  }
}

[[noreturn]] void expect_failed(const Node& node, std::string_view expected) {
  fail(node.pointer, "expected " + std::string(expected) + " (" + describe(node.value) + ")");
}

const json& as_object(const Node& node, std::string_view expected) {
  if (node.value == nullptr || !node.value->is_object()) expect_failed(node, expected);
  return *node.value;
}

const std::string& as_string(const Node& node, std::string_view expected) {
  if (node.value == nullptr || !node.value->is_string()) expect_failed(node, expected);
  return node.value->get_ref<const std::string&>();
}

std::string as_name(const Node& node, std::string_view expected) {
  const std::string& text = as_string(node, expected);
  if (text.empty() || text.size() > kNameBytesMax || has_control_characters(text)) {
    expect_failed(node, std::string(expected) + " without control characters");
  }
  return text;
}

bool as_bool(const Node& node) {
  if (node.value == nullptr || !node.value->is_boolean()) expect_failed(node, "true or false");
  return node.value->get<bool>();
}

std::string integer_range(int64_t low, int64_t high) {
  return "an integer from " + std::to_string(low) + " to " + std::to_string(high);
}

int64_t as_integer(const Node& node, int64_t low, int64_t high) {
  const json* value = node.value;
  if (value == nullptr || !value->is_number_integer()) {
    expect_failed(node, integer_range(low, high));
  }
  if (value->is_number_unsigned() && value->get<uint64_t>() > static_cast<uint64_t>(high)) {
    expect_failed(node, integer_range(low, high));
  }
  const auto number = value->get<int64_t>();
  if (number < low || number > high) expect_failed(node, integer_range(low, high));
  return number;
}

void check_keys(const Node& object, std::span<const std::string_view> allowed,
                std::string_view why) {
  for (auto it = object.value->begin(); it != object.value->end(); ++it) {
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end()) {
      // Every key: a key list is the program's own, short, and a cut one would hide the key
      // the user meant.
      std::string keys;
      for (const std::string_view key : allowed)
        keys += (keys.empty() ? "" : ", ") + std::string(key);
      fail(child_pointer(object.pointer, it.key()),
           "expected one of the keys " + keys + " (" + std::string(why) + ")");
    }
  }
}

std::string account_expected(const Context& context) {
  std::vector<std::string_view> names;
  for (const auto& entry : context.accounts) names.push_back(entry.first);
  return "an account named in /accounts: " + join(names);
}

std::string transfer_expected(const Context& context) {
  if (context.declared_transfers.empty()) return "the id of a transfer step (this file has none)";
  return "the id of a transfer step: " + join(context.declared_transfers);
}

}  // namespace inboxsim::scenario_parse
