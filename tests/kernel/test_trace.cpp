// The trace's canonical lines and their hash are the contract's determinism check (docs/contract.md §5):
// trace_hash is FNV-1a 64 over exactly the lines `--trace` writes, so the bytes of a line and
// the bytes hashed must never disagree, escapes included.
#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "kernel/trace.h"

using namespace inboxsim;

namespace {

uint64_t fnv1a_64(std::string_view bytes, uint64_t hash) {
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string hex(uint64_t value) {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

// Events whose text fields carry what JSON must escape at the start, in the middle and at the
// end of a field, next to each other, and not at all.
std::vector<TraceEvent> awkward_events() {
  TraceEvent fault;
  fault.time_ms = 5;
  fault.kind = EventKind::consumer_fault;
  fault.service = "account-service";
  fault.message_id = "m-1";
  fault.account = "\\";
  fault.detail =
      "\"quoted\" a\\b\nline\ttab\r\x01"
      "end\"";
  TraceEvent plain;
  plain.time_ms = 7;
  plain.kind = EventKind::effect;
  plain.service = "account-service";
  plain.transfer = "t1";
  plain.account = "alice";
  plain.amount = -250;
  plain.detail = "debit";
  TraceEvent empty;
  empty.kind = EventKind::step;
  return {fault, plain, empty};
}

}  // namespace

TEST_CASE("an event's canonical line escapes what JSON must, wherever it stands in a field",
          "[trace]") {
  const std::vector<TraceEvent> events = awkward_events();
  CHECK(trace_event_json(events[0]) ==
        R"({"t":5,"kind":"consumer_fault","service":"account-service","message_id":"m-1",)"
        R"("account":"\\","detail":"\"quoted\" a\\b\nline\ttab\r\u0001end\""})");
  CHECK(trace_event_json(events[1]) ==
        R"({"t":7,"kind":"effect","service":"account-service","transfer":"t1",)"
        R"("account":"alice","amount":-250,"detail":"debit"})");
  CHECK(trace_event_json(events[2]) == R"({"t":0,"kind":"step"})");
}

TEST_CASE("trace_hash is FNV-1a 64 of the canonical lines, each ended by a newline", "[trace]") {
  Trace hashed(false);
  Trace unhashed(false, false);
  uint64_t expected = 0xcbf29ce484222325ULL;
  for (const TraceEvent& event : awkward_events()) {
    expected = fnv1a_64(trace_event_json(event) + "\n", expected);
    hashed.record(event);
    unhashed.record(event);
  }
  CHECK(hashed.hash_hex() == hex(expected));
  // A trace nobody reads the hash of (a fuzz run) reports none rather than a wrong one.
  CHECK(unhashed.hash_hex().empty());
}
