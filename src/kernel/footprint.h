// What an explored event read or changed: its footprint, a sorted list of entries, each a
// resource and whether the event only read it. Two events commute unless their footprints meet:
// they share a resource and at least one of the two changed it (a read and a read commute).
// The explorer's sleep sets and its dynamic partial-order reduction (fuzz/dpor.h) decide from
// this alone which orders of two events can differ (docs/model.md, "Exploration").
//
// A resource is a class (the high byte) and a payload (56 bits: an index, or a hash of a key).
// An entry is the resource shifted left by one, with the low bit set for a read: a resource's
// write sorts just before its read, which footprints_meet relies on.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "kernel/fingerprint.h"

namespace inboxsim {

enum class ResourceClass : uint8_t {
  instance = 1,      // a process's liveness, incarnation and pause (written by crash, restart)
  database = 2,      // a whole service database (when its rows are not told apart)
  publication = 3,   // a message id's publication record
  fault_book = 4,    // the armed faults
  queue = 5,         // a broker queue's contents
  mint = 6,          // the message-id counter
  channels = 7,      // a broker consumer's channel (open, closed, its number)
  loop = 8,          // one of an instance's loops (relay, outbox sweep, durability agent)
  row_lock = 9,      // a row lock of a service, by key
  seen_key = 10,     // a key of a service's external seen-set
  row_key = 11,      // the rows of a table holding one value in one column
  table_scan = 12,   // a table as a whole: a read with no key writes it, every row change reads it
  table_insert = 13  // where a table's next rowid comes from: inserts and deletes write it
};

enum class Access : uint8_t { write = 0, read = 1 };

// What a broker's event touched, by bits (index modulo 64): the queues whose contents or
// consumers it changed, and the consumers' channels it only read or changed (open or closed).
struct BrokerTouches {
  uint64_t queues = 0;
  uint64_t channels_read = 0;
  uint64_t channels_written = 0;
};

constexpr uint64_t kResourcePayloadMask = (uint64_t{1} << 56) - 1;

constexpr uint64_t resource_id(ResourceClass kind, uint64_t payload) {
  return uint64_t{static_cast<uint8_t>(kind)} << 56 | (payload & kResourcePayloadMask);
}

// A resource named by words (a table and a key, a lock key): a 56-bit hash of them. Two names
// that share a hash only make two events look dependent, which costs orders, never soundness.
inline uint64_t resource_of(ResourceClass kind, uint64_t scope, std::string_view name,
                            std::string_view key = {}) {
  return resource_id(kind, Hasher().add(scope).add(name).add(key).finish().low);
}

constexpr uint64_t footprint_entry(uint64_t resource, Access access) {
  return resource << 1 | static_cast<uint64_t>(access);
}

constexpr std::string_view resource_class_name(ResourceClass kind) {
  switch (kind) {
    case ResourceClass::instance: return "process";
    case ResourceClass::database: return "database";
    case ResourceClass::publication: return "publication";
    case ResourceClass::fault_book: return "faults";
    case ResourceClass::queue: return "queue";
    case ResourceClass::mint: return "message id counter";
    case ResourceClass::channels: return "channel";
    case ResourceClass::loop: return "loop";
    case ResourceClass::row_lock: return "row lock";
    case ResourceClass::seen_key: return "seen-set key";
    case ResourceClass::row_key: return "row";
    case ResourceClass::table_scan: return "table";
    case ResourceClass::table_insert: return "next rowid";
  }
  return "?";
}

// Calls `met(entry)` for each resource two sorted footprints share and at least one of them
// changed, until it returns true; returns whether it did.
template <typename Met>
bool for_each_meeting(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b, Met&& met) {
  auto x = a.begin();
  auto y = b.begin();
  while (x != a.end() && y != b.end()) {
    const uint64_t left = *x >> 1;
    const uint64_t right = *y >> 1;
    if (left == right) {
      // A write sorts first: two reads here mean neither footprint writes the resource.
      if ((*x & *y & 1) == 0 && met(left)) return true;
      ++x;
      ++y;
    } else if (left < right) {
      ++x;
    } else {
      ++y;
    }
  }
  return false;
}

// Whether two sorted footprints share a resource that at least one of them changed.
inline bool footprints_meet(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  return for_each_meeting(a, b, [](uint64_t) { return true; });
}

// The classes of the resources on which two sorted footprints meet (what orders two events).
inline std::vector<ResourceClass> meeting_classes(const std::vector<uint64_t>& a,
                                                  const std::vector<uint64_t>& b) {
  std::vector<ResourceClass> classes;
  for_each_meeting(a, b, [&](uint64_t resource) {
    const auto kind = static_cast<ResourceClass>(resource >> 56);
    if (std::find(classes.begin(), classes.end(), kind) == classes.end()) classes.push_back(kind);
    return false;
  });
  std::sort(classes.begin(), classes.end());
  return classes;
}

}  // namespace inboxsim
