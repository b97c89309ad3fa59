// The config-key table (domain/config.h): what `inboxsim config` and the bash completion tell a
// user of a key is what config_set accepts and config_to_json writes back.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "domain/config.h"

using namespace inboxsim;

TEST_CASE("config: one row per key, in config_keys order, with the defaults run --json reports",
          "[config]") {
  const std::vector<ConfigKeyInfo> infos = config_key_infos();
  const nlohmann::ordered_json defaults = config_to_json(Config{});
  REQUIRE(infos.size() == config_keys().size());
  REQUIRE(defaults.size() == infos.size());
  std::set<std::string> seen;
  size_t i = 0;
  for (const auto& [key, value] : defaults.items()) {
    CAPTURE(key);
    CHECK(infos[i].name == key);
    CHECK(config_keys()[i] == key);
    CHECK(infos[i].default_value == value);
    CHECK_FALSE(infos[i].summary.empty());
    CHECK(seen.insert(key).second);
    ++i;
  }
}

TEST_CASE("config: every fixed value a key offers is accepted and reads back as given",
          "[config]") {
  size_t offered = 0;
  for (const ConfigKeyInfo& info : config_key_infos()) {
    for (const std::string& choice : info.choices) {
      CAPTURE(info.name, choice);
      Config config;
      REQUIRE(config_set_text(config, info.name, choice).empty());
      const nlohmann::ordered_json back = config_to_json(config)[info.name];
      CHECK((back.is_string() ? back.get<std::string>() : back.dump()) == choice);
      ++offered;
    }
  }
  CHECK(offered >= 30);  // the choice keys' names and the booleans' true and false
}

TEST_CASE("config: a bad value's error says what the key's help says its values are",
          "[config]") {
  for (const ConfigKeyInfo& info : config_key_infos()) {
    CAPTURE(info.name);
    Config config;
    const std::string error = config_set(config, info.name, nlohmann::json::array());
    CHECK_THAT(error, Catch::Matchers::Contains(info.values));
    CHECK(config_to_json(config) == config_to_json(Config{}));
  }
  Config config;
  CHECK_THAT(config_set(config, "broker.flux", 1),
             Catch::Matchers::StartsWith("a known config key: account.inbox, "));
}
