// libFuzzer target for the scenario parser (docs/hardening.md says how to run it).
//
// Whatever the bytes, parse_scenario_text() must return without crashing, throwing or tripping
// a sanitizer. When they parse, the scenario written back with scenario_to_json() must parse
// again and write back to the same text: the fuzzer's counterexamples rely on that round trip.
// Any failure aborts, which libFuzzer records as a crash input.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "scenario/parse.h"
#include "scenario/write.h"

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_parse: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const inboxsim::ParseResult first = inboxsim::parse_scenario_text(text, "fuzz.json");
  if (first.scenario.has_value() == first.error.has_value()) {
    fail("parse_scenario_text must give exactly one of a scenario and an error", text);
  }
  if (!first.scenario) return 0;

  const std::string written = inboxsim::scenario_to_json(*first.scenario).dump(2);
  const inboxsim::ParseResult second = inboxsim::parse_scenario_text(written, "fuzz.json");
  if (!second.scenario) {
    fail("a written scenario does not parse again",
         written + "\n" + (second.error ? second.error->message() : std::string("(no error)")));
  }
  const std::string rewritten = inboxsim::scenario_to_json(*second.scenario).dump(2);
  if (rewritten != written) {
    fail("the round trip is not stable", "written:\n" + written + "\nrewritten:\n" + rewritten);
  }
  return 0;
}
