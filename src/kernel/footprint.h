// What an explored event read or changed: its footprint, a sorted list of entries, each a
// resource and how the event used it (its access). Two events commute unless their footprints
// meet: they share a resource and at least one of them wrote it, or they used it in two
// different shared ways. The explorer's sleep sets and its dynamic partial-order reduction
// (fuzz/dpor.h) decide from this alone which orders of two events can differ (docs/model.md,
// "Exploration").
//
// A resource is a class (the high byte) and a payload (56 bits: an index, or a hash of a key).
// An entry is the resource shifted left by two, with its access in the low two bits.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
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
  table_scan = 12,   // a table as a whole: a read with no key queries it, a row change changes it
  table_insert = 13  // where a table's next rowid comes from: inserts and deletes write it
};

// How an event used a resource. A write meets every access. The three others are shared: two
// uses of the same kind commute, two of different kinds meet.
//  - read: looked at it (a process's liveness, a channel);
//  - query: read the rows of a table that hold a value in a column, or the table whole (a keyed
//    SELECT, an INSERT's unique-key check, a scan);
//  - change: changed one row among those (its own row is a write of its rowid), so two changes
//    of two rows that share a value commute, and each meets every query of that value.
enum class Access : uint8_t { write = 0, read = 1, query = 2, change = 3 };

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
  return resource << 2 | static_cast<uint64_t>(access);
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

// Whether two sets of accesses to one resource (bit k: Access k used) meet: one writes, or they
// hold two different shared kinds between them.
constexpr bool accesses_meet(unsigned a, unsigned b) {
  constexpr unsigned kWrite = 1U << static_cast<unsigned>(Access::write);
  if (a == 0 || b == 0) return false;
  if (((a | b) & kWrite) != 0) return true;
  const unsigned both = a | b;
  return (both & (both - 1)) != 0;  // more than one kind
}

// Calls `met(resource)` for each resource two sorted footprints share and use in ways that do
// not commute, until it returns true; returns whether it did.
template <typename Met>
bool for_each_meeting(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b, Met&& met) {
  auto x = a.begin();
  auto y = b.begin();
  while (x != a.end() && y != b.end()) {
    const uint64_t left = *x >> 2;
    const uint64_t right = *y >> 2;
    if (left < right) {
      ++x;
    } else if (right < left) {
      ++y;
    } else {
      unsigned used_a = 0;
      unsigned used_b = 0;
      for (; x != a.end() && *x >> 2 == left; ++x) used_a |= 1U << (*x & 3);
      for (; y != b.end() && *y >> 2 == left; ++y) used_b |= 1U << (*y & 3);
      if (accesses_meet(used_a, used_b) && met(left)) return true;
    }
  }
  return false;
}

// Whether two sorted footprints share a resource they use in ways that do not commute.
inline bool footprints_meet(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  return for_each_meeting(a, b, [](uint64_t) { return true; });
}

// A resource's payload is a hash, so a report cannot say which table a "next rowid" is of. The
// SQL footprint names each table's resources here once per connection it watches, and the
// report of what a search spends its states on reads the names back. Any thread may call these.
namespace detail {
struct ResourceNames {
  std::mutex mutex;
  std::map<uint64_t, std::string> names;
};
inline ResourceNames& resource_names() {
  static ResourceNames table;
  return table;
}
}  // namespace detail

inline void name_resource(uint64_t resource, std::string_view name) {
  detail::ResourceNames& table = detail::resource_names();
  const std::lock_guard<std::mutex> lock(table.mutex);
  table.names.try_emplace(resource, name);
}

// The name given to `resource`, or empty.
inline std::string resource_name(uint64_t resource) {
  detail::ResourceNames& table = detail::resource_names();
  const std::lock_guard<std::mutex> lock(table.mutex);
  const auto found = table.names.find(resource);
  return found == table.names.end() ? std::string() : found->second;
}

// The resources on which two sorted footprints meet (what orders two events), in order.
inline std::vector<uint64_t> meeting_resources(const std::vector<uint64_t>& a,
                                               const std::vector<uint64_t>& b) {
  std::vector<uint64_t> resources;
  for_each_meeting(a, b, [&](uint64_t resource) {
    resources.push_back(resource);
    return false;
  });
  return resources;
}

// The classes of the resources on which two sorted footprints meet (what orders two events).
inline std::vector<ResourceClass> meeting_classes(const std::vector<uint64_t>& a,
                                                  const std::vector<uint64_t>& b) {
  std::vector<ResourceClass> classes;
  for (const uint64_t resource : meeting_resources(a, b)) {
    const auto kind = static_cast<ResourceClass>(resource >> 56);
    if (std::find(classes.begin(), classes.end(), kind) == classes.end()) classes.push_back(kind);
  }
  std::sort(classes.begin(), classes.end());
  return classes;
}

}  // namespace inboxsim
